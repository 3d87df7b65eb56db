"""Celery tasks: JSON in, build objects, call one function.

Retries of `TransientError` and acknowledgement are `pipeline.app`'s (RETRY_POLICY).
"""

from __future__ import annotations

from typing import Any

import structlog
from celery import Task, shared_task

from worker.errors import MalformedEvent
from worker.ingest.access import refused_message
from worker.ingest.gate import gate_object, read_policy
from worker.model.events import ObjectEvent
from worker.pipeline.app import RETRY_POLICY, TASK_CHECK_OBJECT, settings_of
from worker.pipeline.process import process_event
from worker.pipeline.services import services_for

log = structlog.get_logger(__name__)


@shared_task(bind=True, name=TASK_CHECK_OBJECT, **RETRY_POLICY)
def check_object(self: Task[Any, Any], event: dict[str, Any]) -> dict[str, Any]:
    try:
        parsed = ObjectEvent.from_json(event)
    except MalformedEvent as exc:
        log.error("task.malformed", error=str(exc))
        return {"action": "rejected", "error": str(exc)}
    settings = settings_of(self.app)
    policy = read_policy(settings)
    if not gate_object(policy, parsed.bucket, parsed.key, "task").allowed:
        # Whatever enqueued it (an older receiver, a hand-made task), it is never read.
        log.error("task.refused_bucket", error=refused_message([parsed]))
        return {"action": "refused", "error": refused_message([parsed])}
    services = services_for(settings)
    outcome = process_event(parsed, services.store, services.checker, services.location, policy)
    log.info(
        "task.done",
        action=outcome.action,
        status=outcome.status,
        tags=outcome.tags,
        dropped=list(outcome.dropped_tags),
    )
    services.after(parsed, outcome)
    return {"action": outcome.action, "status": outcome.status, "report": outcome.report}
