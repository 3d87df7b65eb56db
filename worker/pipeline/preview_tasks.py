"""The fleet page's preview as bounded work: a Celery task that assesses the change (or,
for a job of kind "plan", computes `tfcompat fleet plan`) in a child process with a
memory limit and a time limit, and keeps the result in Redis.

The receiver only enqueues (`preview_enqueuer`) and reads the result: a whole-fleet
assessment (about 0.4 ms of CPU a model, with the garbage collector paused) never
runs in the process that answers GitHub and MLflow. The child (`python -m
worker.cli.preview_run`) gets `RLIMIT_AS` of `TFCOMPAT_UI_PREVIEW_MEMORY_MB` and is
killed after `TFCOMPAT_UI_PREVIEW_TIME_LIMIT` seconds; the task itself carries a soft
time limit a little above that. Either way the preview is recorded "failed" with its
cause, and the worker process carries on. A preview is never retried: a person
waits for it and can ask again.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import orjson
import structlog
from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from worker.pipeline.app import TASK_FLEET_PREVIEW, settings_of
from worker.settings import Settings, state_redis_url
from worker.sinks.previews import PreviewStore

log = structlog.get_logger(__name__)
GRACE = 30  # seconds the task's soft limit leaves above the child's
# What a child over RLIMIT_AS writes: Python's own MemoryError, an OSError of ENOMEM, or,
# when the limit is met while a module's shared library is mapped at import, the dynamic
# loader's "failed to map segment from shared object" (an ImportError)
OUT_OF_MEMORY = ("MemoryError", "Cannot allocate memory", "failed to map segment")
RUNNER = "worker.cli.preview_run"


def preview_store(settings: Settings) -> PreviewStore:
    import redis

    client = redis.Redis.from_url(state_redis_url(settings), socket_timeout=10)
    return PreviewStore(client, settings.ui_preview_ttl)


def _limit_memory(megabytes: int) -> Callable[[], None]:
    def limit() -> None:
        size = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return limit


def run_bounded(settings: Settings, change: dict[str, Any]) -> dict[str, Any]:
    """The preview's result; RuntimeError saying why there is none."""
    limit = settings.ui_preview_time_limit
    command = "plan" if change.get("kind") == "plan" else "impact"
    try:
        done = subprocess.run(
            [sys.executable, "-m", RUNNER],
            input=orjson.dumps(change),
            capture_output=True,
            timeout=limit,
            preexec_fn=_limit_memory(settings.ui_preview_memory_mb),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"stopped after {limit} s (TFCOMPAT_UI_PREVIEW_TIME_LIMIT); "
            f"`tfcompat fleet {command}` runs it without a limit"
        ) from None
    try:
        answer = orjson.loads(done.stdout) if done.stdout else {}
    except orjson.JSONDecodeError:
        answer = {}
    if done.returncode == 0 and isinstance(answer.get("result"), dict):
        return dict(answer["result"])
    if isinstance(answer.get("error"), str):
        raise RuntimeError(answer["error"])
    stderr = done.stderr.decode("utf-8", "replace")
    if any(sign in stderr for sign in OUT_OF_MEMORY):
        raise RuntimeError(
            f"ran out of memory ({settings.ui_preview_memory_mb} MiB, "
            "TFCOMPAT_UI_PREVIEW_MEMORY_MB)"
        )
    if done.returncode < 0:
        raise RuntimeError(f"the assessment was killed ({signal.Signals(-done.returncode).name})")
    last = stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
    raise RuntimeError(f"the assessment failed: {last[0][:300]}")


@shared_task(bind=True, name=TASK_FLEET_PREVIEW, acks_late=False)
def fleet_preview(self: Task[Any, Any], job: dict[str, Any]) -> dict[str, Any]:
    settings = settings_of(self.app)
    preview_id = str(job.get("id", ""))
    change = job.get("change") if isinstance(job.get("change"), dict) else {}
    store = preview_store(settings)
    structlog.contextvars.bind_contextvars(preview=preview_id)
    store.running(preview_id, change or {})
    try:
        result = run_bounded(settings, change or {})
    except (RuntimeError, SoftTimeLimitExceeded) as exc:
        cause = str(exc) or f"stopped by the task's time limit ({type(exc).__name__})"
        log.warning("preview.failed", error=cause)
        store.failed(preview_id, change or {}, cause)
        return {"state": "failed", "error": cause}
    store.done(preview_id, change or {}, result)
    log.info("preview.done", changed=result.get("models_changed"))
    return {"state": "done"}
