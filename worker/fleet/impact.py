"""What a fleet change does to the models already checked: a pure function.

Models change rarely; fleets change often. Every indexed model keeps its
extracted metadata and a status per consumer (`worker.model.verdict.Status`;
entries recorded as `loads` / `fails` read as compatible / incompatible), so a
new fleet is checked without downloading anything:
a consumer whose definition is unchanged keeps its recorded verdict, and only
added or changed consumers are checked, with TensorFlow's rules over the
stored metadata. The model's status follows from its verdicts.

A verdict depends on the consumer's definition, not its name (the digest
leaves the name out): a renamed consumer, or one defined exactly as another
the model was judged by, takes that recorded verdict without a check, unless
it was a failure, which is checked again so the change carries its reasons.
A consumer defined as a catalog release takes the verdict that release was
found to have when the model was checked (`worker.fleet.releases`), errors
included. Consumers checked anew are checked once per verdict class of the model
(`worker.compat.verdict_class`: the patch releases of a minor, loaders
that read the model alike), since a class promises one status and one set of
errors: replacing a fleet of 20 consumers costs a model two or three checks
(bench/fleet_impact.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, NamedTuple

from worker.catalog.catalog import Catalog
from worker.compat.check import History, check_artifact
from worker.compat.policy import Policy
from worker.compat.tflite import applies
from worker.compat.verdict_class import verdict_class
from worker.fleet.digests import consumer_digest
from worker.fleet.releases import release_lookup
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.index import IndexedModel
from worker.model.verdict import Status, Verdict, parse_status

LOADS, AT_RISK, FAILS = Status.COMPATIBLE, Status.AT_RISK, Status.INCOMPATIBLE


def verdict_state(verdicts: Iterable[Verdict]) -> Status:
    """One consumer's status over all artifacts of an object."""
    return max((v.status for v in verdicts), key=_rank, default=LOADS)


# Recorded states (old `loads` / `fails` too) by rank: a fleet change combines 20 per
# model for 10,000 models, where parsing each into a Status cost more than the checks.
_RANK = {**{str(s): s.rank for s in Status}, "loads": LOADS.rank, "fails": FAILS.rank}
_BY_RANK = list(Status)


def _rank(state: str) -> int:
    found = _RANK.get(state)
    return found if found is not None else parse_status(state).rank  # ValueError if unknown


def status_from(states: Iterable[str], invalid: bool = False) -> Status:
    if invalid:
        return Status.INVALID
    return _BY_RANK[max(map(_rank, states), default=LOADS.rank)]


class VerdictChange(NamedTuple):
    """One consumer's verdict on one model, before and after (a tuple: a fleet change
    makes one per model and consumer, hundreds of thousands)."""

    consumer: str
    before: str | None  # None: the consumer is new
    after: str | None  # None: the consumer was removed
    reasons: tuple[str, ...] = ()  # the error findings behind a failure

    @property
    def breaks(self) -> bool:
        after = parse_status(self.after) if self.after else None
        before = parse_status(self.before) if self.before else None
        return after == FAILS and before != FAILS

    @property
    def matters(self) -> bool:
        """A change someone must know of: anything but a new consumer that serves the
        model ("(new) -> compatible"), which adding a consumer makes for every model
        it serves (a preview counted them all as changed)."""
        return not (
            self.before is None and self.after is not None and _rank(self.after) == LOADS.rank
        )


@dataclass(frozen=True)
class ModelImpact:
    model: IndexedModel
    status_after: str
    changes: tuple[VerdictChange, ...]
    verdicts_after: dict[str, str]

    @property
    def newly_broken(self) -> list[VerdictChange]:
        return [c for c in self.changes if c.breaks]

    @property
    def changes_that_matter(self) -> list[VerdictChange]:
        return [c for c in self.changes if c.matters]

    @property
    def changed(self) -> bool:
        """Its status moves, or a verdict changes in a way that matters (`matters`)."""
        return parse_status(self.model.status) != parse_status(self.status_after) or any(
            c.matters for c in self.changes
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "object": self.model.location,
            "version_id": self.model.version_id,
            "owners": list(self.model.owners),
            "status_before": self.model.status,
            "status_after": self.status_after,
            "changes": [
                {
                    "consumer": c.consumer,
                    "before": c.before,
                    "after": c.after,
                    "reasons": list(c.reasons),
                }
                for c in self.changes
            ],
        }


