"""Telling owners: the Notifier port, at-most-once delivery, and the pipeline hook.

`notify_owners` is the one function every trigger calls: the pipeline hook
after an upload is checked (one model), and the fleet-change re-evaluation
(many models, grouped with `group_by_owner`): each owner gets ONE message per
destination covering every model it has not been told about yet.

One message per (destination, artifact version, verdict): each model is
claimed (Redis `SET NX`, see `worker.once`) as a short lease ("sending") before
posting, renewed while the post runs, marked "sent" for `notify_dedupe_ttl`
once Slack took the message, and released when it did not, so a redelivered
task may try again. A task redelivered because its worker was killed mid-send
finds the lease still held, waits for it to lapse, and sends: no message is
lost. Slack taking the message and the process dying before marking it sent is
closed where the notifier can look (a channel with a bot token): every message
carries its delivery id in Slack's message `metadata`, each claim's first attempt
is recorded, and a later attempt first asks the notifier whether that delivery
is already in the channel (`Notifier.delivered`), confirming instead of sending
again. Incoming webhooks cannot be asked: there, that one window remains and the
redelivery sends a second message. A notification never fails
the pipeline: errors are logged and counted (`tfcompat_notification_failures_total`),
and a destination that is permanently broken is logged once an hour, not
on every model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from worker import metrics
from worker.errors import DestinationBroken, TfcompatError
from worker.notify.messages import (
    Message,
    artifact_version,
    model_url,
    owner_message,
    verdict,
)
from worker.notify.owners import Owners, SlackDestination, default_owners, load_owners
from worker.once import Claims, leased, take

if TYPE_CHECKING:
    pass

log = structlog.get_logger(__name__)
BROKEN_LOG_TTL = 3600  # a broken destination is logged at most once per this many seconds

Labels = Callable[[Mapping[str, Any]], tuple[Mapping[str, str], Mapping[str, str]]]
"""A document's object tags and user metadata, for routes that test them."""


class Notifier(Protocol):
    def send(self, destination: SlackDestination, message: Message, delivery: str) -> None:
        """Deliver or raise: TransientError (may work later), DestinationBroken (will
        not), TfcompatError (the message itself was refused). `delivery` travels with
        the message where the destination keeps it (message metadata)."""
        ...

    def delivered(self, destination: SlackDestination, delivery: str) -> bool | None:
        """Whether a message with this delivery id is already at the destination; None
        when the destination cannot be asked (incoming webhooks). Raises as `send`."""
        ...


@dataclass
class MemoryNotifier:
    """Records messages instead of sending them; `fail` makes a destination raise.
    Channels remember delivery ids, webhooks cannot be asked (as on Slack)."""

    sent: list[tuple[SlackDestination, Message]] = field(default_factory=list)
    fail: dict[str, Exception] = field(default_factory=dict)
    deliveries: set[tuple[str, str]] = field(default_factory=set)

    def send(self, destination: SlackDestination, message: Message, delivery: str) -> None:
        error = self.fail.get(destination.key)
        if error is not None:
            raise error
        self.sent.append((destination, message))
        self.deliveries.add((destination.key, delivery))

    def delivered(self, destination: SlackDestination, delivery: str) -> bool | None:
        if destination.webhook:
            return None
        return (destination.key, delivery) in self.deliveries


@dataclass(frozen=True)
class Delivery:
    owner: str
    destination: str  # SlackDestination.key: no secret in it
    models: tuple[str, ...]
    result: str  # "sent" | "duplicate" | "failed" | "broken"
    error: str | None = None


def dedupe_key(destination: SlackDestination, document: Mapping[str, Any]) -> str:
    identity = f"{destination.key}|{artifact_version(document)}|{verdict(document)}"
    return "slack:" + hashlib.sha256(identity.encode()).hexdigest()[:32]


def delivery_id(keys: Sequence[str]) -> str:
    """The id one message carries: the same models for the same destination, the same id."""
    return hashlib.sha256("|".join(sorted(keys)).encode()).hexdigest()[:32]


def _tried_before(claims: Claims, keys: Sequence[str], ttl: int) -> bool:
    """Record this attempt at each key; True when some key had been attempted already
    (a process may have died after Slack took it)."""
    first = [claims.claim(f"{key}:tried", ttl) is not None for key in keys]
    return not all(first)


