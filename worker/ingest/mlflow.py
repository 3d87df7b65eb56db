"""POST /webhooks/mlflow: verify, drop replays, enqueue a `tfcompat.mlflow_version`, 202.

The order is GitHub's (`ingest.github`): the body is read under the size cap,
its `X-MLflow-Signature` checked over `<delivery id>.<timestamp>.<raw body>`
in constant time, its `X-MLflow-Timestamp` checked against our clock, and only
then is anything in it parsed. Without TFCOMPAT_MLFLOW_WEBHOOK_SECRET every
delivery is refused (503, and the log says why): an unverifiable webhook must
not start work. A delivery id seen before is a replay (409); ids are claimed in
Redis before enqueueing and given back if the broker refuses, so MLflow's own
retry of a delivery we answered 503 goes through. A delivery older than the
tolerance is refused whatever its id (401): its id may have been forgotten.

Answers: 202 queued or ignored (events other than `model_version.created`),
400 malformed, 401 unsigned, forged or stale, 409 replay, 413 too large, 503
not configured or the broker/Redis cannot take it now (MLflow retries 503).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from worker import metrics
from worker.ingest.app import Rejected, guarded, read_body
from worker.ingest.events import load_json
from worker.ingest.handoff import Handoff
from worker.ingest.replays import enqueue_once
from worker.model.registry import RegistryJob
from worker.once import Claims
from worker.registries.mlflow_webhook import (
    DELIVERY_HEADER,
    SIGNATURE_HEADER,
    SOURCE,
    TIMESTAMP_HEADER,
    event_of,
    job_from_delivery,
    signature_valid,
    timestamp_fresh,
)
from worker.settings import Settings

log = structlog.get_logger(__name__)

EnqueueVersion = Callable[[RegistryJob], None]
Clock = Callable[[], float]


def not_configured(missing: str) -> Response:
    log.error(
        "mlflow.refused",
        reason=f"{missing} is not set: MLflow webhooks are refused; set it "
        "(see docs/registries.md)",
    )
    metrics.EVENTS_REJECTED.labels(SOURCE, "not-configured").inc()
    return JSONResponse({"error": "MLflow webhooks are not configured"}, status_code=503)


class MlflowDeliveries:
    """Verified, fresh deliveries to jobs, each enqueued once per delivery id."""

    def __init__(
        self,
        settings: Settings,
        enqueue: EnqueueVersion,
        deliveries: Claims,
        handoff: Handoff,
        clock: Clock = time.time,
    ) -> None:
        self.settings = settings
        self.enqueue = enqueue
        self.deliveries = deliveries
        self.handoff = handoff
        self.clock = clock

    async def receive(self, request: Request) -> Response:
        secret = self.settings.mlflow_webhook_secret
        if secret is None or not secret.get_secret_value():
            return not_configured("TFCOMPAT_MLFLOW_WEBHOOK_SECRET")
        if not self.settings.mlflow_tracking_uri:
            return not_configured("TFCOMPAT_MLFLOW_TRACKING_URI")
        body = await read_body(request, self.settings.max_event_bytes)
        delivery = request.headers.get(DELIVERY_HEADER, "")
        timestamp = request.headers.get(TIMESTAMP_HEADER, "")
        header = request.headers.get(SIGNATURE_HEADER)
        if header is None:
            raise Rejected(401, "missing X-MLflow-Signature")
        if not delivery or not timestamp:
            raise Rejected(401, "missing X-MLflow-Delivery-Id or X-MLflow-Timestamp")
        key = secret.get_secret_value().encode()
        if not signature_valid(key, delivery, timestamp, body, header):
            raise Rejected(401, "X-MLflow-Signature does not match the delivery")
        tolerance = self.settings.mlflow_webhook_tolerance
        if not timestamp_fresh(timestamp, self.clock(), tolerance):
            raise Rejected(401, f"X-MLflow-Timestamp is more than {tolerance} s from now")
        payload = load_json(body)
        metrics.EVENTS_RECEIVED.labels(SOURCE).inc()
        job = job_from_delivery(delivery, payload)
        if job is None:
            metrics.EVENTS_IGNORED.labels(SOURCE).inc()
            entity, action = event_of(payload)
            log.info("mlflow.ignored", delivery=delivery, entity=entity, action=action)
            return JSONResponse({"accepted": 0, "ignored": 1}, status_code=202)
        return await self.hand_over(job)

    async def hand_over(self, job: RegistryJob) -> Response:
        ttl = max(self.settings.mlflow_delivery_ttl, 2 * self.settings.mlflow_webhook_tolerance)
        refused = await enqueue_once(
            SOURCE, job.delivery, ttl, lambda: self.enqueue(job), self.deliveries, self.handoff
        )
        if refused is not None:
            return refused
        log.info("mlflow.accepted", delivery=job.delivery, model=job.name, version=job.version)
        return JSONResponse({"accepted": 1, "ignored": 0}, status_code=202)


def mlflow_route(
    settings: Settings,
    enqueue: EnqueueVersion,
    deliveries: Claims,
    handoff: Handoff | None = None,
    clock: Clock = time.time,
) -> Route:
    """The route for `create_http_app(extra_routes=...)`. `enqueue` hands a job to the
    pipeline; `deliveries` remembers X-MLflow-Delivery-Id values so a replay is refused."""
    receiver = MlflowDeliveries(
        settings, enqueue, deliveries, handoff or Handoff(settings.publish_timeout), clock
    )
    return Route("/webhooks/mlflow", guarded(SOURCE, receiver.receive), methods=["POST"])
