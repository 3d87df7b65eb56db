"""POST /events/sns: SNS HTTP(S) deliveries of S3 notifications.

Verified before anything in the message is used: signature (SignatureVersion
1 or 2), certificate host, topic allow list, timestamp. A subscription is
confirmed by GETting its SubscribeURL only after that URL passed its own host
check. A notification is acted on once: its MessageId is claimed in Redis for
as long as a timestamp stays acceptable (`sns.MAX_AGE`), so a replay within that
window, SNS's own retry of a delivery we took or anyone else's, starts nothing;
the claim is given back when the broker refuses the events, so SNS's retry of
that delivery still works. Answers: 202 queued, 200 confirmed or a replay, 400
not an SNS message, 403 forged or foreign, 503 the signing certificate could
not be fetched or the broker cannot take the events now (SNS retries).
"""

from __future__ import annotations

import urllib.request
from collections.abc import Awaitable, Callable

import structlog
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from worker import metrics
from worker.errors import BrokerUnavailable, CertificateUnavailable, MalformedEvent, SnsRejected
from worker.ingest.events import load_json, parse_records
from worker.ingest.handoff import Handoff
from worker.ingest.sns import (
    MAX_AGE,
    MAX_CLOCK_SKEW,
    CertificateCache,
    SnsMessage,
    confirmation_url,
    parse_sns,
    verify_sns,
)
from worker.model.events import ObjectEvent
from worker.once import Claims
from worker.settings import Settings

log = structlog.get_logger(__name__)
_CERTIFICATES = CertificateCache()


REPLAY_TTL = int((MAX_AGE + MAX_CLOCK_SKEW).total_seconds())
"""A MessageId is remembered as long as its message could still pass `verify_sns`."""

HandOver = Callable[[list[ObjectEvent]], Awaitable[Response]]


def _confirm(url: str) -> None:
    with urllib.request.urlopen(url, timeout=10) as response:
        response.read()


def refuse(status: int, reason: str, topic: str | None = None) -> Response:
    """The answer to a delivery we do not act on, logged (and counted) once."""
    metrics.EVENTS_REJECTED.labels("sns", str(status)).inc()
    log.warning("sns.rejected", status=status, reason=reason, topic=topic)
    return JSONResponse({"error": reason}, status_code=status)


def replay_key(message: SnsMessage) -> str:
    return f"sns-message:{message.topic_arn}:{message.message_id}"


async def handle_sns(
    request: Request,
    body: bytes,
    settings: Settings,
    hand_over: HandOver,
    replays: Claims | None = None,
    handoff: Handoff | None = None,
) -> Response:
    try:
        message = parse_sns(body)
    except SnsRejected as exc:
        return refuse(400, str(exc))
    header = request.headers.get("x-amz-sns-message-type")
    if header and header != message.type:
        return refuse(400, "x-amz-sns-message-type does not match the body")
    try:
        await run_in_threadpool(
            verify_sns,
            message,
            fetch_cert=_CERTIFICATES,
            cert_url_pattern=settings.sns_cert_url_pattern,
            topic_arns=settings.sns_topic_arns,
        )
    except CertificateUnavailable as exc:
        return refuse(503, str(exc))
    except SnsRejected as exc:
        return refuse(403, str(exc), topic=message.topic_arn)
    if message.type == "SubscriptionConfirmation":
        try:
            url = confirmation_url(message, settings.sns_subscribe_url_pattern)
            await run_in_threadpool(_confirm, url)
        except SnsRejected as exc:
            return refuse(403, str(exc), topic=message.topic_arn)
        except OSError as exc:
            return refuse(503, f"could not confirm: {exc}", topic=message.topic_arn)
        log.info("sns.subscribed", topic=message.topic_arn)
        return JSONResponse({"confirmed": message.topic_arn}, status_code=200)
    if message.type == "UnsubscribeConfirmation":
        log.warning("sns.unsubscribed", topic=message.topic_arn)
        return JSONResponse({"unsubscribed": message.topic_arn}, status_code=200)
    try:
        events = parse_records(load_json(message.message), "sns")
    except MalformedEvent as exc:
        return refuse(400, f"SNS Message is not an S3 notification: {exc}", topic=message.topic_arn)
    if replays is None or handoff is None:
        return await hand_over(events)
    return await once(message, events, hand_over, replays, handoff)


async def once(
    message: SnsMessage,
    events: list[ObjectEvent],
    hand_over: HandOver,
    replays: Claims,
    handoff: Handoff,
) -> Response:
    """Hand the events over unless this MessageId was already taken (200, nothing done)."""
    key = replay_key(message)
    token = await handoff.call(lambda: replays.claim(key, REPLAY_TTL), "redis")
    if token is None:
        log.info("sns.replay", message_id=message.message_id, topic=message.topic_arn)
        return JSONResponse({"duplicate": message.message_id}, status_code=200)
    response = await hand_over(events)
    if response.status_code >= 500:
        try:
            await handoff.call(lambda: replays.release(key, token), "redis")
        except BrokerUnavailable as exc:  # the claim lapses after REPLAY_TTL
            log.error("sns.release_failed", message_id=message.message_id, error=str(exc))
    return response
