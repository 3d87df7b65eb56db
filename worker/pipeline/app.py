"""The one place Celery is wired: serializer, acks, retries, logging context.

Tasks are safe to repeat (see `pipeline.process`), so they acknowledge late and
are requeued when a worker process dies mid-task. Retry backoff is capped far
below the broker's visibility timeout, so a waiting retry is never redelivered
as a duplicate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from celery import Celery, signals

from worker.errors import TransientError
from worker.model.events import ObjectEvent
from worker.model.github import GithubJob
from worker.settings import Settings

TASK_CHECK_OBJECT = "tfcompat.check_object"
TASK_FLEET_CHANGED = "tfcompat.fleet_changed"
TASK_GITHUB_EVENT = "tfcompat.github_event"
QUEUE = "tfcompat"
MAX_BACKOFF = 300  # seconds; the visibility timeout below is 12x that
MAX_RETRIES = 8

RETRY_POLICY: dict[str, Any] = {
    "autoretry_for": (TransientError,),
    "max_retries": MAX_RETRIES,
    "retry_backoff": 2,  # seconds before the first retry, doubling each time
    "retry_backoff_max": MAX_BACKOFF,
    "retry_jitter": True,  # full jitter: uniform in [0, backoff]
}
"""Every task's retry policy: only our `TransientError` is worth retrying (the
object store or broker may answer next time); anything else is final."""


def create_app(settings: Settings) -> Celery:
    app = Celery(
        "tfcompat",
        broker=settings.broker_url,
        backend=settings.result_backend,
        include=["worker.pipeline.tasks", "worker.pipeline.github_tasks"],
    )
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_default_queue=QUEUE,
        task_ignore_result=settings.result_backend is None,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": settings.visibility_timeout},
        worker_hijack_root_logger=False,
        worker_send_task_events=True,
        task_send_sent_event=True,
    )
    app.tfcompat_settings = settings  # type: ignore[attr-defined]
    return app


def object_enqueuer(settings: Settings) -> Callable[[ObjectEvent], None]:
    """Hands object events to `check_object` (the receiver's and the bridge's `Enqueue`)."""
    app = create_app(settings)

    def enqueue(event: ObjectEvent) -> None:
        app.send_task(TASK_CHECK_OBJECT, args=[event.to_json()])

    return enqueue


def github_enqueuer(settings: Settings) -> Callable[[GithubJob], None]:
    """Hands GitHub jobs to `github_event` (the webhook route's `EnqueueJob`)."""
    app = create_app(settings)

    def enqueue(job: GithubJob) -> None:
        app.send_task(TASK_GITHUB_EVENT, args=[job.to_json()])

    return enqueue


def settings_of(app: Celery) -> Settings:
    settings: Settings = app.tfcompat_settings  # type: ignore[attr-defined]
    return settings


@signals.task_prerun.connect
def _bind_task_context(
    task_id: str | None = None, task: Any = None, args: Any = None, kwargs: Any = None, **_: Any
) -> None:
    structlog.contextvars.clear_contextvars()
    context: dict[str, Any] = {"task_id": task_id, "task": getattr(task, "name", None)}
    event = (args or [None])[0] if args else (kwargs or {}).get("event")
    if isinstance(event, dict):
        context.update(
            bucket=event.get("bucket"), key=event.get("key"), version=event.get("version_id")
        )
    structlog.contextvars.bind_contextvars(**context)


@signals.task_postrun.connect
def _clear_task_context(**_: Any) -> None:
    structlog.contextvars.clear_contextvars()


@signals.task_retry.connect
def _log_retry(request: Any = None, reason: Any = None, **_: Any) -> None:
    structlog.get_logger(__name__).warning(
        "task.retry", error=str(reason), retries=getattr(request, "retries", None)
    )


@signals.task_postrun.connect
def _count_task(**kwargs: Any) -> None:
    from worker.pipeline.observe import count_task

    count_task(**kwargs)


@signals.worker_ready.connect
def _reevaluate_changed_fleet(sender: Any = None, **_: Any) -> None:
    """A newly deployed fleet file re-checks every indexed model once.

    Compares the fleet's digest with the last one applied; the first worker to
    notice claims the change (Redis SET NX) and enqueues the re-evaluation."""
    app = getattr(sender, "app", None)
    if app is None or not hasattr(app, "tfcompat_settings"):
        return
    from worker.pipeline.reevaluate import claim_fleet_change

    try:
        claim_fleet_change(
            settings_of(app), lambda path: app.send_task(TASK_FLEET_CHANGED, args=[path])
        )
    except Exception:
        structlog.get_logger(__name__).exception("fleet.check_failed")
