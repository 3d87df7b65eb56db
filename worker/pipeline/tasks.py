"""Celery tasks: JSON in, build objects, call one function."""

from __future__ import annotations

import random
from typing import Any

import structlog
from celery import Task, shared_task

from worker.errors import TransientError
from worker.ingest.events import MalformedEvent, ObjectEvent
from worker.pipeline.app import MAX_BACKOFF, TASK_CHECK_OBJECT, TASK_FLEET_CHANGED, settings_of
from worker.pipeline.process import process_event
from worker.pipeline.reevaluate import apply_fleet
from worker.pipeline.services import services_for

log = structlog.get_logger(__name__)
MAX_RETRIES = 8


def backoff(retries: int) -> float:
    """Exponential backoff with full jitter, capped at MAX_BACKOFF seconds."""
    return random.uniform(0, min(MAX_BACKOFF, 2.0 * 2**retries))


@shared_task(bind=True, name=TASK_CHECK_OBJECT, max_retries=MAX_RETRIES)
def check_object(self: Task[Any, Any], event: dict[str, Any]) -> dict[str, Any]:
    try:
        parsed = ObjectEvent.from_json(event)
    except MalformedEvent as exc:
        log.error("task.malformed", error=str(exc))
        return {"action": "rejected", "error": str(exc)}
    services = services_for(settings_of(self.app))
    try:
        outcome = process_event(parsed, services.store, services.checker, services.location)
    except TransientError as exc:
        log.warning("task.retry", error=str(exc), retries=self.request.retries)
        raise self.retry(exc=exc, countdown=backoff(self.request.retries)) from None
    log.info(
        "task.done",
        action=outcome.action,
        status=outcome.status,
        tags=outcome.tags,
        dropped=list(outcome.dropped_tags),
    )
    services.after(parsed, outcome)
    return {"action": outcome.action, "status": outcome.status, "report": outcome.report}


@shared_task(bind=True, name=TASK_FLEET_CHANGED, max_retries=MAX_RETRIES)
def fleet_changed(self: Task[Any, Any], fleet_path: str) -> dict[str, Any]:
    """Re-check every indexed model against the fleet at `fleet_path`."""
    settings = settings_of(self.app)
    services = services_for(settings)
    try:
        result = apply_fleet(settings, services, fleet_path)
    except TransientError as exc:
        raise self.retry(exc=exc, countdown=backoff(self.request.retries)) from None
    return {
        "examined": result.impact.examined,
        "changed": len(result.impact.models),
        "owners": result.notified_owners,
    }
