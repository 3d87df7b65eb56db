"""Celery task for registered model versions: JSON in, build the client, call one function."""

from __future__ import annotations

from typing import Any

import structlog
from celery import Task, shared_task

from worker.errors import ConfigError, MalformedEvent
from worker.ingest.gate import read_policy
from worker.model.registry import RegistryJob
from worker.pipeline.app import (
    REGISTRY_RETRY_POLICY,
    TASK_MLFLOW_VERSION,
    TASK_SAGEMAKER_PACKAGE,
    settings_of,
)
from worker.pipeline.packages import check_model_package
from worker.pipeline.registered import VersionOutcome, check_model_version, notify_version_owner
from worker.pipeline.services import services_for
from worker.pipeline.version_lock import version_claims, version_lock
from worker.settings import Settings
from worker.sinks.mlflow import mlflow_registry
from worker.sinks.sagemaker import sagemaker_registry

log = structlog.get_logger(__name__)


def _parsed(job: dict[str, Any]) -> RegistryJob | dict[str, Any]:
    """The job, with its names bound to the log; or the task's answer to a malformed one."""
    try:
        parsed = RegistryJob.from_json(job)
    except MalformedEvent as exc:
        log.error("task.malformed", error=str(exc))
        return {"action": "rejected", "error": str(exc)}
    structlog.contextvars.bind_contextvars(
        model=parsed.name, version=parsed.version, delivery=parsed.delivery
    )
    return parsed


def _finished(settings: Settings, outcome: VersionOutcome, **logged: Any) -> dict[str, Any]:
    """Log the outcome, tell the owners (a failure to tell never undoes the recorded
    result) and answer."""
    log.info("task.done", action=outcome.action, status=outcome.status, tags=outcome.tags, **logged)
    try:
        notify_version_owner(settings, outcome)
    except Exception:
        log.exception("hook.failed", hook="notify_version_owner")
    answer = {"action": outcome.action, "status": outcome.status, "report": outcome.report}
    return {**answer, "error": outcome.error} if outcome.error else answer


@shared_task(bind=True, name=TASK_MLFLOW_VERSION, **REGISTRY_RETRY_POLICY)
def mlflow_version(self: Task[Any, Any], job: dict[str, Any]) -> dict[str, Any]:
    parsed = _parsed(job)
    if not isinstance(parsed, RegistryJob):
        return parsed
    settings = settings_of(self.app)
    try:
        registry = mlflow_registry(settings)
    except ConfigError as exc:
        log.error("mlflow.not_configured", error=str(exc))
        return {"action": "rejected", "error": str(exc)}
    services = services_for(settings)
    policy = read_policy(settings)
    with version_lock(
        version_claims(settings), "mlflow", parsed.name, parsed.version, settings.version_lock_lease
    ):
        outcome = check_model_version(
            parsed,
            registry,
            services.store,
            services.checker,
            services.location,
            policy,
            settings.check_deadline,
        )
    return _finished(
        settings, outcome, deleted=list(outcome.deleted), bytes_read=registry.bytes_read
    )


@shared_task(bind=True, name=TASK_SAGEMAKER_PACKAGE, **REGISTRY_RETRY_POLICY)
def sagemaker_package(self: Task[Any, Any], job: dict[str, Any]) -> dict[str, Any]:
    parsed = _parsed(job)
    if not isinstance(parsed, RegistryJob):
        return parsed
    settings = settings_of(self.app)
    services = services_for(settings)
    registry = sagemaker_registry(settings)
    policy = read_policy(settings)
    with version_lock(
        version_claims(settings), "sagemaker", "", parsed.version, settings.version_lock_lease
    ):
        outcome = check_model_package(
            parsed,
            registry,
            services.store,
            services.checker,
            services.location,
            policy,
            settings.check_deadline,
        )
    return _finished(settings, outcome)
