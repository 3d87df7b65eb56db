"""Is this process able to do its job: the receiver's /healthz and `tfcompat healthcheck`.

`dependency_checks` asks the shared parts, the broker and the object store, with
least privilege: a Redis PING, and HEAD on a bucket the settings name (S3 allows
it to whoever has `s3:ListBucket` on that one bucket), never a listing of every
bucket.

`healthcheck` is what the container image's HEALTHCHECK runs. One image runs
three commands, so by default it looks at which `tfcompat` command this
container runs (the process table) and probes that: the receiver's own
/healthz on its event listener, and the fleet page's listener when the page is
on (its stylesheet, which needs no sign-in); a Celery ping answered by this very
worker node (its consumer is alive and connected: long tasks do not make it
fail); the bridge's broker and queue.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.model.health import OK
from worker.redact import redact_text
from worker.settings import Settings

ROLES = ("serve", "worker", "sqs-bridge")


def probe_bucket(settings: Settings) -> str | None:
    """The bucket whose HEAD proves the object store answers: the report bucket, else
    the first index bucket; None when the settings name no bucket."""
    if settings.report_bucket:
        return settings.report_bucket
    return settings.index_buckets[0] if settings.index_buckets else None


def _error(exc: BaseException, detail: bool) -> str:
    """ "error: <type>"; with `detail` (a local command, not the public /healthz, which
    must not tell strangers our hosts) the error's own first line too."""
    text = str(exc).splitlines()[0] if detail and str(exc).strip() else ""
    # A vendor's message may quote a URL with its password (a broker, a tracking server).
    return f"error: {type(exc).__name__}" + (f": {redact_text(text)}" if text else "")


def _outcome(check: Callable[[], Any], detail: bool = False) -> str:
    try:
        check()
    except Exception as exc:
        return _error(exc, detail)
    return OK


def ping_redis(url: str, timeout: float = 2) -> None:
    import redis

    redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout).ping()


def ping_broker(settings: Settings, timeout: float = 2) -> None:
    """A round trip to the broker: PING on Redis, a connection opened through kombu on
    the others (with the worker's credentials)."""
    from worker.pipeline.app import broker_kind, create_app

    if broker_kind(settings.broker_url) == "redis":
        ping_redis(settings.broker_url, timeout)
        return
    app = create_app(settings, publish_timeout=timeout)
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, timeout=max(1, round(timeout)))


def dependency_checks(settings: Settings) -> dict[str, str]:
    """{"broker": ..., "object_store": ...}: "ok", "error: <type>", or for the object
    store "skipped: ..." when no bucket is configured (not a failure); "state" too
    when claims and the index live in a Redis other than the broker."""
    from worker.settings import state_redis_url
    from worker.sinks.s3 import s3_client

    result = {"broker": _outcome(lambda: ping_broker(settings))}
    if settings.redis_url and settings.redis_url != settings.broker_url:
        result["state"] = _outcome(lambda: ping_redis(state_redis_url(settings)))
    bucket = probe_bucket(settings)
    if bucket is None:
        result["object_store"] = "skipped: set TFCOMPAT_REPORT_BUCKET or TFCOMPAT_INDEX_BUCKETS"
    else:
        result["object_store"] = _outcome(lambda: s3_client(settings).head_bucket(Bucket=bucket))
    return result


# --- the container healthcheck ----------------------------------------------------------------


@dataclass(frozen=True)
class Running:
    """The tfcompat command a process runs, with its parsed options."""

    role: str
    args: argparse.Namespace


def running_command(argv: Sequence[str], parser: argparse.ArgumentParser) -> Running | None:
    """The tfcompat long-running command in a process's argv, if it is one:
    `tfcompat worker ...`, `python -m worker.cli serve ...`, `/venv/bin/tfcompat sqs-bridge`."""
    args = list(argv)
    for index, part in enumerate(args):
        is_cli = Path(part).name == "tfcompat" or (
            part == "worker.cli" and index > 0 and args[index - 1] == "-m"
        )
        rest = args[index + 1 :]
        if is_cli and rest and rest[0] in ROLES:
            try:
                parsed, _ = parser.parse_known_args(rest)
            except SystemExit:
                return None
            return Running(rest[0], parsed)
    return None


