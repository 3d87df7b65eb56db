"""POST /webhooks/github: verify, drop replays, enqueue a `tfcompat.github_event`, answer 202.

Order matters and is fixed: the body is read under the size cap, then its
`X-Hub-Signature-256` is checked over the raw bytes with a constant-time
compare, and only then is anything in it parsed. With no
TFCOMPAT_GITHUB_WEBHOOK_SECRET configured every delivery is refused (503, and
the log says why): an unverifiable webhook must not start work. A delivery id
(`X-GitHub-Delivery`) seen before is a replay and is dropped (409); the id is
claimed in Redis before enqueueing and given back if the broker refuses, so
GitHub's own redelivery of a delivery we lost still works. Redis and the broker
are called off the event loop, within `publish_timeout` (`ingest.handoff`).

Answers: 200 ping, 202 queued or ignored (events and actions we do not act
on), 400 malformed, 401 unsigned or forged, 409 replay, 413 too large, 503 not
configured or the broker/Redis cannot take it now (GitHub shows the failure
and it can be redelivered).

Events acted on: `pull_request` (opened, synchronize, reopened) and
`check_suite`/`check_run` rerequested. Parsing them into a `GithubJob` is pure.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
from pydantic import SecretStr
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from worker import metrics
from worker.github.webhook import SOURCE, job_from_delivery, signature_valid
from worker.ingest.app import Rejected, guarded, read_body
from worker.ingest.events import load_json
from worker.ingest.handoff import Handoff
from worker.ingest.replays import enqueue_once
from worker.model.github import GithubJob
from worker.once import Claims
from worker.settings import Settings

log = structlog.get_logger(__name__)


EnqueueJob = Callable[[GithubJob], None]


def not_configured() -> Response:
    log.error(
        "github.refused",
        reason="TFCOMPAT_GITHUB_WEBHOOK_SECRET is not set: unverifiable webhooks are "
        "refused; set it to the secret configured in the GitHub App",
    )
    metrics.EVENTS_REJECTED.labels(SOURCE, "not-configured").inc()
    return JSONResponse({"error": "GitHub webhooks are not configured"}, status_code=503)


def verify(request: Request, body: bytes, secret: SecretStr) -> None:
    """Returns only if the body carries GitHub's signature made with our secret."""
    header = request.headers.get("x-hub-signature-256")
    if header is None:
        raise Rejected(401, "missing X-Hub-Signature-256")
    if not signature_valid(secret.get_secret_value().encode(), body, header):
        raise Rejected(401, "X-Hub-Signature-256 does not match the body")


class GithubDeliveries:
    """Verified deliveries to jobs, each job enqueued once per delivery id."""

    def __init__(
        self, settings: Settings, enqueue: EnqueueJob, deliveries: Claims, handoff: Handoff
    ) -> None:
        self.settings = settings
        self.enqueue = enqueue
        self.deliveries = deliveries
        self.handoff = handoff

    async def receive(self, request: Request) -> Response:
        secret = self.settings.github_webhook_secret
        if secret is None or not secret.get_secret_value():
            return not_configured()
        body = await read_body(request, self.settings.max_event_bytes)
        verify(request, body, secret)
        event = request.headers.get("x-github-event", "")
        if event == "ping":
            log.info("github.ping", hook=request.headers.get("x-github-hook-id"))
            return JSONResponse({"pong": True}, status_code=200)
        delivery = request.headers.get("x-github-delivery", "")
        if not event or not delivery:
            raise Rejected(400, "missing X-GitHub-Event or X-GitHub-Delivery")
        payload = load_json(body)
        metrics.EVENTS_RECEIVED.labels(SOURCE).inc()
        job = job_from_delivery(event, delivery, payload, self.settings.github_fleet_path)
        if job is None:
            metrics.EVENTS_IGNORED.labels(SOURCE).inc()
            action = payload.get("action") if isinstance(payload, dict) else None
            log.info("github.ignored", github_event=event, action=action)
            return JSONResponse({"accepted": 0, "ignored": 1}, status_code=202)
        return await self.hand_over(job)

    async def hand_over(self, job: GithubJob) -> Response:
        refused = await enqueue_once(
            SOURCE,
            job.delivery,
            self.settings.github_delivery_ttl,
            lambda: self.enqueue(job),
            self.deliveries,
            self.handoff,
        )
        if refused is not None:
            return refused
        log.info(
            "github.accepted",
            delivery=job.delivery,
            github_event=job.event,
            action=job.action,
            repository=job.repository,
            head_sha=job.head_sha,
        )
        return JSONResponse({"accepted": 1, "ignored": 0}, status_code=202)


def github_route(
    settings: Settings, enqueue: EnqueueJob, deliveries: Claims, handoff: Handoff | None = None
) -> Route:
    """The route for `create_http_app(extra_routes=...)`. `enqueue` hands a job to the
    pipeline; `deliveries` remembers X-GitHub-Delivery ids so a replay is refused."""
    receiver = GithubDeliveries(
        settings, enqueue, deliveries, handoff or Handoff(settings.publish_timeout)
    )
    return Route("/webhooks/github", guarded(SOURCE, receiver.receive), methods=["POST"])