@dataclass
class Impact:
    models: list[ModelImpact] = field(default_factory=list)
    examined: int = 0  # models looked at
    checks: int = 0  # (artifact, consumer) checks actually run (once per verdict class)
    recorded: int = 0  # verdicts taken from what catalog releases did at upload, unchecked
    rechecked: tuple[str, ...] = ()  # consumers checked anew (added or changed)
    removed: tuple[str, ...] = ()

    @property
    def breaking(self) -> list[ModelImpact]:
        return [m for m in self.models if m.newly_broken]

    @property
    def changed_models(self) -> list[ModelImpact]:
        """The listed models whose change matters (`ModelImpact.changed`): what a preview
        counts and shows; `models` also holds those a new consumer merely serves."""
        return [m for m in self.models if m.changed]

    def to_json(self) -> dict[str, Any]:
        return {
            "models_examined": self.examined,
            "checks_run": self.checks,
            "verdicts_recorded_at_upload": self.recorded,
            "consumers_rechecked": list(self.rechecked),
            "consumers_removed": list(self.removed),
            "models_changed": len(self.models),
            "newly_unloadable": sum(len(m.newly_broken) for m in self.models),
            "changed": [m.to_json() for m in self.models],
        }


Packed = tuple[Any, ...]


def packed(impact: Impact) -> Packed:
    """A preview's impact as plain tuples, lists and strings (what a forked process sends
    back: pickling them cost a quarter of what the dataclasses did, bench/fleet_impact.py).
    Models are listed as a preview lists them (`_listing`)."""
    models = [
        (_listed(m.model), m.status_after, [tuple(c) for c in m.changes], m.verdicts_after)
        for m in impact.models
    ]
    i = impact
    return models, i.examined, i.checks, i.recorded, i.rechecked, i.removed


def unpacked(data: Packed) -> Impact:
    models, examined, checks, recorded, rechecked, removed = data
    make = VerdictChange._make
    listed = [
        ModelImpact(_listed_model(fields), after, tuple(map(make, changes)), verdicts)
        for fields, after, changes, verdicts in models
    ]
    return Impact(listed, examined, checks, recorded, rechecked, removed)


def merged(parts: Iterable[Impact]) -> Impact:
    """One impact of assessments over disjoint shares of the models, in their order."""
    whole = Impact()
    rechecked: set[str] = set()
    removed: set[str] = set()
    for part in parts:
        whole.models += part.models
        whole.examined += part.examined
        whole.checks += part.checks
        whole.recorded += part.recorded
        rechecked.update(part.rechecked)
        removed.update(part.removed)
    whole.rechecked = tuple(sorted(rechecked))
    whole.removed = tuple(sorted(removed))
    return whole


def _judged_by_digest(model: IndexedModel) -> dict[str, str]:
    return {
        model.consumer_digests[name]: state
        for name, state in model.verdicts.items()
        if name in model.consumer_digests
    }


def _listed(model: IndexedModel) -> tuple[Any, ...]:
    """What a preview shows of a model: where it is, its owners and status before."""
    m = model
    return m.bucket, m.key, m.version_id, m.report_bucket, m.report_key, m.status, m.owners


def _listed_model(fields: tuple[Any, ...]) -> IndexedModel:
    bucket, key, version_id, report_bucket, report_key, status, owners = fields
    return IndexedModel(
        bucket, key, version_id, report_bucket, report_key, status, (), {}, {}, owners=owners
    )


def _listing(model: IndexedModel) -> IndexedModel:
    """The model as a preview lists it (`_listed`), without metadata or verdicts."""
    return _listed_model(_listed(model))


