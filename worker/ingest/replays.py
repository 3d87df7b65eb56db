"""Enqueue a signed delivery once: claim its id, hand the job over, release the claim
when the broker refused it (so the sender's retry is not taken for a replay).

The GitHub and MLflow webhook routes share it; SNS has its own, keyed by MessageId
(`ingest.sns_route`)."""

from __future__ import annotations

from collections.abc import Callable

import structlog
from starlette.responses import JSONResponse, Response

from worker.errors import BrokerUnavailable
from worker.ingest.app import Rejected, broker_refused
from worker.ingest.handoff import Handoff
from worker.once import Claims

log = structlog.get_logger(__name__)


async def enqueue_once(
    source: str,
    delivery: str,
    ttl: int,
    publish: Callable[[], None],
    claims: Claims,
    handoff: Handoff,
) -> Response | None:
    """None once `publish` put the job with the broker; else the answer to send (503 when
    Redis or the broker cannot answer now). Rejected(409) when the delivery id was taken."""
    key = f"{source}-delivery:{delivery}"
    try:
        token = await handoff.call(lambda: claims.claim(key, ttl), "redis")
    except BrokerUnavailable as exc:
        log.error(f"{source}.replay_check_failed", error=str(exc))
        return JSONResponse({"error": "cannot check for replays now; retry"}, status_code=503)
    if token is None:
        raise Rejected(409, f"delivery {delivery} was already received")
    try:
        await handoff.call(publish)
    except BrokerUnavailable as exc:
        try:
            await handoff.call(lambda: claims.release(key, token), "redis")
        except BrokerUnavailable as lost:  # the claim lapses after its TTL
            log.error(f"{source}.release_failed", delivery=delivery, error=str(lost))
        return broker_refused(source, exc)
    return None
