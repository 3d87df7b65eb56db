"""One consumer's verdict on one artifact, and the status vocabulary.

`Status` is defined here once; every layer (reports, tags, Slack, check runs,
impact) orders and combines statuses with `Status.worst`, and a consumer's
own status comes from `consumer_status` (from a `Verdict` or from its JSON).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from worker.model.consumer import Consumer
from worker.model.findings import Finding, Severity


class Status(StrEnum):
    """An answer (a consumer's, an artifact's, an object's), from best to worst.

    `compatible`: every consumer serves it (loads it and answers a request);
    `at-risk`: it serves, but a named hazard with evidence stands (a warning);
    `unknown`: some answer cannot be known (no op registry for that release or
    build) and none fails; never read as "compatible";
    `incompatible`: some consumer cannot load it or cannot answer a request;
    `invalid`: it could not be read as a model.
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

# Per-consumer states recorded before statuses were one vocabulary (index, reports).
_LEGACY_STATES = {"loads": Status.COMPATIBLE, "fails": Status.INCOMPATIBLE}


def parse_status(text: str) -> Status:
    """A recorded status or per-consumer state, including the old `loads` / `fails`."""
    return _LEGACY_STATES.get(text) or Status(text)


def consumer_status(loads: bool | None, serves: bool | None, severities: Iterable[str]) -> Status:
    """One consumer's status on one artifact: it follows `serves`.

    A failure wins over an unknown (a version rule can refuse a model even where
    the op registry is unknown); only warnings make `at-risk`, never `info`."""
    if loads is False or serves is False:
        return Status.INCOMPATIBLE
    if loads is None or serves is None:
        return Status.UNKNOWN
    if any(s == Severity.WARNING for s in severities):
        return Status.AT_RISK
    return Status.COMPATIBLE


def consumer_status_json(consumer: Mapping[str, Any]) -> Status:
    """`consumer_status` of a consumer entry of a report (`check --json`).

    Reports written before `serves` existed have `loads` only: it stands for both,
    and their warnings (then also the forward window) still read as at-risk."""
    loads = consumer.get("loads")
    serves = consumer.get("serves", loads)
    severities = [str(f.get("severity")) for f in consumer.get("findings") or []]
    return consumer_status(loads, serves, severities)


@dataclass(frozen=True)
class Verdict:
    """One consumer's outcome for one artifact.

    `loads`: the consumer's TensorFlow loads it; `serves`: it loads it and answers
    a request. None: cannot be known (no op registry), never a guessed yes.
    `loader`: how this consumer reads this artifact (a GraphDef is imported,
    whatever the consumer's SavedModel loader)."""

    consumer: Consumer
    loads: bool | None
    serves: bool | None
    findings: tuple[Finding, ...]
    loader: str = ""

    @property
    def status(self) -> Status:
        return consumer_status(self.loads, self.serves, (f.severity for f in self.findings))

    def to_json(self) -> dict[str, object]:
        runtime = self.consumer.tflite
        standalone = {}  # a TFLite runtime of its own names itself
        if runtime is not None and runtime.standalone:
            standalone = {
                "runtime": {
                    "family": runtime.family,
                    "version": runtime.version,
                    "measured": runtime.table is not None,
                }
            }
        return {
            "name": self.consumer.name,
            "tensorflow": self.consumer.tensorflow,
            **standalone,
            "graph_def_version": self.consumer.graph_def_version,
            "loader": self.loader or str(self.consumer.loader),
            "loads": self.loads,
            "serves": self.serves,
            "status": str(self.status),
            "findings": [f.to_json() for f in self.findings],
        }
