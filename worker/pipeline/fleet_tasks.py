"""Celery tasks of a fleet change fanned out (`pipeline.fanout`), the reconciler and the
index rebuild: JSON in, build objects, call one function.

Every unit task (a chunk of models, one registry version) reports its outcome to the
run (`sinks.fleet_runs`); one that fails for good (its retries ran out, or an error
retrying cannot fix) is kept in the dead-letter list with its cause
(`FanoutTask.on_failure`), counted, and reported failed. Retries are `pipeline.app`'s.
"""

from __future__ import annotations

from typing import Any

import structlog
from celery import Task, shared_task

from worker.errors import TfcompatError, Unrecheckable
from worker.fleet.checker import Checker
from worker.model.registry import RegistryJob
from worker.pipeline.app import (
    FLEET_RETRY_POLICY,
    REGISTRY_RETRY_POLICY,
    RETRY_POLICY,
    TASK_FLEET_CHANGED,
    TASK_FLEET_CHUNK,
    TASK_FLEET_VERSION,
    TASK_INDEX_REBUILD,
    TASK_RECONCILE,
    RetryingTask,
    settings_of,
)
from worker.pipeline.fanout import (
    digest_of,
    index_fields,
    object_units,
    plan_units,
    retag_chunk,
    stale_objects,
    version_unit,
)
from worker.pipeline.reconciler import resend_stalled, stale_registered
from worker.pipeline.registered import VersionOutcome
from worker.pipeline.services import Services, services_for
from worker.settings import Settings
from worker.sinks.dead_letters import DeadLetters
from worker.sinks.fleet_runs import FleetRuns, Unit
from worker.sinks.index import redis_errors

log = structlog.get_logger(__name__)

RECONCILE_OBJECTS = "tfcompat:reconcile:objects"  # the index scan cursor of the next run
UNRECHECKABLE = ("unreadable", "refused")  # outcomes that leave the version's tags stale

_CHECKERS: dict[tuple[str, str], Checker] = {}


def fleet_checker(services: Services, fleet_path: str) -> Checker:
    """The checker of the fleet file at `fleet_path`, built once per process and file
    contents."""
    from worker.fleet.fleet import load_fleet

    fleet = load_fleet(fleet_path, services.checker.catalog)
    key = (fleet_path, fleet.source)
    if key not in _CHECKERS:
        if len(_CHECKERS) > 8:
            _CHECKERS.clear()
        _CHECKERS[key] = Checker(
            fleet.consumers, fleet.policy, services.checker.catalog, fleet.source
        )
    return _CHECKERS[key]


