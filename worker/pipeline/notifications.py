"""Notifications wired for the pipeline: Slack and Redis claims behind the notify ports.

`notification_hook` tells an upload's owner after its result is recorded;
`breakage_notifier` tells each owner once about models a fleet change broke.
Routing can use the object's tags and metadata, read only when a route needs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog

from worker.errors import TfcompatError
from worker.model.events import ObjectEvent
from worker.model.outcome import Outcome
from worker.notify.dispatch import (
    Labels,
    Notifier,
    group_by_owner,
    load_owners_or_default,
    notify_owners,
)
from worker.notify.owners import Owners
from worker.once import Claims
from worker.settings import Settings, state_redis_url
from worker.sinks.ports import ObjectStore

log = structlog.get_logger(__name__)


def object_labels(
    store: ObjectStore,
    owners: Owners,
    tags_known: Mapping[str, str] | None = None,
    metadata_known: Mapping[str, str] | None = None,
) -> Labels:
    """Tags and metadata of a document's object version, fetched only if a route uses them
    and not already known: the tags just written with ours, the metadata the object's own
    GET returned (so routing costs no request of its own)."""

    def labels(document: Mapping[str, Any]) -> tuple[Mapping[str, str], Mapping[str, str]]:
        obj = document.get("object") or {}
        bucket, key, version = str(obj.get("bucket")), str(obj.get("key")), obj.get("version_id")
        tags: dict[str, str] = {}
        metadata: Mapping[str, str] = {}
        if owners.uses_tags and tags_known is not None:
            tags = dict(tags_known)
        elif owners.uses_tags:
            tags = {t["Key"]: t["Value"] for t in store.get_tags(bucket, key, version)}
        if owners.uses_metadata and metadata_known is not None:
            metadata = metadata_known
        elif owners.uses_metadata:
            metadata = store.head(bucket, key, version).metadata
        return tags, metadata

    return labels


def notification_hook(
    settings: Settings,
    store: ObjectStore,
    notifier: Notifier | None = None,
    claims: Claims | None = None,
) -> Callable[[ObjectEvent, Outcome], None] | None:
    """The `Services.hooks` entry: after an upload's result is recorded, tell its owner.

    None (notifications off) when there is neither an owners file nor
    TFCOMPAT_SLACK_WEBHOOK_URL: nobody asked to be told."""
    from worker.once import RedisClaims
    from worker.sinks.slack import SlackNotifier

    if not Path(settings.owners).exists() and settings.slack_webhook_url is None:
        log.info("notify.off", note="no owners file and no TFCOMPAT_SLACK_WEBHOOK_URL")
        return None
    owners = load_owners_or_default(settings.owners)
    notifier = notifier or SlackNotifier(settings)
    claims = claims or RedisClaims.from_url(state_redis_url(settings))

    def notify_owner(event: ObjectEvent, outcome: Outcome) -> None:
        if outcome.action != "checked" or outcome.document is None:
            return
        document = {**outcome.document, "report": outcome.report}
        known = outcome.object_tags or None
        labels = object_labels(store, owners, known, outcome.object_metadata)
        try:
            groups = group_by_owner([document], owners, labels)
        except TfcompatError as exc:  # tags or metadata unreadable: route on location alone
            log.warning("notify.labels_unavailable", error=str(exc))
            groups = group_by_owner([document], owners)
        notify_owners(
            groups,
            owners,
            notifier,
            claims,
            ttl=settings.notify_dedupe_ttl,
            lease=settings.notify_lease,
        )

    return notify_owner


def breakage_notifier(
    settings: Settings,
    store: ObjectStore,
    notifier: Notifier | None = None,
    claims: Claims | None = None,
) -> tuple[Any, Any]:
    """The router and notifier the fleet-change re-evaluation (`pipeline.reevaluate`) uses:
    models routed as uploads are, and each owner told once about all its newly broken
    models, from their re-written reports. (None, None) when notifications are off."""
    from worker.once import RedisClaims
    from worker.sinks.slack import SlackNotifier

    if not Path(settings.owners).exists() and settings.slack_webhook_url is None:
        return None, None
    owners = load_owners_or_default(settings.owners)
    notifier = notifier or SlackNotifier(settings)
    claims = claims or RedisClaims.from_url(state_redis_url(settings))
    labels = object_labels(store, owners)

    def route(model: Any) -> list[str]:
        document = {"object": {"bucket": model.bucket, "key": model.key}}
        document["object"]["version_id"] = model.version_id
        try:
            tags, metadata = labels(document)
        except TfcompatError:
            tags, metadata = {}, {}
        return [owners.route(model.bucket, model.key, tags, metadata).owner.name]

    def notify(grouped: Mapping[str, Sequence[Any]]) -> None:
        documents: dict[str, list[Mapping[str, Any]]] = {}
        for owner, impacts in grouped.items():
            for impact in impacts:
                model = impact.model
                report = store.get_json(model.report_bucket, model.report_key)
                if report is not None:
                    documents.setdefault(owner, []).append({**report, "report": model.report_key})
        notify_owners(
            documents,
            owners,
            notifier,
            claims,
            ttl=settings.notify_dedupe_ttl,
            reason="fleet change",
            lease=settings.notify_lease,
        )

    return route, notify
