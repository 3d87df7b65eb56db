"""What every catalog release did with a model, recorded when it was checked.

A check at upload judges the model against every catalog release (its default
loader, `Catalog.range_consumers`) to find the releases that serve it. The
report keeps those verdicts compactly (`release_record`: a state per release,
run-length encoded, and the first errors of each failing one), the index with
them (`releases_of`), so a fleet change that adds a consumer defined as a
catalog release (`--add-consumer tf==2.16`: a new serving binary) takes the
verdict recorded for it, errors included, without a check: a lookup per model
where a check cost a third of a millisecond (bench/fleet_impact.py).

A record names the releases it judged by a digest of their definitions, in
order: under a catalog whose releases differ (a newer tfcompat, other
registries) every record is stale, and such consumers are checked as before.
Records hold for the default policy only (a fleet policy can turn a hazard into
an error), and a consumer defined otherwise (another loader, a manifest) is
checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

from worker.catalog.catalog import Catalog
from worker.compat.check import History, check_artifact
from worker.compat.report import RecordedState, ReleaseOutcome
from worker.fleet.digests import consumer_digest
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.digest import digest
from worker.model.findings import Severity
from worker.model.index import IndexedModel, ReleaseVerdicts
from worker.model.verdict import Status

REASONS = 5  # error messages kept per failing verdict (what a fleet change shows)


@dataclass(frozen=True)
class ReleaseLookup:
    """The catalog's releases as a record names them."""

    digest: str  # of the releases' definitions, in order
    positions: dict[str, int]  # consumer digest -> its release's position

    def verdict(self, model: IndexedModel, digest: str) -> tuple[str, tuple[str, ...]] | None:
        """(state, error messages) the model's record holds for the consumer of `digest`;
        None when it is no catalog release or the record is missing or stale."""
        record = model.releases
        if record is None or record.digest != self.digest:
            return None
        position = self.positions.get(digest)
        return record.at(position) if position is not None else None


def releases_digest(releases: Sequence[Consumer]) -> ReleaseLookup:
    digests = [consumer_digest(c) for c in releases]
    return ReleaseLookup(digest(digests), {d: n for n, d in enumerate(digests)})


_LOOKUPS: dict[int, tuple[Catalog, ReleaseLookup]] = {}


def release_lookup(catalog: Catalog) -> ReleaseLookup:
    """The lookup of the catalog's releases, once per catalog (a digest hashes a whole
    op registry: 79 of them cost a tenth of a second)."""
    hit = _LOOKUPS.get(id(catalog))
    if hit is None or hit[0] is not catalog:
        if len(_LOOKUPS) > 8:
            _LOOKUPS.clear()
        hit = _LOOKUPS[id(catalog)] = (catalog, releases_digest(catalog.range_consumers()))
    return hit[1]


def release_record(outcomes: Sequence[ReleaseOutcome], lookup: ReleaseLookup) -> dict[str, Any]:
    """The report's `release_verdicts` of one artifact: {"digest", "runs": [[state, index
    into errors or null, count], ...], "errors": [[message, ...], ...], "causes": [[code,
    fix or null], ...]} (beside each of errors, its first error finding's code and fix)."""
    runs: list[list[Any]] = []
    errors: list[list[str]] = []
    causes: list[list[Any]] = []
    for outcome in outcomes:
        messages = outcome.errors[:REASONS]
        error = None
        if messages:
            if messages not in errors:
                errors.append(messages)
                # the release's own first error (its fix may name the release): the first
                # release with these errors is its class's first, already checked
                first = next(f for f in outcome.verdict.findings if f.severity == Severity.ERROR)
                causes.append([str(first.code), first.fix.to_json() if first.fix else None])
            error = errors.index(messages)
        state = str(outcome.status)
        if runs and runs[-1][0] == state and runs[-1][1] == error:
            runs[-1][2] += 1
        else:
            runs.append([state, error, 1])
    return {"digest": lookup.digest, "runs": runs, "errors": errors, "causes": causes}


def _parsed(record: Any) -> ReleaseVerdicts | None:
    """One artifact's record, checked (a report is data from the object store)."""
    if not isinstance(record, dict) or not isinstance(record.get("digest"), str):
        return None
    errors = record.get("errors")
    runs = record.get("runs")
    if not isinstance(errors, list) or not isinstance(runs, list):
        return None
    if not all(isinstance(e, list) and all(isinstance(m, str) for m in e) for e in errors):
        return None
    parsed: list[tuple[str, int | None, int]] = []
    for run in runs:
        if not isinstance(run, list) or len(run) != 3:
            return None
        state, error, count = run
        if state not in Status.__members__.values() or type(count) is not int or count < 1:
            return None
        if error is not None and not (type(error) is int and 0 <= error < len(errors)):
            return None
        parsed.append((state, error, count))
    return ReleaseVerdicts(
        record["digest"],
        tuple(parsed),
        tuple(tuple(e) for e in errors),
        _causes(record.get("causes"), len(errors)),
    )


