"""The HTTP receiver: verify, parse, enqueue, answer 202. Nothing slow happens here.

Routes: POST /events/s3 (S3 and MinIO webhook `Records`), /events/sns (SNS
HTTP deliveries, signature-verified, replays dropped by MessageId),
/events/eventbridge (EventBridge API destinations: S3 events, and SageMaker model
package events, `ingest.packages`), GET /healthz; /webhooks/github and
/webhooks/mlflow are their own modules' routes. Only the routes named by
`TFCOMPAT_RECEIVER_ROUTES`. This is the public listener (GitHub, MLflow and SNS
reach it): the fleet page and /metrics are never served here, but on the page's
listener and the metrics exporter. It starts only when each of them
authenticates its sender and `TFCOMPAT_BUCKETS` lists the buckets events may name
(`ingest.access`), unless `TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS` says otherwise.
Every delivery is authenticated before its body is parsed; a malformed body is
rejected with 4xx, an object outside the allowlist with 403, each logged and
counted, and neither enqueues anything. 202 means the broker has the
task (Redis answered, RabbitMQ confirmed); when it does not within
`publish_timeout` the answer is 503, so the sender retries and the event is not
lost. Broker calls never run on the event loop (`ingest.handoff`), so a broker
that is down or hangs slows nothing but the delivery waiting on it.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable

import structlog
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from worker import metrics
from worker.errors import BrokerUnavailable, MalformedEvent
from worker.ingest.access import (
    BucketAllowlist,
    bucket_allowlist,
    open_routes,
    refused_message,
    require_closed,
)
from worker.ingest.events import Enqueue, EventFilter, parse_eventbridge_body, parse_s3_body
from worker.ingest.gate import refused_events
from worker.ingest.handoff import Handoff
from worker.ingest.packages import EnqueueJob, hand_over_package, model_package_event
from worker.ingest.sns_route import handle_sns
from worker.model.events import ObjectEvent
from worker.model.health import healthy
from worker.once import Claims
from worker.settings import Settings

log = structlog.get_logger(__name__)

HealthCheck = Callable[[], dict[str, str]]


class Rejected(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def event_filter(settings: Settings) -> EventFilter:
    return EventFilter(tuple(settings.model_patterns), (settings.report_prefix,))


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise Rejected(413, f"body of {declared} bytes is over the {limit}-byte limit")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise Rejected(413, f"body is over the {limit}-byte limit")
    return body


def check_token(request: Request, settings: Settings) -> None:
    """Bearer-token auth for /events/* (constant time). Without TFCOMPAT_EVENTS_TOKEN the
    receiver starts only under the explicit opt-out, and then takes any sender."""
    if settings.events_token is None or not settings.events_token.get_secret_value():
        return
    expected = f"Bearer {settings.events_token.get_secret_value()}"
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise Rejected(401, "missing or wrong bearer token")


def broker_refused(source: str, exc: Exception) -> JSONResponse:
    log.error("enqueue.failed", source=source, error=str(exc))
    metrics.EVENTS_REJECTED.labels(source, "broker").inc()
    return JSONResponse({"error": "cannot enqueue now; retry"}, status_code=503)


async def hand_over(
    events: list[ObjectEvent],
    source: str,
    settings: Settings,
    enqueue: Enqueue,
    handoff: Handoff,
    allowlist: BucketAllowlist | None = None,
) -> JSONResponse:
    """Enqueue the events that start work; 202 once the broker has every one of them.
    A delivery naming any object outside the allowlist is refused whole (403)."""
    outside = refused_events(allowlist or bucket_allowlist(settings), events, "receiver")
    if outside:
        reason = refused_message(outside)
        metrics.EVENTS_REJECTED.labels(source, "bucket").inc()
        log.warning("delivery.refused_bucket", source=source, reason=reason)
        return JSONResponse({"error": reason}, status_code=403)
    wanted = event_filter(settings).select(events)
    metrics.EVENTS_RECEIVED.labels(source).inc(len(events))
    metrics.EVENTS_IGNORED.labels(source).inc(len(events) - len(wanted))

    def publish() -> None:
        for event in wanted:
            enqueue(event)

    if wanted:
        try:
            await handoff.call(publish)
        except BrokerUnavailable as exc:
            return broker_refused(source, exc)
    log.info(
        "events.accepted", source=source, accepted=len(wanted), ignored=len(events) - len(wanted)
    )
    return JSONResponse(
        {"accepted": len(wanted), "ignored": len(events) - len(wanted)}, status_code=202
    )


Handler = Callable[[Request], Awaitable[Response]]


def guarded(source: str, handler: Handler) -> Handler:
    async def route(request: Request) -> Response:
        try:
            return await handler(request)
        except Rejected as exc:
            metrics.EVENTS_REJECTED.labels(source, str(exc.status)).inc()
            log.warning("delivery.rejected", source=source, status=exc.status, reason=exc.reason)
            return JSONResponse({"error": exc.reason}, status_code=exc.status)
        except MalformedEvent as exc:
            metrics.EVENTS_REJECTED.labels(source, "malformed").inc()
            log.warning("delivery.malformed", source=source, reason=str(exc))
            return JSONResponse({"error": str(exc)}, status_code=400)
        except BrokerUnavailable as exc:
            return broker_refused(source, exc)

    return route


class HealthProbe:
    """`health()` on a thread of its own, awaited for at most `timeout` seconds: a
    probe of a hung broker answers "error: timeout" instead of holding /healthz, and
    concurrent requests share the one probe in flight instead of starting more."""

    def __init__(self, health: HealthCheck, timeout: float) -> None:
        self._health = health
        self._timeout = timeout
        self._running: asyncio.Future[dict[str, str]] | None = None

    async def __call__(self) -> dict[str, str]:
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(asyncio.to_thread(self._health))
        try:
            return await asyncio.wait_for(asyncio.shield(self._running), self._timeout)
        except TimeoutError:
            return {"probe": f"error: timeout after {self._timeout:g}s"}
        except Exception as exc:
            return {"probe": f"error: {type(exc).__name__}"}


def create_http_app(
    settings: Settings,
    enqueue: Enqueue,
    health: HealthCheck,
    extra_routes: list[Route] | None = None,
    *,
    replays: Claims | None = None,
    handoff: Handoff | None = None,
    registry_enqueue: EnqueueJob | None = None,
) -> Starlette:
    """The receiver. `enqueue` hands events to the pipeline and `health` probes what
    the receiver depends on; `replays` remembers SNS MessageIds (None: SNS replays are
    not detected); `registry_enqueue` takes SageMaker model package events arriving on
    /events/eventbridge (None: they are parsed as object events, and ignored); the
    process that runs it wires them (`cli.processes`), and passes the GitHub and MLflow
    routes in `extra_routes` only when they are among the routes served.

    ConfigError when a route served would take unauthenticated events or no bucket
    allowlist is set, unless the opt-out is; under it, a warning names what is open."""
    opened = require_closed(settings, open_routes(settings), "the receiver")
    if opened:
        log.warning(
            "receiver.unauthenticated",
            open=opened,
            note="TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS is set: anyone who reaches this "
            "receiver can make the worker read and tag objects",
        )
    allowlist = bucket_allowlist(settings)
    limit = settings.max_event_bytes
    handoff = handoff or Handoff(settings.publish_timeout)
    probe = HealthProbe(health, timeout=max(1.0, settings.publish_timeout))

    async def s3_events(request: Request) -> Response:
        check_token(request, settings)
        body = await read_body(request, limit)
        return await hand_over(parse_s3_body(body), "s3", settings, enqueue, handoff, allowlist)

    async def eventbridge_events(request: Request) -> Response:
        check_token(request, settings)
        body = await read_body(request, limit)
        if registry_enqueue is not None and (package := model_package_event(body)) is not None:
            return await hand_over_package(package, registry_enqueue, handoff)
        events = parse_eventbridge_body(body)
        return await hand_over(events, "eventbridge", settings, enqueue, handoff, allowlist)

    async def sns_events(request: Request) -> Response:
        body = await read_body(request, limit)

        async def sns_hand_over(events: list[ObjectEvent]) -> Response:
            return await hand_over(events, "sns", settings, enqueue, handoff, allowlist)

        return await handle_sns(request, body, settings, sns_hand_over, replays, handoff)

    async def healthz(request: Request) -> Response:
        checks = await probe()
        ok = healthy(checks)
        return JSONResponse(
            {"status": "ok" if ok else "degraded", "checks": checks}, status_code=200 if ok else 503
        )

    events = {
        "s3": Route("/events/s3", guarded("s3", s3_events), methods=["POST"]),
        "eventbridge": Route(
            "/events/eventbridge", guarded("eventbridge", eventbridge_events), methods=["POST"]
        ),
        "sns": Route("/events/sns", guarded("sns", sns_events), methods=["POST"]),
    }
    routes = [
        *(events[name] for name in settings.receiver_routes if name in events),
        Route("/healthz", healthz, methods=["GET"]),
        *(extra_routes or []),
    ]
    return Starlette(routes=routes)