class FanoutTask(RetryingTask):
    """A unit of a fleet change: failing for good puts it in the dead-letter list."""

    def on_failure(self, exc: Exception, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        from worker.metrics import DEAD_LETTERS, FLEET_MODELS

        cause = f"{type(exc).__name__}: {exc}"
        try:
            services = services_for(settings_of(self.app))
            client = services.index.redis_client
            letter = DeadLetters(client).add(self.name, list(args), cause)
            DEAD_LETTERS.labels(self.name).inc()
            log.error("fleet.dead_letter", id=letter.id, task=self.name, cause=cause)
            payload = args[0] if args and isinstance(args[0], dict) else {}
            if "unit" in payload:
                unit = Unit.from_json(payload["unit"])
                FLEET_MODELS.labels("failed").inc(unit.size)
                _report(FleetRuns(client), str(payload.get("digest")), unit, ok=False)
        except TfcompatError as error:  # Redis away: the reconciler finds the stale tags
            log.error("fleet.dead_letter_lost", task=self.name, cause=cause, error=str(error))


def _report(runs: FleetRuns, digest: str, unit: Unit, ok: bool, changed: int = 0) -> None:
    done = runs.complete(digest, unit, ok, changed)
    if done.remaining < 0:
        return  # a reconciler's unit, or a run a newer fleet change replaced
    progress = runs.progress()
    log.info(
        "fleet.progress",
        digest=digest,
        planned=progress.planned,
        done=progress.done,
        changed=progress.changed,
        failed=progress.failed,
        remaining_units=done.remaining,
    )
    if done.applied:
        log.info("fleet.applied", digest=digest, planned=progress.planned)


@shared_task(bind=True, name=TASK_FLEET_CHANGED, base=FanoutTask, **RETRY_POLICY)
def fleet_changed(self: Task[Any, Any], fleet_path: str) -> dict[str, Any]:
    """Plan the fleet change to the fleet at `fleet_path` and send its units."""
    from worker.metrics import FLEET_MODELS

    settings = settings_of(self.app)
    services = services_for(settings)
    checker = fleet_checker(services, fleet_path)
    digest = digest_of(checker)
    runs = FleetRuns(services.index.redis_client)
    units = runs.planned(digest)
    if units is None:
        fields = index_fields(services.index)
        units = plan_units(fields, registered_versions(settings), settings.fleet_chunk_size)
        runs.start(digest, fleet_path, units)
        FLEET_MODELS.labels("planned").inc(sum(u.size for u in units))
    log.info("fleet.planned", digest=digest, units=len(units), planned=sum(u.size for u in units))
    for unit in units:  # sent again after a redelivery: each is counted once
        task = TASK_FLEET_CHUNK if unit.kind == "objects" else TASK_FLEET_VERSION
        payload = {"digest": digest, "fleet": fleet_path, "unit": unit.to_json()}
        self.app.send_task(task, args=[payload])
    return {"digest": digest, "units": len(units)}


def registered_versions(settings: Settings) -> list[tuple[str, str, str]]:
    """(registry, name, version) of every version a fleet change re-checks."""
    found: list[tuple[str, str, str]] = []
    if settings.mlflow_tracking_uri:
        from worker.sinks.mlflow import mlflow_registry

        found += [("mlflow", n, v) for n, v in mlflow_registry(settings).versions()]
    if settings.sagemaker_fleet_recheck:
        from worker.sinks.sagemaker import sagemaker_registry

        found += [("sagemaker", "", arn) for arn in sagemaker_registry(settings).package_arns()]
    return found


@shared_task(bind=True, name=TASK_FLEET_CHUNK, base=FanoutTask, **FLEET_RETRY_POLICY)
def fleet_chunk(self: Task[Any, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Re-tag a chunk of indexed models from their stored metadata."""
    from worker.metrics import FLEET_MODELS
    from worker.pipeline.notifications import breakage_notifier

    settings = settings_of(self.app)
    services = services_for(settings)
    unit = Unit.from_json(payload["unit"])
    checker = fleet_checker(services, str(payload["fleet"]))
    route, notify = breakage_notifier(settings, services.store)
    result = retag_chunk(
        unit.items,
        services.index,
        services.store,
        checker,
        services.location,
        force=bool(payload.get("force")),
        route=route,
        notify=notify,
    )
    FLEET_MODELS.labels("done").inc(unit.size)
    FLEET_MODELS.labels("changed").inc(result.rewritten)
    runs = FleetRuns(services.index.redis_client)
    _report(runs, str(payload["digest"]), unit, ok=True, changed=result.rewritten)
    return {"examined": result.examined, "rewritten": result.rewritten}


def check_version(
    settings: Settings, services: Services, job: RegistryJob, checker: Checker
) -> VersionOutcome:
    """One registered version checked against `checker`'s fleet, its arguments built as
    the webhook-driven registry tasks build theirs (`pipeline.registry_tasks`), judged
    from the metadata of its stored report when that report can stand for a re-read
    (`pipeline.stored_versions`); the model is read again only when it cannot. The
    read rule is applied first either way."""
    from worker.ingest.gate import read_policy

    policy = read_policy(settings)
    if job.registry == "sagemaker":
        from worker.pipeline.packages import check_model_package
        from worker.sinks.sagemaker import sagemaker_registry

        registry = sagemaker_registry(settings)
        return check_model_package(
            job,
            registry,
            services.store,
            checker,
            services.location,
            policy,
            settings.check_deadline,
            reuse_report=True,
        )
    from worker.pipeline.registered import check_model_version
    from worker.sinks.mlflow import mlflow_registry

    mlflow = mlflow_registry(settings)
    return check_model_version(
        job,
        mlflow,
        services.store,
        checker,
        services.location,
        policy,
        settings.check_deadline,
        reuse_report=True,
    )


@shared_task(bind=True, name=TASK_FLEET_VERSION, base=FanoutTask, **REGISTRY_RETRY_POLICY)
def fleet_version(self: Task[Any, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """Re-check one registered version (MLflow version or SageMaker package) under the
    version's lock; a transient error (registry or S3 down) retries with backoff."""
    from worker.metrics import FLEET_MODELS
    from worker.pipeline.version_lock import version_claims, version_lock

    settings = settings_of(self.app)
    services = services_for(settings)
    unit = Unit.from_json(payload["unit"])
    name, version = unit.items
    job = RegistryJob(unit.kind, name, version, f"fleet:{payload['digest']}")
    structlog.contextvars.bind_contextvars(model=name, version=version)
    checker = fleet_checker(services, str(payload["fleet"]))
    with version_lock(
        version_claims(settings), unit.kind, name, version, settings.version_lock_lease
    ):
        outcome = check_version(settings, services, job, checker)
    if outcome.action in UNRECHECKABLE:
        raise Unrecheckable(f"{unit.kind} {name} v{version}: {outcome.action}")
    log.info(
        "fleet.version_done",
        action=outcome.action,
        source=outcome.source,
        deleted=list(outcome.deleted),
    )
    FLEET_MODELS.labels("done").inc()
    _report(FleetRuns(services.index.redis_client), str(payload["digest"]), unit, ok=True)
    return {"action": outcome.action, "status": outcome.status, "source": outcome.source}


@shared_task(bind=True, name=TASK_RECONCILE, **RETRY_POLICY)
def reconcile(self: Task[Any, Any]) -> dict[str, Any]:
    """The reconciler (`tfcompat beat` sends it every TFCOMPAT_RECONCILE_INTERVAL): a
    bounded batch of objects, MLflow versions and SageMaker packages checked for
    another fleet's digest in their tags, and what is stale sent again; a fleet change
    never planned (its planning task lost) is planned; a run that stalled (a unit lost
    without failing) has its pending units sent again (`pipeline.reconciler`)."""
    from worker.metrics import RECONCILED

    settings = settings_of(self.app)
    services = services_for(settings)
    checker = services.checker
    digest = digest_of(checker)
    index = services.index
    client = index.redis_client
    runs = FleetRuns(client)
    letters = DeadLetters(client)
    replanned = False
    unplanned = index.applied_fleet() != digest and runs.progress().digest != digest
    ttl = max(60, settings.reconcile_interval)
    if unplanned and index.claim_fleet_change(digest, ttl_s=ttl):
        self.app.send_task(TASK_FLEET_CHANGED, args=[settings.fleet])
        replanned = True
    with redis_errors("reading the reconciler's cursor"):
        cursor = int(client.get(RECONCILE_OBJECTS) or 0)
    stale, cursor, examined = stale_objects(
        index, services.store, digest, cursor, settings.reconcile_batch
    )
    with redis_errors("recording the reconciler's cursor"):
        client.set(RECONCILE_OBJECTS, cursor)
    for unit in object_units(stale, settings.fleet_chunk_size, prefix="reconcile"):
        payload = {"digest": digest, "fleet": settings.fleet, "unit": unit.to_json()}
        self.app.send_task(TASK_FLEET_CHUNK, args=[{**payload, "force": True}])
    RECONCILED.labels("object").inc(len(stale))
    mlflow = sagemaker = None
    if settings.mlflow_tracking_uri:
        from worker.sinks.mlflow import mlflow_registry

        mlflow = mlflow_registry(settings)
    if settings.sagemaker_fleet_recheck:
        from worker.sinks.sagemaker import sagemaker_registry

        sagemaker = sagemaker_registry(settings)
    versions = stale_registered(client, digest, settings.reconcile_batch, mlflow, sagemaker)
    sent = 0
    for registry, name, version in versions:
        unit = version_unit(registry, name, version)
        payload = {"digest": digest, "fleet": settings.fleet, "unit": unit.to_json()}
        if letters.holds(TASK_FLEET_VERSION, [payload]):
            continue  # waiting for an operator: re-driven with `tfcompat dead-letters retry`
        self.app.send_task(TASK_FLEET_VERSION, args=[payload])
        sent += 1
    RECONCILED.labels("version").inc(sent)
    resent = 0
    if not replanned:
        resent = resend_stalled(
            runs,
            digest,
            settings.fleet_stall_after,
            lambda task, payload: self.app.send_task(task, args=[payload]),
        )
    RECONCILED.labels("stalled-unit").inc(resent)
    log.info(
        "reconcile.done",
        digest=digest,
        examined_objects=examined,
        stale_objects=len(stale),
        stale_versions=sent,
        resent_units=resent,
        replanned=replanned,
    )
    return {
        "stale_objects": len(stale),
        "stale_versions": sent,
        "resent_units": resent,
        "replanned": replanned,
    }


@shared_task(bind=True, name=TASK_INDEX_REBUILD, **RETRY_POLICY)
def index_rebuild(self: Task[Any, Any], request: dict[str, Any] | None = None) -> dict[str, Any]:
    """Rebuild the model index from the stored reports, in this worker, under the index's
    rebuild lock (another rebuild running: retried later). Without a `request` (the
    start-up rebuild) only an index Redis lost is rebuilt; the page's rows are made
    either way."""
    index = services_for(settings_of(self.app)).index
    models = index.rebuild_locked() if request is not None or not index.is_built() else 0
    rows = index.ensure_rows()
    return {"models": models, "rows": rows}
