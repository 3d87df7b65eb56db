"""Which tags we write on a registered model version, and which we may remove; pure.

Ours are `tfcompat.status`, `tfcompat.releases`, `tfcompat.report` (the report's
`s3://` URL, when reports are stored) and one `tfcompat.consumer.<name>` per
fleet consumer that cannot serve the version (its status). A registry allows
far more tags than S3's ten, so none of ours is ever dropped for room.

We never remove or change a tag we did not write. A consumer tag is removed
when it names a consumer of the fleet we check against (it serves the version
now), or when the previous check's report lists it among the tags it wrote (a
consumer that has since left the fleet). Without a stored report, a tag naming
a consumer that left the fleet stays: we can no longer tell it from one a
person set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from worker.compat.ranges import tag_value

PREFIX = "tfcompat."
STATUS = "tfcompat.status"
RELEASES = "tfcompat.releases"
REPORT = "tfcompat.report"
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
    verdicts = (document.get("fleet") or {}).get("verdicts") or {}
    for consumer, status in sorted(verdicts.items()):
        if status in FAILING:
            ours[consumer_key(consumer)] = status
    return {k: v[:MAX_VALUE] for k, v in ours.items()}


def plan_tags(
    existing: Mapping[str, str],
    ours: Mapping[str, str],
    fleet: Iterable[str],
    written_before: Iterable[str] = (),
) -> TagPlan:
    """The writes that make `existing` carry `ours`: only changed values are put (in
    order, `tfcompat.status` last). Deleted: our consumer tags for consumers of `fleet`
    that no longer fail, and the tags our previous check wrote (`written_before`, from
    its report) that this one does not; nothing else."""
    changed = sorted((k for k in ours if existing.get(k) != ours[k]), key=lambda k: k == STATUS)
    put = {k: ours[k] for k in changed}
    known = {consumer_key(name) for name in fleet}
    ours_before = {k for k in written_before if k.startswith(PREFIX)}
    delete = tuple(
        sorted(
            k
            for k in existing
            if k not in ours and ((k in known and k.startswith(CONSUMER)) or k in ours_before)
        )
    )
    return TagPlan(put, delete)
