"""POST /events/sns: SNS HTTP(S) deliveries of S3 notifications.

Verified before anything in the message is used: signature (SignatureVersion
1 or 2), certificate host, topic allow list, timestamp. A subscription is
confirmed by GETting its SubscribeURL only after that URL passed its own host
check. Answers: 202 queued, 200 confirmed, 400 not an SNS message, 403 forged
or foreign, 503 the signing certificate could not be fetched (SNS retries).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable

import structlog
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from worker.errors import CertificateUnavailable, MalformedEvent, SnsRejected
from worker.ingest.events import parse_records
from worker.ingest.sns import CertificateCache, confirmation_url, parse_sns, verify_sns
from worker.model.events import ObjectEvent
from worker.settings import Settings

log = structlog.get_logger(__name__)
_CERTIFICATES = CertificateCache()


class Rejected(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _confirm(url: str) -> None:
    with urllib.request.urlopen(url, timeout=10) as response:
        response.read()


async def handle_sns(
    request: Request,
    body: bytes,
    settings: Settings,
    hand_over: Callable[[list[ObjectEvent]], Response],
) -> Response:
    try:
        message = parse_sns(body)
    except SnsRejected as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    header = request.headers.get("x-amz-sns-message-type")
    if header and header != message.type:
        return JSONResponse(
            {"error": "x-amz-sns-message-type does not match the body"}, status_code=400
        )
    try:
        await run_in_threadpool(
            verify_sns,
            message,
            fetch_cert=_CERTIFICATES,
            cert_url_pattern=settings.sns_cert_url_pattern,
            topic_arns=settings.sns_topic_arns,
        )
    except CertificateUnavailable as exc:
        return JSONResponse({"error": str(exc)}, status_code=503)
    except SnsRejected as exc:
        log.warning("sns.rejected", reason=str(exc), topic=message.topic_arn)
        return JSONResponse({"error": str(exc)}, status_code=403)
    if message.type == "SubscriptionConfirmation":
        try:
            url = confirmation_url(message, settings.sns_subscribe_url_pattern)
            await run_in_threadpool(_confirm, url)
        except SnsRejected as exc:
            return JSONResponse({"error": str(exc)}, status_code=403)
        except OSError as exc:
            return JSONResponse({"error": f"could not confirm: {exc}"}, status_code=503)
        log.info("sns.subscribed", topic=message.topic_arn)
        return JSONResponse({"confirmed": message.topic_arn}, status_code=200)
    if message.type == "UnsubscribeConfirmation":
        log.warning("sns.unsubscribed", topic=message.topic_arn)
        return JSONResponse({"unsubscribed": message.topic_arn}, status_code=200)
    try:
        events = parse_records(json.loads(message.message), "sns")
    except (ValueError, MalformedEvent) as exc:
        return JSONResponse(
            {"error": f"SNS Message is not an S3 notification: {exc}"}, status_code=400
        )
    return hand_over(events)
