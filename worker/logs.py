"""structlog configuration: one stream of JSON lines (or console lines), context bound
per task, and the standard library's records (Celery, botocore, uvicorn) rendered by the
same processors, so a log reader meets one format.

`tfcompat` commands log only warnings, as plain `level: event key=value` lines.
`import structlog` imports `structlog.dev`, which imports `rich` when it is installed
(a third of a second, paid by CI on every `tfcompat check`) only to draw tracebacks
for the console renderer; `quiet_start()` keeps it out of a command's process.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, Literal

Format = Literal["json", "console", "plain"]


def _plain(logger: Any, method: str, event: dict[str, Any]) -> str:
    """`warning: event key=value ...`, for a command's stderr."""
    level = event.pop("level", method)
    text = str(event.pop("event", ""))
    event.pop("timestamp", None)
    extras = " ".join(f"{key}={value}" for key, value in event.items())
    return f"{level}: {text} {extras}".rstrip()


def redact_userinfo(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """The backstop for credentials in URIs: `user:password@` in any logged string
    (an event's values, a rendered exception) is masked before it is written. Adapters
    strip userinfo themselves; this catches what a vendor's message carries."""
    from worker.redact import redact_value

    return {key: redact_value(value) for key, value in event.items()}


def _renderer(fmt: Format) -> Any:
    from structlog import dev, processors

    if fmt == "json":
        return processors.JSONRenderer()
    if fmt == "console":
        return dev.ConsoleRenderer()
    return _plain


def quiet_start() -> None:
    """Before structlog's first import in a short-lived command: no `rich` for
    `structlog.dev` to find (it then draws plain tracebacks, as without `rich`)."""
    if "structlog" not in sys.modules:
        sys.modules.setdefault("rich", None)  # type: ignore[arg-type]


def configure_logging(level: str = "INFO", fmt: Format = "json") -> None:
    """Route structlog and the standard library's logging to stderr in one format."""
    import structlog

    number = logging.getLevelName(level.upper())
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    renderer = _renderer(fmt)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            structlog.processors.format_exc_info,
            redact_userinfo,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        # One write() per line: print() writes the line and its newline separately, and
        # with PYTHONUNBUFFERED (the image, the demo) the prefork children's lines then
        # interleave in the shared stderr ("{a}{b}\n\n").
        logger_factory=structlog.WriteLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
    # StreamHandler writes each record and its newline in one write() as well.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                stamp,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                redact_userinfo,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(number)