def find_running(parser: argparse.ArgumentParser, proc: Path = Path("/proc")) -> Running | None:
    """The tfcompat command of the oldest process running one (PID 1 in a container)."""
    me = os.getpid()
    pids = sorted(int(p.name) for p in proc.iterdir() if p.name.isdigit() and int(p.name) != me)
    for pid in pids:
        try:
            raw = (proc / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        found = running_command([a.decode(errors="replace") for a in raw.split(b"\0") if a], parser)
        if found is not None:
            return found
    return None


def receiver_url(args: argparse.Namespace) -> str:
    host = getattr(args, "host", "127.0.0.1")
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{host}:{getattr(args, 'port', 8080)}/healthz"


def page_url(settings: Settings, args: argparse.Namespace) -> str:
    """A URL of the fleet page's listener that answers without credentials."""
    host = getattr(args, "ui_host", None) or settings.ui_host
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    port = getattr(args, "ui_port", None) or settings.ui_port
    return f"http://{host}:{port}/ui/static/ui.css"


def check_page(url: str, timeout: float) -> dict[str, str]:
    """{"page": "ok"} when the fleet page's listener answers, or why not."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        return {"page": f"error: {url}: HTTP {exc.code} {exc.reason}".rstrip()}
    except (OSError, ValueError) as exc:
        return {"page": unreachable(url, exc, timeout)}
    return {"page": OK if status == 200 else f"error: {url}: HTTP {status}"}


def unreachable(url: str, exc: BaseException, timeout: float) -> str:
    """Why `url` gave no HTTP answer, in words a person acts on."""
    import socket
    import urllib.error

    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        why = "connection refused (is `tfcompat serve` running with that --host and --port?)"
    elif isinstance(reason, TimeoutError):
        why = f"no answer within {timeout:g}s"
    elif isinstance(reason, socket.gaierror):
        why = f"cannot resolve the host ({reason.strerror})"
    elif isinstance(reason, OSError) and reason.strerror:
        why = reason.strerror
    else:
        why = str(reason).splitlines()[0] if str(reason) else type(reason).__name__
    return f"error: {url}: {why}"


def check_receiver(url: str, timeout: float) -> dict[str, str]:
    """{"receiver": "ok"} or why not: the URL and connection refused, no answer in time, or
    the HTTP status with the receiver's own failing checks beside it."""
    import json
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        try:
            checks = json.loads(exc.read()).get("checks") or {}
        except (ValueError, OSError, AttributeError):
            checks = {}
        return {"receiver": f"error: {url}: HTTP {exc.code} {exc.reason}".rstrip(), **checks}
    except (OSError, ValueError) as exc:  # ValueError: not a URL urllib can fetch
        return {"receiver": unreachable(url, exc, timeout)}
    return {"receiver": OK if status == 200 else f"error: {url}: HTTP {status}"}


def worker_node(hostname: str | None) -> str:
    """The node name Celery gives a worker started with `--hostname` (None: the default)."""
    from celery.utils.nodenames import default_nodename, host_format

    return str(host_format(default_nodename(hostname)))  # type: ignore[arg-type]


def check_worker(settings: Settings, node: str, timeout: float) -> dict[str, str]:
    from worker.pipeline.app import create_app

    try:
        replies = create_app(settings).control.ping(destination=[node], timeout=timeout)
    except Exception as exc:
        return {"broker": _error(exc, detail=True)}
    answered = any(node in reply for reply in replies or [])
    return {"worker": OK if answered else f"error: {node} did not answer a ping in {timeout}s"}


def check_bridge(settings: Settings, queue_url: str | None) -> dict[str, str]:
    from worker.sinks.aws import aws_client

    result = {"broker": _outcome(lambda: ping_broker(settings), detail=True)}
    if not queue_url:
        result["queue"] = "error: no queue (TFCOMPAT_SQS_QUEUE_URL)"
        return result
    sqs = aws_client("sqs", settings)
    result["queue"] = _outcome(
        lambda: sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"]),
        detail=True,
    )
    return result


def healthcheck(
    settings: Settings,
    running: Running,
    *,
    url: str | None = None,
    node: str | None = None,
    timeout: float = 10.0,
) -> dict[str, str]:
    """The checks for the command `running` runs; every value "ok" means healthy."""
    if running.role == "serve":
        checks = check_receiver(url or receiver_url(running.args), timeout)
        if settings.ui_enabled:
            checks.update(check_page(page_url(settings, running.args), timeout))
        return checks
    if running.role == "worker":
        return check_worker(
            settings, node or worker_node(getattr(running.args, "hostname", None)), timeout
        )
    queue_url = getattr(running.args, "queue_url", None) or settings.sqs_queue_url
    return check_bridge(settings, queue_url)
