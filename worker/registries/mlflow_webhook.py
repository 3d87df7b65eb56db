"""MLflow Model Registry webhook deliveries as jobs: signature, freshness, payload; pure.

MLflow (3.x, `mlflow/webhooks/delivery.py`) signs a delivery the Standard Webhooks
way: headers `X-MLflow-Delivery-Id` (a UUID), `X-MLflow-Timestamp` (Unix seconds)
and `X-MLflow-Signature: v1,<base64 HMAC-SHA256>`, the HMAC taken with the
webhook's secret over `<delivery id>.<timestamp>.<raw body>`. The body is
`{"entity", "action", "timestamp", "data"}`; `data` of `model_version.created`
holds `name`, `version`, `source`, `run_id`, `tags` and `description`.

A delivery is accepted only when its signature matches and its timestamp is
within `tolerance` seconds of our clock: an old delivery replayed later fails
the clock, a replay inside the window is caught by its delivery id (the route
remembers ids for longer than the window).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from typing import Any

from worker.errors import MalformedEvent
from worker.model.registry import RegistryJob

SOURCE = "mlflow"
SIGNATURE_HEADER = "x-mlflow-signature"
TIMESTAMP_HEADER = "x-mlflow-timestamp"
DELIVERY_HEADER = "x-mlflow-delivery-id"
SIGNATURE_VERSION = "v1"
DEFAULT_TOLERANCE = 300  # seconds: the Standard Webhooks recommendation

CHECKED_EVENTS = {("model_version", "created")}
"""What starts a check. Tag and alias events do not: our own tag writes fire
`model_version.tag_set`, and acting on them would loop."""


def signature(secret: bytes, delivery_id: str, timestamp: str, body: bytes) -> str:
    """The `v1,<base64>` value MLflow sends for this delivery."""
    signed = delivery_id.encode() + b"." + timestamp.encode() + b"." + body
    digest = hmac.new(secret, signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"


def signature_valid(
    secret: bytes, delivery_id: str, timestamp: str, body: bytes, header: str | None
) -> bool:
    """Whether one of the header's space-separated `v1,<base64>` signatures is ours for
    this delivery, compared in constant time (Standard Webhooks allows several while a
    secret is rotated; MLflow sends one)."""
    if not header:
        return False
    expected = signature(secret, delivery_id, timestamp, body).encode()
    found = False
    for candidate in header.split():
        found |= hmac.compare_digest(expected, candidate.encode())
    return found


def timestamp_fresh(timestamp: str, now: float, tolerance: int) -> bool:
    """Whether a `X-MLflow-Timestamp` is Unix seconds within `tolerance` of `now`."""
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        return False
    return abs(now - int(timestamp)) <= tolerance


def event_of(payload: Any) -> tuple[str, str]:
    """(entity, action) of a delivery body; MalformedEvent if it has none."""
    if not isinstance(payload, dict):
        raise MalformedEvent("an MLflow webhook body is a JSON object")
    entity, action = payload.get("entity"), payload.get("action")
    if not isinstance(entity, str) or not isinstance(action, str):
        raise MalformedEvent("MLflow webhook body without entity or action")
    return entity, action


def job_from_delivery(delivery_id: str, payload: Any) -> RegistryJob | None:
    """The check a verified delivery asks for, or None for events we do not act on."""
    if event_of(payload) not in CHECKED_EVENTS:
        return None
    data = payload.get("data")
    if not isinstance(data, dict):
        raise MalformedEvent("MLflow model_version.created without data")
    name, version = data.get("name"), data.get("version")
    if isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    if not isinstance(name, str) or not name or not isinstance(version, str) or not version:
        raise MalformedEvent("MLflow model_version.created without name or version")
    return RegistryJob(SOURCE, name, version, delivery_id)
