"""Who may make the worker read an object: route authentication and the bucket allowlist.

Whoever can send an event can make the worker read, tag and report on any object
its credentials reach (a confused deputy). So the receiver starts only when every
route it serves authenticates its sender (a bearer token, an SNS topic list, the
GitHub webhook secret) and the buckets events may name are listed
(`TFCOMPAT_BUCKETS`). `TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS=1` is the one,
explicit way past that, and every start under it logs what is open.

Pure: settings in, reasons out. The HTTP app, the SQS bridge and the task apply it;
the rule itself is `worker.formats.access`'s, the one every reader goes through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from worker.errors import ConfigError
from worker.formats.access import bucket_allowed
from worker.model.events import ObjectEvent
from worker.settings import RECEIVER_ROUTES, Settings

OPT_OUT = "TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS=1"


@dataclass(frozen=True)
class BucketAllowlist:
    """`TFCOMPAT_BUCKETS`: entries `BUCKET` (any key in it) or `BUCKET/KEYGLOB`, each part
    an fnmatch glob matched case-sensitively (`models-*`, `ml-*/prod/*`). A key part ending
    in `/` is a prefix (`team/prod/` is `team/prod/*`). No entries: every bucket, which
    only the opt-out permits."""

    entries: tuple[str, ...]

    def allows(self, bucket: str, key: str) -> bool:
        return bucket_allowed(self.entries, bucket, key)

    def outside(self, events: Iterable[ObjectEvent]) -> list[ObjectEvent]:
        """The events that name an object the list does not allow."""
        return [event for event in events if not self.allows(event.bucket, event.key)]


def bucket_allowlist(settings: Settings) -> BucketAllowlist:
    return BucketAllowlist(tuple(settings.buckets))


def refused_message(events: list[ObjectEvent]) -> str:
    """One line naming what was refused (at most three objects)."""
    named = ", ".join(f"s3://{e.bucket}/{e.key}" for e in events[:3])
    more = f" and {len(events) - 3} more" if len(events) > 3 else ""
    return f"not in TFCOMPAT_BUCKETS: {named}{more}"


def open_routes(settings: Settings) -> list[str]:
    """What would let an unauthenticated sender in, one reason per route or list, for the
    routes this receiver serves (`TFCOMPAT_RECEIVER_ROUTES`)."""
    reasons = []
    token = settings.events_token
    has_token = token is not None and bool(token.get_secret_value())
    for route in settings.receiver_routes:
        if route in ("s3", "eventbridge") and not has_token:
            reasons.append(f"/events/{route} has no TFCOMPAT_EVENTS_TOKEN")
        elif route == "sns" and not settings.sns_topic_arns:
            reasons.append("/events/sns would confirm any topic (TFCOMPAT_SNS_TOPIC_ARNS is empty)")
        elif route == "github":
            secret = settings.github_webhook_secret
            if secret is None or not secret.get_secret_value():
                reasons.append("/webhooks/github has no TFCOMPAT_GITHUB_WEBHOOK_SECRET")
        elif route == "mlflow":
            secret = settings.mlflow_webhook_secret
            if secret is None or not secret.get_secret_value():
                reasons.append("/webhooks/mlflow has no TFCOMPAT_MLFLOW_WEBHOOK_SECRET")
    if reasons:
        reasons[-1] += (
            f" (or leave routes out of TFCOMPAT_RECEIVER_ROUTES: {','.join(RECEIVER_ROUTES)})"
        )
    return reasons + bucket_gaps(settings)


def bucket_gaps(settings: Settings) -> list[str]:
    """What every process that takes events needs (the SQS bridge's senders are whoever
    may send to its queue)."""
    if settings.buckets:
        return []
    return ["events may name any bucket (TFCOMPAT_BUCKETS is empty)"]


def require_closed(settings: Settings, reasons: list[str], process: str) -> list[str]:
    """ConfigError naming every open door, unless the opt-out is set; then the reasons,
    for the caller to log as a warning at every start."""
    if reasons and not settings.allow_unauthenticated_events:
        raise ConfigError(
            f"{process} will not start: {'; '.join(reasons)}. Set what is missing, or set "
            f"{OPT_OUT} to accept unauthenticated events"
        )
    return reasons
