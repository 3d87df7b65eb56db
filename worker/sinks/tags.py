"""S3 object tags: ours merged into the object's own, never at their expense.

An object has at most 10 tags. We write up to four, named in `OURS`, and never
remove or change a tag we did not write: a user's own `tfcompat:approved-by`
is theirs, only these exact keys are ours. `tfcompat:unsafe` (the ops that
should never be served) is written only when the model holds such ops, and then
in place of `tfcompat:graph-def` (still in the report), so we never hold more
than four. When the object's own tags leave no room for all of ours, ours are
written in priority order and the rest are left out (`dropped`; the report
lists all of ours).

The fleet digest the verdict was computed against rides at the end of the third
tag's value, ` fleet=<digest>` (`tfcompat:graph-def`, or `tfcompat:unsafe` where
that takes its place; a model without a graph version gets a graph-def tag of
the digest alone), so no fifth tag is needed: the reconciler reads it back
(`fleet_of`) to find objects tagged under another fleet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_TAGS = 10
MAX_VALUE = 256
PREFIX = "tfcompat:"
STATUS, RELEASES, GRAPH_DEF, REPORT, UNSAFE = (
    "tfcompat:status",
    "tfcompat:releases",
    "tfcompat:graph-def",
    "tfcompat:report",
    "tfcompat:unsafe",
)
PRIORITY = (STATUS, UNSAFE, RELEASES, GRAPH_DEF, REPORT)
MAX_OURS = 4
OURS = frozenset(PRIORITY)
_NOT_ALLOWED = re.compile(r"[^\w .:/=+\-@]")  # S3: letters, digits, spaces and + - = . _ : / @

Tag = dict[str, str]  # boto3's {"Key": ..., "Value": ...}
FLEET_MARK = "fleet="
_FLEET_AT_END = re.compile(r"(?:^| )fleet=([0-9a-f]{1,64})$")


def tag_safe(value: str) -> str:
    """A value S3 accepts: disallowed characters become '_', at most 256 characters."""
    return _NOT_ALLOWED.sub("_", value)[:MAX_VALUE]


def with_fleet(value: str | None, digest: str) -> str:
    """`value` (shortened to make room) followed by the fleet digest."""
    suffix = f"{FLEET_MARK}{digest}"
    body = tag_safe(value or "")[: MAX_VALUE - len(suffix) - 1].rstrip()
    return f"{body} {suffix}" if body else suffix


def fleet_of(tags: Sequence[Tag]) -> str | None:
    """The fleet digest our tags on an object were computed against; None when the
    object carries none (never checked, or tagged before digests were written, or the
    object's own tags left no room for the third of ours)."""
    for tag in tags:
        if tag["Key"] in (GRAPH_DEF, UNSAFE):
            found = _FLEET_AT_END.search(tag["Value"])
            if found:
                return found.group(1)
    return None


@dataclass(frozen=True)
class TagMerge:
    tags: list[Tag]  # the full set to PUT
    written: dict[str, str]  # ours that fit
    dropped: list[str]  # ours that did not fit

    def changes(self, existing: Sequence[Tag]) -> bool:
        return sorted((t["Key"], t["Value"]) for t in existing) != sorted(
            (t["Key"], t["Value"]) for t in self.tags
        )


def merge_tags(existing: Sequence[Tag], ours: Mapping[str, str]) -> TagMerge:
    """The object's tags with ours replacing our previous ones (at most `MAX_OURS`: an
    unsafe tag takes the graph-def tag's place)."""
    if UNSAFE in ours:
        ours = {k: v for k, v in ours.items() if k != GRAPH_DEF}
    theirs = [t for t in existing if t["Key"] not in OURS]
    room = max(0, MAX_TAGS - len(theirs))
    ordered = [k for k in PRIORITY if k in ours] + sorted(k for k in ours if k not in PRIORITY)
    room = min(room, MAX_OURS)
    written = {k: tag_safe(ours[k]) for k in ordered[:room]}
    dropped = ordered[room:]
    merged = list(theirs) + [{"Key": k, "Value": v} for k, v in written.items()]
    return TagMerge(merged, written, dropped)