def _causes(value: Any, errors: int) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """A record's causes, checked; none (as in an older record) unless each of its
    errors has one: [code, a fix's fields as strings or null]."""
    if not isinstance(value, list) or len(value) != errors:
        return ()
    found = []
    for cause in value:
        if not isinstance(cause, list) or len(cause) != 2 or not isinstance(cause[0], str):
            return ()
        code, fix = cause
        if fix is not None and not (
            isinstance(fix, dict) and all(isinstance(v, str) for v in fix.values())
        ):
            return ()
        found.append((code, tuple(sorted((fix or {}).items()))))
    return tuple(found)


def releases_of(artifact_reports: Sequence[Any]) -> ReleaseVerdicts | None:
    """The object's record from its artifacts' (each release's worst state over the
    artifacts, the first errors across them, as a fleet change's check would find);
    None when an artifact has none or they name different releases."""
    records = [_parsed(r.get("release_verdicts")) if isinstance(r, dict) else None
               for r in artifact_reports]  # fmt: skip
    if not records or any(r is None for r in records):
        return None
    if len(records) == 1:
        return records[0]
    first = records[0]
    assert first is not None
    if any(r is None or r.digest != first.digest for r in records):
        return None
    merged: list[list[Any]] = []
    errors: list[tuple[str, ...]] = []
    causes: list[tuple[str, tuple[tuple[str, str], ...]] | None] = []
    for position in range(sum(count for _, _, count in first.runs)):
        found = [r.at(position) for r in records if r is not None]
        if any(f is None for f in found):
            return None  # records of unequal length
        state = Status.worst(f[0] for f in found if f is not None)
        messages = tuple(islice((m for f in found if f is not None for m in f[1]), REASONS))
        error = None
        if messages:
            if messages not in errors:
                errors.append(messages)
                failing = next(r for r, f in zip(records, found, strict=True) if f and f[1])
                causes.append(failing.cause_at(position) if failing else None)
            error = errors.index(messages)
        if merged and merged[-1][0] == state and merged[-1][1] == error:
            merged[-1][2] += 1
        else:
            merged.append([str(state), error, 1])
    kept = tuple(c for c in causes if c is not None)
    return ReleaseVerdicts(
        first.digest,
        tuple((s, e, c) for s, e, c in merged),
        tuple(errors),
        kept if len(kept) == len(errors) else (),
    )


_RECORDED = {
    str(s): RecordedState(s) for s in (Status.COMPATIBLE, Status.AT_RISK, Status.INCOMPATIBLE)
}


def recorded_outcomes(
    artifact: Artifact,
    record: ReleaseVerdicts | None,
    releases: Sequence[Consumer],
    history: History,
    lookup: ReleaseLookup,
) -> list[ReleaseOutcome] | None:
    """`release_verdicts` of `releases` taken from the artifact's record instead of
    checked: what a fleet change's re-check of an indexed model does, since a fleet change
    moves no catalog release's verdict (half a re-check's time went to judging them
    again: bench/fleet_fanout.py). Each outcome judges its release again only if its
    findings are read (a range note's cause). None, for a full check, when the record is
    missing, stale (other releases), keeps no causes, or holds a state a record cannot
    stand for (`unknown`: whether such a release serves is not kept)."""
    if record is None or record.digest != lookup.digest:
        return None
    if len(record.causes) != len(record.errors):
        return None
    outcomes = []
    for position, consumer in enumerate(releases):
        found = record.at(position)
        state = _RECORDED.get(found[0]) if found is not None else None
        if state is None:
            return None
        assert consumer.tensorflow is not None
        judge = partial(check_artifact, artifact, consumer, history)
        outcomes.append(
            ReleaseOutcome(consumer.tensorflow, consumer.graph_def_version, state, judge)
        )
    if record.at(len(releases)) is not None:
        return None  # a record of more releases
    return outcomes


def record_json(record: ReleaseVerdicts) -> dict[str, Any]:
    """A parsed record in the report's form: what `release_record` wrote of it."""
    return {
        "digest": record.digest,
        "runs": [list(run) for run in record.runs],
        "errors": [list(messages) for messages in record.errors],
        "causes": [[code, dict(fix) or None] for code, fix in record.causes],
    }
