"""One consumer's verdict on one artifact, and the status vocabulary.

`Status` is defined here once; every layer (reports, tags, Slack, check runs,
impact) orders and combines statuses with `Status.worst`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from worker.model.consumer import Consumer
from worker.model.findings import Finding


class Status(StrEnum):
    """An artifact's (or an object's) overall answer, from best to worst.

    `unknown`: some consumer's answer cannot be known (no op registry for its
    release or build) and none fails; never read as "compatible".
    """

    COMPATIBLE = "compatible"
    AT_RISK = "at-risk"
    UNKNOWN = "unknown"
    INCOMPATIBLE = "incompatible"
    INVALID = "invalid"

    @property
    def rank(self) -> int:
        return _ORDER.index(self)

    @classmethod
    def worst(cls, statuses: Iterable[str]) -> Status:
        """The worst of `statuses`; `invalid` when there are none (nothing was read)."""
        found = [cls(s) for s in statuses]
        return max(found, key=lambda s: s.rank) if found else cls.INVALID


_ORDER = list(Status)


@dataclass(frozen=True)
class Verdict:
    """One consumer's outcome for one artifact."""

    consumer: Consumer
    loads: bool
    findings: tuple[Finding, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.consumer.name,
            "tensorflow": self.consumer.tensorflow,
            "graph_def_version": self.consumer.graph_def_version,
            "loader": str(self.consumer.loader),
            "loads": self.loads,
            "findings": [f.to_json() for f in self.findings],
        }