def group_by_owner(
    documents: Sequence[Mapping[str, Any]], owners: Owners, labels: Labels | None = None
) -> dict[str, list[Mapping[str, Any]]]:
    """Route each report document to its owner, keeping those whose status the route
    notifies. Documents are stored reports (`pipeline.process.build_document`)."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for document in documents:
        tags, metadata = labels(document) if labels else ({}, {})
        routing = owners.route_url(model_url(document), tags, metadata)
        if routing.note:
            log.warning("owners.route", note=routing.note)
        if routing.wants(str(document.get("status"))):
            grouped.setdefault(routing.owner.name, []).append(document)
    return grouped


DEFAULT_LEASE = 30  # seconds; settings.notify_lease in the pipeline


def _claim_fresh(
    destination: SlackDestination,
    documents: Sequence[Mapping[str, Any]],
    claims: Claims,
    lease: int,
) -> list[tuple[Mapping[str, Any], str, str]]:
    fresh = []
    for document in documents:
        key = dedupe_key(destination, document)
        token = take(claims, key, lease)
        if token is not None:
            fresh.append((document, key, token))
    return fresh


def _log_broken(destination: SlackDestination, owner: str, error: str, claims: Claims) -> None:
    try:
        first = claims.claim(f"slack-broken:{destination.key}", BROKEN_LOG_TTL) is not None
    except TfcompatError:
        first = True
    if first:
        log.error("slack.destination_broken", owner=owner, destination=destination.key, error=error)
    else:
        log.debug("slack.destination_broken", owner=owner, destination=destination.key)


def notify_owners(
    documents_by_owner: Mapping[str, Sequence[Mapping[str, Any]]],
    owners: Owners,
    notifier: Notifier,
    claims: Claims,
    *,
    ttl: int,
    reason: str = "",
    lease: int = DEFAULT_LEASE,
) -> list[Delivery]:
    """One message per owner and destination about the models it was not yet told of.

    `reason` says what triggered it ("fleet change: serving-prod upgraded to 2.15")
    and is shown in the footer. `lease`: seconds a claim lasts unless renewed (a killed
    sender's claim lapses after it). Never raises for a delivery problem: each outcome
    is returned and logged."""
    deliveries: list[Delivery] = []
    for name, documents in documents_by_owner.items():
        owner = owners.owners.get(name)
        if owner is None:
            log.warning("notify.unknown_owner", owner=name)
            continue
        for destination in owner.slack:
            try:
                fresh = _claim_fresh(destination, documents, claims, lease)
            except TfcompatError as exc:
                log.error("notify.claims_unavailable", owner=name, error=str(exc))
                metrics.NOTIFY_FAILURES.labels("slack").inc()
                deliveries.append(Delivery(name, destination.key, (), "failed", str(exc)))
                continue
            models = tuple(artifact_version(d) for d, _, _ in fresh)
            if not fresh:
                deliveries.append(Delivery(name, destination.key, models, "duplicate"))
                continue
            message = owner_message([d for d, _, _ in fresh], owner.team, reason)
            keys = [key for _, key, _ in fresh]
            delivery = delivery_id(keys)
            try:
                with leased(claims, [(key, token) for _, key, token in fresh], lease):
                    again = _tried_before(claims, keys, ttl)
                    if again and notifier.delivered(destination, delivery):
                        log.info(
                            "slack.already_delivered",
                            destination=destination.key,
                            delivery=delivery,
                        )
                    else:
                        notifier.send(destination, message, delivery)
            except TfcompatError as exc:
                for _, key, token in fresh:
                    _release(claims, key, token)
                metrics.NOTIFY_FAILURES.labels("slack").inc()
                broken = isinstance(exc, DestinationBroken)
                if broken:
                    _log_broken(destination, name, str(exc), claims)
                else:
                    log.error(
                        "slack.failed", owner=name, destination=destination.key, error=str(exc)
                    )
                result = "broken" if broken else "failed"
                deliveries.append(Delivery(name, destination.key, models, result, str(exc)))
                continue
            for _, key, token in fresh:
                _confirm(claims, key, token, ttl)
            log.info("slack.sent", owner=name, destination=destination.key, models=list(models))
            deliveries.append(Delivery(name, destination.key, models, "sent"))
    return deliveries


def _release(claims: Claims, key: str, token: str) -> None:
    try:
        claims.release(key, token)
    except TfcompatError as exc:  # the lease then lapses on its own
        log.warning("notify.release_failed", error=str(exc))


def _confirm(claims: Claims, key: str, token: str, ttl: int) -> None:
    try:
        claims.confirm(key, token, ttl)
    except TfcompatError as exc:  # sent already; a redelivery after the lease sends again
        log.error("notify.confirm_failed", error=str(exc))


def load_owners_or_default(path: str) -> Owners:
    """The owners file, or everyone's models to TFCOMPAT_SLACK_WEBHOOK_URL when it is absent."""
    if not Path(path).exists():
        log.warning("owners.missing", path=path, note="notifying TFCOMPAT_SLACK_WEBHOOK_URL only")
        return default_owners()
    return load_owners(path)
