"""The one place Celery is wired: broker, serializer, acks, retries, logging context.

Tasks are safe to repeat (see `pipeline.process`), so they acknowledge late and
are requeued when a worker process dies mid-task. What the broker keeps:
- RabbitMQ (`amqp://`): the queue is durable, messages persistent, and every
  publish waits for the broker's confirm; a task a worker took returns to the
  queue the moment that worker's connection drops.
- Redis (`redis://`): a task is on disk once Redis answers (run it with AOF,
  `appendfsync always`); a task a worker took stays in Redis, invisible for
  `visibility_timeout`, which the worker renews while it holds the task
  (`pipeline.leases`), so a lost worker's tasks come back within about a minute
  while long checks and waiting retries are never handed out twice.
- SQS (`sqs://`): as Redis, without renewal: the visibility timeout must exceed
  the longest task (`task_time_limit`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog
from celery import Celery, Task, bootsteps, signals

from worker.errors import ConfigError, TransientError
from worker.model.events import ObjectEvent
from worker.model.github import GithubJob
from worker.model.registry import RegistryJob
from worker.settings import Settings

TASK_CHECK_OBJECT = "tfcompat.check_object"
TASK_FLEET_CHANGED = "tfcompat.fleet_changed"  # plans a fleet change (`pipeline.fanout`)
TASK_FLEET_CHUNK = "tfcompat.fleet_chunk"
TASK_FLEET_VERSION = "tfcompat.fleet_version"
TASK_RECONCILE = "tfcompat.reconcile"
TASK_INDEX_REBUILD = "tfcompat.index_rebuild"
TASK_GITHUB_EVENT = "tfcompat.github_event"
TASK_MLFLOW_VERSION = "tfcompat.mlflow_version"
TASK_SAGEMAKER_PACKAGE = "tfcompat.sagemaker_package"
TASK_FLEET_PREVIEW = "tfcompat.fleet_preview"
REGISTRY_TASKS = {"mlflow": TASK_MLFLOW_VERSION, "sagemaker": TASK_SAGEMAKER_PACKAGE}
QUEUE = "tfcompat"
MAX_BACKOFF = 300  # seconds; a waiting retry keeps its lease (Redis) or is unacked (RabbitMQ)
MAX_RETRIES = 8
RESTORE_INTERVAL = 10  # seconds between a Redis worker's sweeps for lapsed tasks

RETRY_POLICY: dict[str, Any] = {
    "autoretry_for": (TransientError,),
    "max_retries": MAX_RETRIES,
    "retry_backoff": 2,  # seconds before the first retry, doubling each time
    "retry_backoff_max": MAX_BACKOFF,
    "retry_jitter": True,  # full jitter: uniform in [0, backoff]
}
"""Every task's retry policy: only our `TransientError` is worth retrying (the
object store or broker may answer next time); anything else is final."""

REGISTRY_RETRY_POLICY: dict[str, Any] = {**RETRY_POLICY, "max_retries": 12}
"""Registry tasks wait longer for their registry: the tracking server is one process
that is restarted (an upgrade, a new node), and with full jitter eight retries can all
fall within its first two minutes down; twelve span about half an hour at most."""

FLEET_RETRY_POLICY: dict[str, Any] = REGISTRY_RETRY_POLICY
"""A fleet change's units wait as long: thousands of them retry at once while S3 or
Redis is away, and with eight retries some ran out within two minutes of S3 down
(bench/s3_outage_memory.py), each a dead letter and an alert for a short outage."""


class RetryingTask(Task):  # type: ignore[type-arg]
    """Every task's class. An error retried later is sent on without the frames it was
    raised through, nor the errors it was raised from (its message already says what
    failed and why). Celery clears the frames of its own retry, not those of the error
    it carries, and keeps something of every retry besides: a fleet chunk's frames hold
    the models it decoded and the report it meant to write, so with S3 down a pool
    process grew from 176 MB to 1.4 GB in two minutes of retries; without them, to
    445 MB (about 0.5 MB a retry, Celery's own; TFCOMPAT_WORKER_MAX_MEMORY_MB bounds
    that)."""

    def retry(
        self, args: Any = None, kwargs: Any = None, exc: Any = None, *rest: Any, **options: Any
    ) -> Any:
        if isinstance(exc, BaseException):
            without_frames(exc)
        return super().retry(args, kwargs, exc, *rest, **options)


def without_frames(exc: BaseException) -> BaseException:
    """`exc` holding no traceback and no cause or context (it keeps its message)."""
    exc.__traceback__ = None
    exc.__cause__ = None
    exc.__context__ = None
    exc.__suppress_context__ = True
    return exc


def broker_kind(url: str) -> str:
    """The broker's family from its URL's scheme: redis, amqp or sqs."""
    scheme = url.split("://", 1)[0].lower()
    if scheme in ("redis", "rediss", "sentinel"):
        return "redis"
    if scheme in ("amqp", "amqps", "pyamqp"):
        return "amqp"
    if scheme == "sqs":
        return "sqs"
    raise ConfigError(f"TFCOMPAT_BROKER_URL: {scheme!r} is not a supported broker")


def transport_options(settings: Settings, timeout: float | None = None) -> dict[str, Any]:
    """Broker transport options; `timeout` bounds every socket wait (publishers)."""
    kind = broker_kind(settings.broker_url)
    if kind == "amqp":
        return {"confirm_publish": True, **settings.broker_transport_options}
    options: dict[str, Any] = {"visibility_timeout": settings.visibility_timeout}
    if kind == "sqs":
        options.update(region=settings.aws_region, wait_time_seconds=10)
    if kind == "redis":
        options.update(
            unacked_restore_interval=RESTORE_INTERVAL,
            unacked_restore_throttle=1,
            socket_timeout=timeout or 10,
            socket_connect_timeout=timeout or 5,
            health_check_interval=10,
        )
    return {**options, **settings.broker_transport_options}


def create_app(settings: Settings, *, publish_timeout: float | None = None) -> Celery:
    """The Celery app for these settings. `publish_timeout` makes a publisher's app
    (the receiver's, the bridge's): every broker wait is bounded by it, and a publish
    retries at most once, at once (a pooled connection the broker dropped)."""
    app: Celery = Celery(
        "tfcompat",
        task_cls=RetryingTask,
        broker=settings.broker_url,
        backend=settings.result_backend,
        include=[
            "worker.pipeline.tasks",
            "worker.pipeline.github_tasks",
            "worker.pipeline.registry_tasks",
            "worker.pipeline.preview_tasks",
            "worker.pipeline.fleet_tasks",
        ],
    )
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        # A task running when the broker connection drops cannot be acknowledged on it:
        # the broker hands it out again, so stop it instead of finishing it twice.
        worker_cancel_long_running_tasks_on_connection_loss=True,
        task_default_queue=QUEUE,
        task_ignore_result=settings.result_backend is None,
        task_time_limit=settings.task_time_limit or None,
        worker_max_memory_per_child=settings.worker_max_memory_mb * 1024 or None,  # KiB
        broker_connection_retry_on_startup=True,
        broker_transport_options=transport_options(settings, publish_timeout),
        worker_hijack_root_logger=False,
        worker_send_task_events=True,
        task_send_sent_event=publish_timeout is None,
        # `tfcompat beat` sends the reconciler; workers ignore the schedule
        beat_schedule={
            "reconcile": {"task": TASK_RECONCILE, "schedule": float(settings.reconcile_interval)}
        },
        beat_schedule_filename=settings.beat_schedule_file,
    )
    if publish_timeout is not None:
        app.conf.update(
            broker_connection_timeout=publish_timeout,
            broker_heartbeat=0,
            task_publish_retry_policy={
                "max_retries": 1,
                "interval_start": 0,
                "interval_step": 0,
                "interval_max": 0,
            },
        )
    app.steps["consumer"].add(_ForgetLeasesOnConnect)
    app.tfcompat_settings = settings  # type: ignore[attr-defined]
    return app


def publisher(settings: Settings, task: str) -> Callable[[dict[str, Any]], None]:
    """Publishes one task and returns only once the broker has it (Redis answered,
    RabbitMQ confirmed); raises when it could not within `publish_timeout`."""
    app = create_app(settings, publish_timeout=settings.publish_timeout)
    timeout = settings.publish_timeout

    def publish(argument: dict[str, Any]) -> None:
        app.send_task(task, args=[argument], timeout=timeout, confirm_timeout=timeout)

    return publish


def object_enqueuer(settings: Settings) -> Callable[[ObjectEvent], None]:
    """Hands object events to `check_object` (the receiver's and the bridge's `Enqueue`)."""
    publish = publisher(settings, TASK_CHECK_OBJECT)

    def enqueue(event: ObjectEvent) -> None:
        publish(event.to_json())

    return enqueue


def github_enqueuer(settings: Settings) -> Callable[[GithubJob], None]:
    """Hands GitHub jobs to `github_event` (the webhook route's `EnqueueJob`)."""
    publish = publisher(settings, TASK_GITHUB_EVENT)

    def enqueue(job: GithubJob) -> None:
        publish(job.to_json())

    return enqueue


def registry_enqueuer(settings: Settings) -> Callable[[RegistryJob], None]:
    """Hands registered model versions to `mlflow_version` or `sagemaker_package` (the
    MLflow route's and the EventBridge route's enqueue)."""
    publishers = {name: publisher(settings, task) for name, task in REGISTRY_TASKS.items()}

    def enqueue(job: RegistryJob) -> None:
        publishers[job.registry](job.to_json())

    return enqueue


def preview_enqueuer(settings: Settings) -> Callable[[str, dict[str, Any]], None]:
    """Hands a fleet-change preview (its id and change) to `fleet_preview`, with the
    task's soft time limit a little above the assessment's own (`preview_tasks`)."""
    app = create_app(settings, publish_timeout=settings.publish_timeout)
    timeout = settings.publish_timeout
    soft = settings.ui_preview_time_limit + 30

    def enqueue(preview_id: str, change: dict[str, Any]) -> None:
        app.send_task(
            TASK_FLEET_PREVIEW,
            args=[{"id": preview_id, "change": change}],
            soft_time_limit=soft,
            time_limit=soft + 30,
            timeout=timeout,
            confirm_timeout=timeout,
        )

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


@signals.worker_process_shutdown.connect
def _log_replaced(pid: int | None = None, exitcode: int | None = None, **_: Any) -> None:
    """A pool process past TFCOMPAT_WORKER_MAX_MEMORY_MB leaves once its task is done
    (billiard's recycle exit status) and the pool starts another: say so, with its peak."""
    from billiard.pool import EX_RECYCLE

    if exitcode == EX_RECYCLE:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        structlog.get_logger(__name__).info(
            "worker.process_replaced", pid=pid, peak_rss_mb=round(peak), cause="memory limit"
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
    from worker.pipeline.reevaluate import claim_fleet_change, claim_index_build

    try:
        claim_index_build(settings_of(app), lambda: app.send_task(TASK_INDEX_REBUILD))
        claim_fleet_change(
            settings_of(app), lambda path: app.send_task(TASK_FLEET_CHANGED, args=[path])
        )
    except Exception:
        structlog.get_logger(__name__).exception("fleet.check_failed")


def _leases(app: Any) -> Any:
    """The worker's `pipeline.leases.Leases` on a Redis broker, else None."""
    if app is None or not hasattr(app, "tfcompat_settings"):
        return None
    if broker_kind(settings_of(app).broker_url) != "redis":
        return None
    leases = getattr(app, "tfcompat_leases", None)
    if leases is None:
        from worker.pipeline.leases import leases_for

        options = dict(app.conf.broker_transport_options or {})
        leases = leases_for(settings_of(app).broker_url, options, RESTORE_INTERVAL)
        app.tfcompat_leases = leases
    return leases


class _ForgetLeasesOnConnect(bootsteps.StartStopStep):
    """Redis broker: each time the consumer (re)connects, the tasks held on the lost
    connection stop being renewed and lapse (see `pipeline.leases`)."""

    requires = ("celery.worker.consumer.connection:Connection",)

    def start(self, c: Any) -> None:
        leases = _leases(getattr(c, "app", None))
        if leases is not None:
            leases.forget_all()


@signals.worker_ready.connect
def _start_leases(sender: Any = None, **_: Any) -> None:
    """Redis broker: sweep for lapsed tasks from the start, whether or not any arrives."""
    leases = _leases(getattr(sender, "app", None))
    if leases is not None:
        leases.start()


@signals.task_received.connect
def _hold_lease(sender: Any = None, request: Any = None, **_: Any) -> None:
    """Redis broker: renew this task's visibility while this worker holds it."""
    message = getattr(request, "message", None)
    leases = _leases(getattr(sender, "app", None))
    if leases is not None and message is not None:
        leases.hold(str(message.delivery_tag), message)
