"""Which release each consumer should move to, and what each move would serve: a pure
function over the index.

`worker.fleet.impact` answers "what if I make this one change"; a plan asks it of
every change a platform team could make to one consumer at a time: each consumer
moved to each candidate release (`candidates`: the newest patch of every catalog
minor the fleet file's `upgrade_to` allows, by default every one not older than the
consumer's own), its loader, GPU, Keras, Python, custom objects and TF Serving kept.

Every (consumer, candidate) verdict on a model is decided exactly as `assess` decides
the verdict of that consumer replaced by that candidate (`tests/fleet/test_plan.py`
holds every fixture to it): the recorded verdict when the definition is unchanged,
the verdict of a consumer defined alike unless a failure, the verdict the catalog
release was recorded to have at upload, else a check from stored metadata, once per
verdict class of the model. The first three read only the model's recorded verdicts
and release record, so models with equal records are decided once (`_group_key`): a
fleet of catalog releases with the default loader costs a dictionary lookup per
model. Each model's outcomes under every candidate form its signature; models are
counted per signature, so the tallies cost per distinct signature, not per model.

A failure's cause is its first error finding (code and fix, one message standing for
the rest): from the check where one ran, else from the release record, which keeps
them beside its errors (a record written before it did costs one check of the first
model with those errors). The candidates themselves: `worker.fleet.candidates`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from packaging.specifiers import SpecifierSet

from worker.catalog.catalog import Catalog
from worker.compat.check import check_artifact
from worker.compat.policy import Policy
from worker.compat.tflite import applies
from worker.compat.verdict_class import verdict_class
from worker.fleet.candidates import Candidate, candidates, plannable
from worker.fleet.digests import consumer_digest
from worker.fleet.fleet import Fleet
from worker.fleet.impact import FAILS, verdict_state
from worker.fleet.releases import release_lookup
from worker.model.consumer import Consumer
from worker.model.findings import FixKind, Severity
from worker.model.index import IndexedModel
from worker.model.verdict import Status, parse_status

LISTED = 10  # models named per cause (the counts are always whole)

# Fixes a model's owner applies (a re-export, a `tfcompat fix` copy), as opposed to a
# consumer's (upgrade, load a library, change loader): `worker.model.findings.FixKind`.
MODEL_FIXES = frozenset(
    {
        FixKind.STRIP_DEFAULT_ATTRS,
        FixKind.SET_ATTR_DEFAULT,
        FixKind.DROP_ATTR,
        FixKind.REEXPORT_WITHOUT_OP,
        FixKind.REEXPORT_WITH,
        FixKind.STRIP_OUTPUT_SHAPES,
        FixKind.USE_MODEL_EXPORT,
        FixKind.EXPORT_SAVED_MODEL,
        FixKind.RESAVE_AS_H5,
        FixKind.RESAVE_AS_KERAS3,
        FixKind.REPLACE_LAMBDA,
        FixKind.RESAVE_WITH_PYTHON,
        FixKind.FLOAT_LAYER_DTYPE,
        FixKind.RENAME_LAYERS,
        FixKind.RENUMBER_NESTED_CALLS,
        FixKind.REBUILD_WITH_INPUT,
        FixKind.CONVERT_WITH,
        FixKind.CONVERT_WITHOUT,
        FixKind.EXPORT_SERVE_TAG,
        FixKind.ADD_INIT_OP,
        FixKind.SAVE_VARIABLES,
        FixKind.FEED_PLACEHOLDER,
        FixKind.ADD_SIGNATURE,
        FixKind.EXPORT_WITHOUT_OPTIMIZER,
        FixKind.SHIP_ASSETS,
        FixKind.READ_ASSET_AT_INIT,
        FixKind.REEXPORT_XLA,
        FixKind.LIST_BANNED_RELEASES,
    }
)
SERVES = frozenset({Status.COMPATIBLE, Status.AT_RISK})


class Cause(NamedTuple):
    """A failure's first error finding: its code and fix, and the message of the first
    model found failing so (`_Judge._cause_id`)."""

    code: str
    message: str
    fix: tuple[tuple[str, str], ...]  # the fix's fields (`Fix.to_json`), sorted


class Outcome(NamedTuple):
    """What a plan tallies of a verdict: its state and its failure's cause. Messages are
    left out: they name a model's own nodes, and models alike but for their node names
    are counted together (a cause keeps the first message met, `_Judge._cause_id`)."""

    state: str | None  # as `fleet impact` says it; None: the consumer does not judge it
    cause: int | None  # into the plan's causes


_CHECK = -1  # a signature slot a check decides
_CAUSE = -2  # a recorded failure whose cause a check names (the index keeps none)


_STATUSES: dict[str, Status] = {}


def _status(text: str) -> Status:
    """`parse_status`, remembered (a plan parses a state per group and candidate)."""
    found = _STATUSES.get(text)
    if found is None:
        found = _STATUSES[text] = parse_status(text)
    return found


def _group_key(model: IndexedModel) -> Hashable:
    """What the record-decided outcomes depend on: equal keys, equal outcomes. A release
    record counts by its states and causes, not its messages (which name the model's
    nodes, so every model has its own): 100,000 models fall into a few hundred groups.
    A record that keeps no causes (written before they were kept) counts with its
    messages, since a check of the group's first model names the cause of those.
    Names and values are keyed apart (no pair per consumer): a plan keys every model."""
    record = model.releases
    kept: Hashable = None
    if record is not None:
        kept = (record.digest, record.runs, record.causes)
        if len(record.causes) != len(record.errors):
            kept = record
    verdicts, digests = model.verdicts, model.consumer_digests
    return (
        model.invalid,
        tuple(verdicts),
        tuple(verdicts.values()),
        tuple(digests),
        tuple(digests.values()),
        kept,
    )


def _digests(slots: Sequence[Candidate]) -> list[str]:
    """Each slot's consumer digest, once per definition: the candidates of 20 consumers
    share 20-odd releases, and a digest hashes a whole op registry (a millisecond)."""
    known: dict[tuple[Any, ...], str] = {}
    found = []
    for slot in slots:
        c = slot.definition
        if slot.current:  # the fleet's own consumer, defined as it is
            found.append(consumer_digest(c))
            continue
        # a candidate is its release's catalog consumer with the fleet entry's settings
        key = (c.tensorflow, c.loader, c.keras, c.python, c.tf_serving, c.gpu,
               c.custom_objects)  # fmt: skip
        if key not in known:
            known[key] = consumer_digest(c)
        found.append(known[key])
    return found


class _Record:
    """One model's release record as a plan reads it: each catalog release's (state,
    cause) once, by position (a record is run-length encoded; a plan asks it about the
    twenty-odd releases its candidates are)."""

    __slots__ = ("judge", "known", "model", "runs")

    def __init__(self, judge: _Judge, model: IndexedModel) -> None:
        self.judge = judge
        self.model = model
        lookup, record = judge.releases, model.releases
        self.runs: list[tuple[str, int | None]] | None = None
        if lookup is not None and record is not None and record.digest == lookup.digest:
            self.runs = []
            for state, error, count in record.runs:
                self.runs += [(state, error)] * count
        self.known: dict[str, tuple[str, int | None] | None] = {}

    def verdict(self, n: int, digest: str) -> tuple[str, int | None] | None:
        """(state, cause) recorded for the release the consumer of `digest` is (slot
        `n`'s); None when it is no catalog release or the record is missing or stale."""
        if digest in self.known:
            return self.known[digest]
        found: tuple[str, int | None] | None = None
        position = self.judge.releases.positions.get(digest) if self.judge.releases else None
        if self.runs is not None and position is not None and position < len(self.runs):
            state, error = self.runs[position]
            cause = None
            if error is not None and _status(state) == FAILS:
                record = self.model.releases
                assert record is not None
                kept = record.causes[error] if len(record.causes) == len(record.errors) else None
                slot = self.judge.slots[n]
                cause = self.judge._recorded_cause(self.model, slot, record.errors[error], kept)
            found = (state, cause)
        self.known[digest] = found
        return found


class _Judge:
    """`assess`'s decision for one consumer slot, split in the part the records decide
    (per group of models) and the check (per model, once per verdict class)."""

    def __init__(self, slots: Sequence[Candidate], catalog: Catalog, policy: Policy) -> None:
        self.slots = slots
        self.catalog = catalog
        self.policy = policy
        self.recheck_all = bool(policy.bad_consumers)
        self.releases = (
            release_lookup(catalog) if not self.recheck_all and policy == Policy() else None
        )
        self.digests = _digests(slots)
        # each consumer's slots (its candidates are contiguous, the current one first)
        self.spans: list[tuple[str, range]] = []
        for n, slot in enumerate(slots):
            if self.spans and self.spans[-1][0] == slot.consumer:
                self.spans[-1] = (slot.consumer, range(self.spans[-1][1].start, n + 1))
            else:
                self.spans.append((slot.consumer, range(n, n + 1)))
        self.outcomes: list[Outcome] = []
        self._outcome_ids: dict[Outcome, int] = {}
        self.causes: list[Cause] = []
        self._cause_ids: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self._recorded_causes: dict[tuple[str, tuple[str, ...]], int | None] = {}
        self.checks = 0
        self.recorded = 0

    def outcome(self, state: str | None, cause: int | None) -> int:
        key = Outcome(state, cause)
        found = self._outcome_ids.get(key)
        if found is None:
            found = self._outcome_ids[key] = len(self.outcomes)
            self.outcomes.append(key)
        return found

    def cause(self, verdicts: Iterable[Any]) -> int | None:
        first = next(
            (f for v in verdicts for f in v.findings if f.severity == Severity.ERROR), None
        )
        if first is None:
            return None
        fix = tuple(sorted(first.fix.to_json().items())) if first.fix else ()
        return self._cause_id(str(first.code), fix, first.message)

    def _cause_id(self, code: str, fix: tuple[tuple[str, str], ...], message: str) -> int:
        """Causes are one per code and fix; the first message met stands for the rest
        (messages name nodes, so each model has its own)."""
        key = (code, fix)
        found = self._cause_ids.get(key)
        if found is None:
            found = self._cause_ids[key] = len(self.causes)
            self.causes.append(Cause(code, message, fix))
        return found

    def recorded_part(self, model: IndexedModel) -> tuple[int, ...]:
        """Every slot's outcome the records decide; `_CHECK` where a check must, `_CAUSE`
        where it must name a recorded failure's cause."""
        judged: dict[str, str] | None = None
        states, digests = model.verdicts, model.consumer_digests
        invalid = model.invalid
        record = _Record(self, model)
        found: list[int] = []
        # past the unchanged consumer, a slot's outcome depends on its definition only:
        # the candidates of 20 consumers share 20-odd releases
        by_digest: dict[str, int] = {}
        for name, span in self.spans:
            recorded = states.get(name)
            unchanged = None if recorded is None or self.recheck_all else digests.get(name)
            for n in span:
                digest = self.digests[n]
                if invalid or unchanged == digest:
                    found.append(self._unchanged(record, n, digest, recorded))
                    continue
                known = by_digest.get(digest)
                if known is None:
                    if judged is None:  # the recorded state by consumer digest
                        judged = {digests[c]: s for c, s in states.items() if c in digests}
                    known = by_digest[digest] = self._changed(record, n, digest, judged)
                found.append(known)
        return tuple(found)

    def _changed(self, record: _Record, n: int, digest: str, judged: Mapping[str, str]) -> int:
        """A changed consumer's outcome as `assess` takes it: a consumer defined alike,
        unless a failure; else the catalog release's record; else `_CHECK`."""
        if self.recheck_all:
            return _CHECK
        same = judged.get(digest)
        if same is not None and same != FAILS:
            return self.outcome(same, None)
        release = record.verdict(n, digest)
        if release is None:
            return _CHECK
        self.recorded += 1
        return self.outcome(release[0], release[1])

    def _unchanged(self, record: _Record, n: int, digest: str, recorded: str | None) -> int:
        """The recorded verdict of an unchanged consumer; a failure's cause from the
        release record when the consumer is a catalog release, else `_CAUSE`: a check
        names it (the index keeps no findings of the fleet's own verdicts)."""
        if recorded is None or record.model.invalid or _status(recorded) != FAILS:
            return self.outcome(recorded, None)
        release = record.verdict(n, digest)
        if release is not None and _status(release[0]) == FAILS:
            return self.outcome(recorded, release[1])
        return _CAUSE

    def _recorded_cause(
        self,
        model: IndexedModel,
        slot: Candidate,
        reasons: tuple[str, ...],
        kept: tuple[str, tuple[tuple[str, str], ...]] | None,
    ) -> int | None:
        """A recorded failure's cause: the code and fix the record keeps beside its
        errors (`kept`), else (a record written before it kept them) one check of the
        first model that has those errors for that release."""
        if not reasons:
            return None
        if kept is not None:
            code, fix = kept
            return self._cause_id(code, fix, reasons[0])
        key = (slot.release, reasons)
        if key not in self._recorded_causes:
            applicable = [a for a in model.artifacts if applies(a, slot.definition)]
            verdicts = [check_artifact(a, slot.definition, self.catalog) for a in applicable]
            self.checks += len(verdicts)
            self._recorded_causes[key] = self.cause(verdicts)
        return self._recorded_causes[key]

    def checked(self, model: IndexedModel, part: tuple[int, ...]) -> tuple[int, ...]:
        """`part` with every `_CHECK` and `_CAUSE` slot checked from the model's stored
        metadata, once per verdict class (as `assess` checks a consumer added or
        changed)."""
        classes: dict[tuple[Hashable | None, ...], int] = {}
        found = list(part)
        for n, value in enumerate(part):
            if value >= 0:
                continue
            consumer = self.slots[n].definition
            applicable = [a for a in model.artifacts if applies(a, consumer)]
            if not applicable:
                found[n] = self.outcome(None, None)
                continue
            key = tuple(verdict_class(a, consumer, self.catalog, self.policy) for a in applicable)
            alike = None if None in key else classes.get(key)
            if alike is None:
                verdicts = [
                    check_artifact(a, consumer, self.catalog, self.policy) for a in applicable
                ]
                self.checks += len(verdicts)
                alike = self.outcome(str(verdict_state(verdicts)), self.cause(verdicts))
                if None not in key:
                    classes[key] = alike
            if value == _CAUSE:  # the recorded state stands; the check names its cause
                checked = self.outcomes[alike]
                recorded = model.verdicts[self.slots[n].consumer]
                alike = self.outcome(recorded, checked.cause)
            found[n] = alike
        return tuple(found)


@dataclass
class Tally:
    """What one candidate does with the models its consumer is judged on. Models are
    named by their outcome group (`Plan.members`: models alike under every candidate),
    so a tally costs per group, not per model."""

    serves: int = 0  # compatible
    at_risk: int = 0  # serves, with a named hazard
    fails: int = 0
    unknown: int = 0
    gains: int = 0  # served here, not at the current release
    loses: int = 0  # served at the current release, not here
    still_fails: int = 0  # fails here and at the current release
    misses: int = 0  # models the consumer must serve (valid, judged now) it does not
    causes: dict[int, list[int]] = field(default_factory=dict)  # cause -> groups failing
    at_risk_groups: list[int] = field(default_factory=list)
    missed_groups: list[int] = field(default_factory=list)
    lost_groups: list[int] = field(default_factory=list)


class ModelRef(NamedTuple):
    location: str
    version_id: str | None
    owners: tuple[str, ...]


@dataclass
class ConsumerPlan:
    consumer: Consumer
    candidates: list[Candidate]
    tallies: list[Tally]
    must: int = 0  # valid models judged by the consumer now
    skipped: str | None = None  # why no candidate (plannable)
    slots: range = range(0)  # its candidates' places in every model's signature

    @property
    def recommended(self) -> int | None:
        """The lowest candidate serving every model the consumer must serve (the current
        release when it does), else the one missing fewest (lowest among equals)."""
        if not self.candidates:
            return None
        if self.tallies[0].misses == 0:
            return 0
        clean = [n for n, t in enumerate(self.tallies) if t.misses == 0]
        if clean:
            return clean[0]
        return min(range(len(self.tallies)), key=lambda n: (self.tallies[n].misses, n))


@dataclass
class Plan:
    consumers: list[ConsumerPlan]
    models: list[ModelRef]
    causes: list[Cause]
    examined: int = 0
    checks: int = 0
    recorded: int = 0
    groups: int = 0  # models with distinct records
    served_everywhere: list[bool] = field(default_factory=list)  # per model, now
    outcomes: list[Outcome] = field(default_factory=list)
    # models alike under every candidate: each group's signature (an outcome per
    # candidate slot) and members, and each model's group
    signatures: list[tuple[int, ...]] = field(default_factory=list)
    members: list[list[int]] = field(default_factory=list)
    group_of: list[int] = field(default_factory=list)

    def state(self, model: int, consumer: int, candidate: int) -> str | None:
        """The model's verdict under one consumer's candidate, as `fleet impact` with
        that one change says it (None: the consumer would not judge it)."""
        return self.group_state(self.group_of[model], consumer, candidate)

    def group_state(self, group: int, consumer: int, candidate: int) -> str | None:
        slot = self.consumers[consumer].slots[candidate]
        return self.outcomes[self.signatures[group][slot]].state

    def count(self, groups: Iterable[int]) -> int:
        return sum(len(self.members[g]) for g in groups)

    def first_models(self, groups: Iterable[int], n: int) -> list[int]:
        found: list[int] = []
        for g in groups:
            found += self.members[g][: n - len(found)]
            if len(found) >= n:
                break
        return found

    def owners(self, groups: Iterable[int], none: str) -> set[str]:
        """The owners of the groups' models (`none` for a model without one)."""
        found: set[str] = set()
        for g in groups:
            for m in self.members[g]:
                found.update(self.models[m].owners or (none,))
        return found


def build_plan(
    models: Iterable[IndexedModel],
    fleet: Fleet,
    catalog: Catalog,
    allowed: Mapping[str, SpecifierSet] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Plan:
    """Every consumer's candidates and what each would serve, from the index alone."""
    allowed = allowed or {}
    per_consumer = [candidates(c, catalog, allowed.get(c.name)) for c in fleet.consumers]
    slots = [s for found in per_consumer for s in found]
    judge = _Judge(slots, catalog, fleet.policy)
    # record group -> (outcomes the records decide, served by every consumer now, and
    # the group of models alike when the records decide every outcome, else None)
    groups: dict[Hashable, tuple[tuple[int, ...], bool, int | None]] = {}
    alike: dict[tuple[int, ...], int] = {}
    members: list[list[int]] = []
    group_of: list[int] = []
    refs: list[ModelRef] = []
    everywhere: list[bool] = []
    names = fleet.names()

    def alike_group(signature: tuple[int, ...]) -> int:
        group = alike.get(signature)
        if group is None:
            group = alike[signature] = len(members)
            members.append([])
        return group

    for model in models:
        key = _group_key(model)
        known = groups.get(key)
        if known is None:
            served = not model.invalid and all(
                (s := model.verdicts.get(n)) is not None and _status(s) in SERVES for n in names
            )
            part = judge.recorded_part(model)
            decided = alike_group(part) if min(part, default=0) >= 0 else None
            known = groups[key] = (part, served, decided)
        part, served, group = known
        if group is None:
            group = alike_group(judge.checked(model, part))
        number = len(refs)
        refs.append(ModelRef(model.location, model.version_id, model.owners))
        everywhere.append(served)
        members[group].append(number)
        group_of.append(group)
        if progress:
            progress(1)
    signatures = list(alike)
    plans = []
    start = 0
    for consumer, found in zip(fleet.consumers, per_consumer, strict=True):
        span = range(start, start + len(found))
        plans.append(_tallied(consumer, found, span, signatures, members, judge.outcomes))
        start += len(found)
    return Plan(
        plans,
        refs,
        judge.causes,
        examined=len(refs),
        checks=judge.checks,
        recorded=judge.recorded,
        groups=len(groups),
        served_everywhere=everywhere,
        outcomes=judge.outcomes,
        signatures=signatures,
        members=members,
        group_of=group_of,
    )


def _state(outcome: Outcome) -> Status | None:
    return _status(outcome.state) if outcome.state else None


def _tallied(
    consumer: Consumer,
    found: list[Candidate],
    slots: range,
    signatures: Sequence[tuple[int, ...]],
    members: Sequence[list[int]],
    outcomes: Sequence[Outcome],
) -> ConsumerPlan:
    """The consumer's tallies. The groups of models alike are gathered by their outcomes
    under this consumer's candidates first (a few dozen patterns where there are
    thousands of groups), then each candidate's (outcome now, outcome there) pairs are
    classified once, each with its groups in ascending order."""
    plan = ConsumerPlan(
        consumer, found, [Tally() for _ in found], skipped=plannable(consumer), slots=slots
    )
    if not found:
        return plan
    states = [_state(o) for o in outcomes]
    counts = [len(m) for m in members]
    patterns: dict[tuple[int, ...], list[int]] = {}
    start, stop = slots.start, slots.stop
    for group, signature in enumerate(signatures):
        pattern = signature[start:stop]
        gathered = patterns.get(pattern)
        if gathered is None:
            patterns[pattern] = [group]
        else:
            gathered.append(group)
    sizes = {pattern: sum(counts[g] for g in groups) for pattern, groups in patterns.items()}
    for pattern, size in sizes.items():
        current = states[pattern[0]]
        if current is not None and current != Status.INVALID:
            plan.must += size
    for n in range(len(found)):
        pairs: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        for pattern in patterns:  # in order of each pattern's first group
            pairs.setdefault((pattern[0], pattern[n]), []).append(pattern)
        tally = plan.tallies[n]
        for (here, there), alike in pairs.items():
            if len(alike) == 1:
                groups = patterns[alike[0]]
            else:
                groups = sorted(g for pattern in alike for g in patterns[pattern])
            count = sum(sizes[pattern] for pattern in alike)
            outcome = outcomes[there]
            _classify(tally, states[here], states[there], outcome.cause, groups, count)
    return plan


def _classify(
    tally: Tally,
    now: Status | None,
    state: Status | None,
    cause: int | None,
    groups: list[int],
    count: int,
) -> None:
    """Count `count` models (in `groups`) that are `now` at the current release and
    `state` at the candidate."""
    if state == Status.COMPATIBLE:
        tally.serves += count
    elif state == Status.AT_RISK:
        tally.at_risk += count
        tally.at_risk_groups += groups
    elif state == Status.INCOMPATIBLE:
        tally.fails += count
        if cause is not None:
            tally.causes.setdefault(cause, []).extend(groups)
        if now == Status.INCOMPATIBLE:
            tally.still_fails += count
    elif state == Status.UNKNOWN:
        tally.unknown += count
    serves = state in SERVES
    served_now = now in SERVES
    if serves and not served_now and now is not None:
        tally.gains += count
    if served_now and not serves:
        tally.loses += count
        tally.lost_groups += groups
    if now is not None and now != Status.INVALID and not serves:
        tally.misses += count
        tally.missed_groups += groups
