"""The per-artifact result document (`check --json`, the stored report).

Shape fixed by the contract in docs/architecture.md, "Contracts":
{"path", "format", "status", "error", "consumers": [...], "compatible_releases",
 "min_release", "range_notes"}

Everything follows `serves`: the status, the releases (those that load the
model and answer a request with the default loader), and the upgrade a fix
names, which is always a release inside those ranges.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from packaging.version import Version

from worker.compat.check import History, check_artifact
from worker.compat.policy import Policy
from worker.compat.ranges import compress
from worker.compat.tflite import applies
from worker.compat.verdict_class import release_classes
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Finding, FixKind, Severity
from worker.model.verdict import Status, Verdict

INVALID = str(Status.INVALID)


class ReleaseOutcome:
    """What one catalog release does with an artifact.

    Releases of one verdict class (`worker.compat.verdict_class`) share a status and
    their error messages, so only the first release of each class is checked: the
    others take `status`, `serves`, `refused` and `errors` from it (`first`), which
    works them out once for the class. `verdict` is the release's own, every finding's
    text naming this release, computed from the artifact when first read (the range
    notes and a record's causes read a few)."""

    __slots__ = (
        "_errors",
        "_first",
        "_judge",
        "_own",
        "_shared",
        "_status",
        "graph_def_version",
        "release",
    )

    def __init__(
        self,
        release: str,
        graph_def_version: int,
        shared: Verdict | RecordedState,
        judge: Callable[[], Verdict] | None = None,
        first: ReleaseOutcome | None = None,
    ) -> None:
        self.release = release
        self.graph_def_version = graph_def_version
        self._shared = shared  # this release's verdict, its class's first's, or a record's
        self._own = shared if judge is None and isinstance(shared, Verdict) else None
        self._judge = judge
        self._first = first  # the first release of its class, whose verdict is `shared`
        self._status: Status | None = None
        self._errors: list[str] | None = None

    @property
    def serves(self) -> bool:
        return self._shared.serves is True

    @property
    def refused(self) -> bool:
        """It cannot load or serve the artifact (`serves` is False; not unknown)."""
        return self._shared.serves is False

    @property
    def status(self) -> Status:
        if self._first is not None:
            return self._first.status
        if self._status is None:
            self._status = self._shared.status
        return self._status

    @property
    def errors(self) -> list[str]:
        """The messages of its error findings, in order (a recorded state keeps none: its
        release is judged again)."""
        if self._first is not None:
            return self._first.errors
        if self._errors is None:
            shared = self._shared if isinstance(self._shared, Verdict) else self.verdict
            self._errors = [f.message for f in shared.findings if f.severity == Severity.ERROR]
        return list(self._errors)

    @property
    def verdict(self) -> Verdict:
        if self._own is None:
            assert self._judge is not None
            self._own = self._judge()
        return self._own


class RecordedState:
    """A release's state as a report's record kept it (`worker.fleet.releases`): what a
    `ReleaseOutcome` reads of a shared verdict, without the findings (`verdict` judges
    the release again when something reads them)."""

    __slots__ = ("findings", "serves", "status")

    def __init__(self, status: Status) -> None:
        self.status = status
        self.serves = status in (Status.COMPATIBLE, Status.AT_RISK)
        self.findings: tuple[Finding, ...] = ()


def release_verdicts(
    artifact: Artifact, releases: Sequence[Consumer], history: History | None
) -> list[ReleaseOutcome]:
    """What every catalog release does with the artifact, ascending: one check per
    verdict class of the artifact (79 releases fall in a handful of classes of a
    model: bench/pipeline_throughput.py), where a check cost about four classes."""
    outcomes = []
    judged: dict[Hashable, ReleaseOutcome] = {}
    for consumer, key in zip(releases, release_classes(artifact, releases, history), strict=True):
        assert consumer.tensorflow is not None
        first = judged.get(key) if key is not None else None
        if first is None:
            shared = check_artifact(artifact, consumer, history)
            outcome = ReleaseOutcome(consumer.tensorflow, consumer.graph_def_version, shared)
            if key is not None:
                judged[key] = outcome
        else:
            judge = partial(check_artifact, artifact, consumer, history)
            outcome = ReleaseOutcome(
                consumer.tensorflow, consumer.graph_def_version, first._shared, judge, first
            )
        outcomes.append(outcome)
    return outcomes


def _newer(outcome: ReleaseOutcome, consumer: Consumer) -> bool:
    if consumer.tensorflow:
        return Version(outcome.release) > Version(consumer.tensorflow)
    return outcome.graph_def_version > consumer.graph_def_version


def upgrade_release(
    consumer: Consumer, wanted: str | None, outcomes: Sequence[ReleaseOutcome]
) -> str | None:
    """The oldest release newer than the consumer (and not older than `wanted`, the
    release a rule named) that serves the model; None when no known release does."""
    for outcome in outcomes:
        if not outcome.serves or not _newer(outcome, consumer):
            continue
        if wanted is None or Version(outcome.release) >= Version(wanted):
            return outcome.release
    if wanted is not None:
        return upgrade_release(consumer, None, outcomes)
    return None


def with_upgrades(verdict: Verdict, outcomes: Sequence[ReleaseOutcome]) -> Verdict:
    """Every `upgrade_to` fix names a release the ranges list as serving the model: for
    an error the oldest newer release that serves it; for a warning (an attr ignored)
    the oldest that serves it and knows what the rule named."""
    if not outcomes:
        return verdict
    findings: list[Finding] = []
    for finding in verdict.findings:
        fix = finding.fix
        if fix is not None and fix.kind == FixKind.UPGRADE_TO:
            wanted = fix.release if finding.severity != Severity.ERROR else None
            fix = replace(fix, release=upgrade_release(verdict.consumer, wanted, outcomes))
            finding = replace(finding, fix=fix)
        findings.append(finding)
    return replace(verdict, findings=tuple(findings))


def range_notes(outcomes: Sequence[ReleaseOutcome]) -> list[str]:
    """Why the ranges have gaps: for each run of releases between two serving ranges,
    what the first of them fails on, and what lets the older range through."""
    notes: list[str] = []
    index = 0
    seen_serving = False
    while index < len(outcomes):
        if outcomes[index].serves:
            seen_serving = True
            index += 1
            continue
        start = index
        while index < len(outcomes) and not outcomes[index].serves:
            index += 1
        if not seen_serving or index >= len(outcomes):
            continue  # a gap only when releases on both sides serve it
        failing = [o for o in outcomes[start:index] if o.refused]
        if not failing:
            continue  # unknown (no measured TFLite table), not refused: no cause to name
        first, last = failing[0], failing[-1]
        cause = next((f for f in first.verdict.findings if f.severity == Severity.ERROR), None)
        what = f"{cause.code}" + (f" {cause.op}" if cause and cause.op else "") if cause else "?"
        older = outcomes[start - 1].verdict
        deferred = [f for f in older.findings if f.severity == Severity.INFO and f.op]
        why = (
            f"; {older.consumer.tensorflow} serves it because it checks function bodies only "
            f"when they run ({deferred[0].code} {deferred[0].op} sits in a function no "
            "request runs)"
            if deferred and not older.consumer.validates_library
            else ""
        )
        span = first.release if first is last else f"{first.release}-{last.release}"
        notes.append(f"{span} cannot: {what}{why}")
    return notes


def report_status(verdicts: Sequence[Verdict], any_release_serves: bool) -> Status:
    """The worst consumer status; with no consumer to judge, `unknown` (the releases
    say who could serve it) unless no release serves it at all."""
    if not verdicts:
        return Status.UNKNOWN if any_release_serves else Status.INCOMPATIBLE
    return Status.worst(v.status for v in verdicts)


def artifact_report(
    artifact: Artifact,
    consumers: Sequence[Consumer],
    releases: Sequence[Consumer],
    history: History | None = None,
    policy: Policy | None = None,
    outcomes: Sequence[ReleaseOutcome] | None = None,
) -> dict[str, Any]:
    """The `check --json` document of one artifact; `outcomes`: `release_verdicts` of
    `releases`, when the caller has them."""
    if outcomes is None:
        outcomes = release_verdicts(artifact, releases, history)
    verdicts = [
        with_upgrades(check_artifact(artifact, c, history, policy), outcomes)
        for c in consumers
        if applies(artifact, c)  # a TFLite runtime judges .tflite files only
    ]
    serving = [o.release for o in outcomes if o.serves]
    return {
        "path": artifact.path,
        "format": artifact.format,
        "status": str(report_status(verdicts, bool(serving))),
        "error": None,
        "consumers": [v.to_json() for v in verdicts],
        "compatible_releases": compress([(o.release, o.serves) for o in outcomes]),
        "min_release": serving[0] if serving else None,
        "range_notes": range_notes(outcomes),
    }


def invalid_report(path: str, error: str, format: str = "unknown") -> dict[str, Any]:
    return {
        "path": path,
        "format": format,
        "status": INVALID,
        "error": error,
        "consumers": [],
        "compatible_releases": [],
        "min_release": None,
        "range_notes": [],
    }


def exit_status(reports: Sequence[dict[str, Any]]) -> int:
    """0: every consumer serves every artifact; 1: some cannot; 2: invalid input;
    3: some answer is unknown and none is a failure."""
    statuses = {r["status"] for r in reports}
    if INVALID in statuses:
        return 2
    if str(Status.INCOMPATIBLE) in statuses:
        return 1
    if str(Status.UNKNOWN) in statuses:
        return 3
    return 0
