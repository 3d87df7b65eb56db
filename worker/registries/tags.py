"""Which tags we write on a registered model version, and which we may remove; pure.

Ours are `tfcompat.status`, `tfcompat.releases`, `tfcompat.report` (the report's
`s3://` URL, when reports are stored), `tfcompat.fleet` (the digest of the fleet
the verdict was computed against: the reconciler re-checks a version whose
digest is not the current fleet's) and one `tfcompat.consumer.<name>` per fleet
consumer that cannot serve the version (its status). A registry allows far more
tags than S3's ten, so none of ours is ever dropped for room.

We never remove or change a tag outside our namespace. Removals are decided from
the tags the version carries, never from a stored report: the report may already
be the one this very check wrote (a check killed between its report and its
tags), and then a consumer the fleet dropped would keep its tag for good. Every
`tfcompat.consumer.` key on the version that this check does not write is ours
and stale (the namespace is ours, as `tfcompat:` keys are on S3 objects), and is
removed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from worker.compat.ranges import tag_value

PREFIX = "tfcompat."
STATUS = "tfcompat.status"
RELEASES = "tfcompat.releases"
REPORT = "tfcompat.report"
FLEET = "tfcompat.fleet"
CONSUMER = "tfcompat.consumer."
MAX_VALUE = 250  # SageMaker's tag value limit (256) with room; MLflow takes more
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9_.\- /]")  # what MLflow and SageMaker tag keys share
FAILING = frozenset({"incompatible", "at-risk", "unknown", "invalid"})


def consumer_key(name: str) -> str:
    return CONSUMER + _KEY_UNSAFE.sub("_", name)[:100]


@dataclass(frozen=True)
class TagPlan:
    """What to change on the version: `put` (key -> value) and `delete` (keys)."""

    put: dict[str, str]
    delete: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.put and not self.delete


def version_tags(document: Mapping[str, Any], report_url: str | None) -> dict[str, str]:
    """Our tags for a checked version, from its report document."""
    ours = {
        STATUS: str(document["status"]),
        RELEASES: tag_value(document.get("compatible_releases") or []),
    }
    if report_url:
        ours[REPORT] = report_url
    digest = (document.get("fleet") or {}).get("digest")
    if digest:
        ours[FLEET] = str(digest)
    verdicts = (document.get("fleet") or {}).get("verdicts") or {}
    for consumer, status in sorted(verdicts.items()):
        if status in FAILING:
            ours[consumer_key(consumer)] = status
    return {k: v[:MAX_VALUE] for k, v in ours.items()}


def plan_tags(existing: Mapping[str, str], ours: Mapping[str, str]) -> TagPlan:
    """The writes that make `existing` carry `ours`: only changed values are put (in
    order, `tfcompat.status` last). Deleted: the consumer tags the version carries that
    this check does not write; nothing else."""
    changed = sorted((k for k in ours if existing.get(k) != ours[k]), key=lambda k: k == STATUS)
    put = {k: ours[k] for k in changed}
    delete = tuple(sorted(k for k in existing if k.startswith(CONSUMER) and k not in ours))
    return TagPlan(put, delete)


def fleet_of(tags: Mapping[str, str]) -> str | None:
    """The fleet digest a version's tags were computed against; None if never tagged."""
    return tags.get(FLEET)