def assess(
    models: Iterable[IndexedModel],
    consumers: Sequence[Consumer],
    *,
    history: History | None = None,
    policy: Policy | None = None,
    recheck_all: bool = False,
    progress: Callable[[int], None] | None = None,
    with_artifacts: bool = True,
) -> Impact:
    """Every model's verdicts under `consumers`, against what the index recorded.

    With a fleet policy, or `recheck_all`, every consumer is checked (a policy
    adds findings no digest captures). Only models whose status or verdicts
    change are listed; without `with_artifacts`, listed by what a preview shows (where,
    owners, status before), without their metadata and recorded verdicts (adding a
    consumer lists every model: at 100,000 models they held gigabytes, and forked
    processes send the listing back: `worker.pipeline.impact_run`).
    """
    policy = policy or Policy()
    recheck_all = recheck_all or bool(policy.bad_consumers)
    digests = {c.name: consumer_digest(c) for c in consumers}
    # what every catalog release did with each model, recorded at upload (default policy)
    releases = (
        release_lookup(history)
        if isinstance(history, Catalog) and not recheck_all and policy == Policy()
        else None
    )
    names = set(digests)
    fleet = [(c, digests[c.name]) for c in consumers]
    impact = Impact()
    rechecked: set[str] = set()
    removed: set[str] = set()
    for model in models:
        impact.examined += 1
        after: dict[str, str] = {}
        changes: list[VerdictChange | None] = []  # in fleet order (None: a slot unused)
        judged: dict[str, str] | None = None  # recorded state by consumer digest
        # (state, reasons) by verdict class: consumers alike for this model are checked once
        classes: dict[tuple[Hashable | None, ...], tuple[Status, tuple[str, ...]]] = {}
        # consumers to check: (consumer, recorded, artifacts, the slot of its change)
        to_check: list[tuple[Consumer, str | None, list[Artifact], int]] = []
        invalid, states, recorded_digests = model.invalid, model.verdicts, model.consumer_digests
        for consumer, digest in fleet:
            recorded = states.get(consumer.name)
            if invalid or (
                recorded is not None
                and not recheck_all
                and recorded_digests.get(consumer.name) == digest
            ):
                if recorded is not None:
                    after[consumer.name] = recorded
                continue
            if not recheck_all:
                if judged is None:
                    judged = _judged_by_digest(model)
                same = judged.get(digest)
                if same is not None and same != FAILS:
                    after[consumer.name] = same
                    if recorded != same:
                        changes.append(VerdictChange(consumer.name, recorded, same))
                    continue
                release = releases.verdict(model, digest) if releases is not None else None
                if release is not None:  # a catalog release: its verdict, errors and all
                    rechecked.add(consumer.name)
                    impact.recorded += 1
                    state, reasons = release
                    after[consumer.name] = state
                    if recorded is None or parse_status(recorded) != parse_status(state):
                        changes.append(VerdictChange(consumer.name, recorded, state, reasons))
                    continue
            # a TFLite runtime judges .tflite files only
            applicable = [a for a in model.artifacts if applies(a, consumer)]
            if applicable:
                after[consumer.name] = ""  # its place in fleet order, filled below
                to_check.append((consumer, recorded, applicable, len(changes)))
                changes.append(None)
        # classes pay only where two consumers could share one (adding a consumer checks
        # one per model, where the class cost a fifth of the pass: bench/fleet_impact.py)
        classed = len(to_check) > 1
        for consumer, recorded, applicable, slot in to_check:
            rechecked.add(consumer.name)
            key = (
                (None,)
                if not classed
                else (verdict_class(applicable[0], consumer, history, policy),)
                if len(applicable) == 1
                else tuple(verdict_class(a, consumer, history, policy) for a in applicable)
            )
            judged_alike = None if None in key else classes.get(key)
            if judged_alike is None:
                verdicts = [check_artifact(a, consumer, history, policy) for a in applicable]
                impact.checks += len(verdicts)
                errors = (f.message for v in verdicts for f in v.findings if f.severity == "error")
                judged_alike = (verdict_state(verdicts), tuple(islice(errors, 5)))
                if None not in key:
                    classes[key] = judged_alike
            state, reasons = judged_alike
            after[consumer.name] = state
            if recorded is None or parse_status(recorded) != state:
                changes[slot] = VerdictChange(consumer.name, recorded, state, reasons)
        for name, recorded in model.verdicts.items():
            if name not in names:
                removed.add(name)
                changes.append(VerdictChange(name, recorded, None))
        status_after = status_from(set(after.values()), invalid)  # a few distinct states
        changed = tuple(c for c in changes if c is not None)
        if changed or status_after != parse_status(model.status):
            listed = model if with_artifacts else _listing(model)
            impact.models.append(ModelImpact(listed, status_after, changed, after))
        if progress:
            progress(1)
    impact.rechecked = tuple(sorted(rechecked))
    impact.removed = tuple(sorted(removed))
    return impact
