"""SageMaker model package events on /events/eventbridge: one registry job each, 202.

The EventBridge route authenticates the delivery (its bearer token) before this
runs; an event for a package not yet `Completed` is acknowledged and starts
nothing (SageMaker sends one per state change). Duplicates need no replay
check: the check is safe to repeat and writes only tags that change.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from starlette.responses import JSONResponse, Response

from worker import metrics
from worker.errors import BrokerUnavailable
from worker.ingest.events import load_json
from worker.ingest.handoff import Handoff
from worker.model.registry import RegistryJob
from worker.registries.sagemaker import SOURCE, is_model_package_event, job_from_event

log = structlog.get_logger(__name__)

EnqueueJob = Callable[[RegistryJob], None]


def model_package_event(body: bytes) -> RegistryJob | bool | None:
    """The job of a SageMaker model package event; False for one that asks for nothing
    yet; None when the body is no such event (an S3 event, say)."""
    document = load_json(body)
    if not is_model_package_event(document):
        return None
    assert isinstance(document, dict)
    return job_from_event(document) or False


async def hand_over_package(
    package: RegistryJob | bool, enqueue: EnqueueJob, handoff: Handoff
) -> Response:
    metrics.EVENTS_RECEIVED.labels(SOURCE).inc()
    if not isinstance(package, RegistryJob):
        metrics.EVENTS_IGNORED.labels(SOURCE).inc()
        return JSONResponse({"accepted": 0, "ignored": 1}, status_code=202)
    try:
        await handoff.call(lambda: enqueue(package))
    except BrokerUnavailable as exc:
        log.error("enqueue.failed", source=SOURCE, error=str(exc))
        metrics.EVENTS_REJECTED.labels(SOURCE, "broker").inc()
        return JSONResponse({"error": "cannot enqueue now; retry"}, status_code=503)
    log.info("sagemaker.accepted", package=package.version, group=package.name)
    return JSONResponse({"accepted": 1, "ignored": 0}, status_code=202)
