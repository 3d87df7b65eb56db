"""What a plan advises: per consumer, upgrade or have the blocking models re-exported
(whichever touches fewer things), and per model owner, the newest release to export
with. Pure: reads a `worker.fleet.plan.Plan`, returns data; the CLI renders it.

Re-exporting is the alternative the findings' fixes already know: a fix a model's
owner applies (`MODEL_FIXES`: a `tfcompat fix` copy, `strip_default_attrs`, export
with an older release, ...), or the other half of an `upgrade_to` fix that names an
op (re-export without the op, or with the attr at its default: what
`worker.notify.fixes.alternative_text` says), or, for a GraphDef minimum above the
consumer's, export with the consumer's own release.

The producers' side is a bound, not a measurement: TensorFlow promises that a binary
loads what older releases wrote (within the GraphDef versions' minimums), not what
newer ones wrote, so a model exported with a release no newer than the fleet's oldest
consumer uses nothing that consumer lacks, save what the fleet's records show (the
measured part: how many of the owner's models every consumer serves today, from the
recorded verdicts).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from packaging.version import Version

from worker.fleet.fleet import Fleet
from worker.fleet.plan import (
    LISTED,
    MODEL_FIXES,
    Cause,
    Plan,
)
from worker.model.findings import Code, FixKind

NO_OWNER = "(no owner recorded)"
NOT_JUDGED = "not judged"


# Version rules a producer no newer than the consumer meets: TensorFlow writes a
# GraphDef's min_consumer no higher than its own version (`worker.compat.versions`).
_EXPORT_OLDER = frozenset({str(Code.MIN_CONSUMER)})


def reexport_fix(cause: Cause | None, release: str | None = None) -> dict[str, str] | None:
    """The fix a model's owner can apply instead of the consumer (at `release`) moving;
    None when the findings know none."""
    if cause is None:
        return None
    fix = dict(cause.fix)
    kind = fix.get("kind")
    if kind in MODEL_FIXES:
        return fix
    if kind == FixKind.UPGRADE_TO and fix.get("op"):
        if fix.get("attr"):
            return {"kind": str(FixKind.SET_ATTR_DEFAULT), "op": fix["op"], "attr": fix["attr"]}
        return {"kind": str(FixKind.REEXPORT_WITHOUT_OP), "op": fix["op"]}
    if kind == FixKind.UPGRADE_TO and cause.code in _EXPORT_OLDER and release:
        return {"kind": str(FixKind.REEXPORT_WITH), "release": release}
    return None


@dataclass
class CauseGroup:
    """Models failing for one cause (None: no error finding to name: see `state`), as
    the plan's groups of models alike (`Plan.members`)."""

    cause: Cause | None
    state: str  # incompatible | unknown | not judged
    groups: list[int]
    models: int = 0
    owners: list[str] = field(default_factory=list)
    reexport: dict[str, str] | None = None


def cause_groups(plan: Plan, number: int, candidate: int) -> list[CauseGroup]:
    """The models a consumer's candidate misses, by cause (the first error finding's code
    and fix; the first model's message stands for the group), most models first."""
    tally = plan.consumers[number].tallies[candidate]
    release = plan.consumers[number].candidates[candidate].release
    missed = set(tally.missed_groups)
    by_key: dict[tuple[str, Any], CauseGroup] = {}
    grouped: set[int] = set()
    for cause_id, groups in tally.causes.items():
        mine = [g for g in groups if g in missed]
        if not mine:
            continue
        grouped.update(mine)
        cause = plan.causes[cause_id]
        found = by_key.get((cause.code, cause.fix))
        if found is None:
            found = by_key[(cause.code, cause.fix)] = CauseGroup(
                cause, "incompatible", [], reexport=reexport_fix(cause, release)
            )
        found.groups += mine
    result = list(by_key.values())
    rest: dict[str, CauseGroup] = {}
    for g in tally.missed_groups:
        if g not in grouped:
            state = plan.group_state(g, number, candidate) or NOT_JUDGED
            rest.setdefault(state, CauseGroup(None, state, [])).groups.append(g)
    result += rest.values()
    for found in result:
        found.models = plan.count(found.groups)
        found.owners = sorted(plan.owners(found.groups, NO_OWNER))
    result.sort(key=lambda g: (-g.models, g.cause.code if g.cause else "~"))
    return result


@dataclass
class Decision:
    """One consumer's advice."""

    consumer: str
    current: str | None
    recommended: str | None  # None: nothing to move to (see `skipped`)
    serves_all: bool  # the recommended release serves every model the consumer must
    at_risk: int  # of those, served with a named hazard
    blockers: list[CauseGroup] = field(default_factory=list)  # what the recommended misses
    stay: list[CauseGroup] = field(default_factory=list)  # what the current release misses
    skipped: str | None = None

    @property
    def moves(self) -> bool:
        return self.recommended is not None and self.recommended != self.current

    @property
    def upgrade_touches(self) -> int:
        """Things changed to serve everything by moving: the consumer, and the models
        its new release still misses (re-exported)."""
        return int(self.moves) + sum(g.models for g in self.blockers)

    @property
    def reexport_touches(self) -> int:
        """Models re-exported to serve everything without moving."""
        return sum(g.models for g in self.stay)

    @property
    def choice(self) -> str:
        """upgrade | re-export | nothing (already serves everything) | none (cannot move)"""
        if self.recommended is None:
            return "none"
        if not self.stay:
            return "nothing"
        if not self.moves or self.reexport_touches <= self.upgrade_touches:
            return "re-export"
        return "upgrade"


def decisions(plan: Plan) -> list[Decision]:
    found = []
    for number, cp in enumerate(plan.consumers):
        best = cp.recommended
        c = cp.consumer
        if best is None:
            found.append(Decision(c.name, c.tensorflow, None, False, 0, skipped=cp.skipped))
            continue
        tally = cp.tallies[best]
        found.append(
            Decision(
                c.name,
                c.tensorflow,
                cp.candidates[best].release,
                tally.misses == 0,
                tally.at_risk,
                cause_groups(plan, number, best),
                cause_groups(plan, number, 0),
            )
        )
    return found


@dataclass
class ExportAdvice:
    """The newest release an owner may export with so that every consumer still serves
    their models: a bound (the oldest consumer release), now and once the plan's moves
    are made, with the measured part."""

    owner: str
    models: int
    served_everywhere: int  # measured: every consumer's recorded verdict serves it
    newest_now: str | None  # minor, e.g. "1.15"; None: no TensorFlow consumer
    held_by: str | None  # the consumer setting that bound
    newest_after: str | None  # the bound once every recommended move is made
    held_after_by: str | None


def _minor(release: str) -> str:
    v = Version(release)
    return f"{v.major}.{v.minor}"


def export_advice(plan: Plan, moves: list[Decision]) -> list[ExportAdvice]:
    now = [
        (Version(cp.consumer.tensorflow), cp.consumer.name)
        for cp in plan.consumers
        if cp.consumer.tensorflow and cp.skipped is None
    ]
    after = [(Version(d.recommended), d.consumer) for d in moves if d.recommended and not d.skipped]
    oldest_now = min(now) if now else None
    oldest_after = min(after) if after else None
    owners: dict[str, list[int]] = {}
    for number, ref in enumerate(plan.models):
        for owner in ref.owners or (NO_OWNER,):
            owners.setdefault(owner, []).append(number)
    return [
        ExportAdvice(
            owner,
            len(models),
            sum(plan.served_everywhere[m] for m in models),
            _minor(str(oldest_now[0])) if oldest_now else None,
            oldest_now[1] if oldest_now else None,
            _minor(str(oldest_after[0])) if oldest_after else None,
            oldest_after[1] if oldest_after else None,
        )
        for owner, models in sorted(owners.items())
    ]


def listed(plan: Plan, groups: list[int], most: int = LISTED) -> list[str]:
    """The first models of groups, by location (the counts say how many in all)."""
    return [plan.models[m].location for m in plan.first_models(groups, most)]


def _cause_json(plan: Plan, group: CauseGroup) -> dict[str, Any]:
    return {
        "code": group.cause.code if group.cause else None,
        "message": group.cause.message if group.cause else None,
        "fix": dict(group.cause.fix) if group.cause and group.cause.fix else None,
        "state": group.state,
        "models": group.models,
        "listed": listed(plan, group.groups),
        "owners": group.owners,
        "reexport": group.reexport,
    }


def plan_json(plan: Plan) -> dict[str, Any]:
    """The whole plan as data (`tfcompat fleet plan --json`)."""
    moves = decisions(plan)
    consumers = []
    for number, (cp, decision) in enumerate(zip(plan.consumers, moves, strict=True)):
        rows = []
        for n, (candidate, tally) in enumerate(zip(cp.candidates, cp.tallies, strict=True)):
            rows.append(
                {
                    "release": candidate.release,
                    "current": candidate.current,
                    "serves": tally.serves,
                    "at_risk": tally.at_risk,
                    "fails": tally.fails,
                    "unknown": tally.unknown,
                    "gains": tally.gains,
                    "loses": tally.loses,
                    "still_fails": tally.still_fails,
                    "misses": tally.misses,
                    "serves_all": tally.misses == 0,
                    "at_risk_models": listed(plan, tally.at_risk_groups),
                    "lost_models": listed(plan, tally.lost_groups),
                    "causes": [_cause_json(plan, g) for g in cause_groups(plan, number, n)],
                    "recommended": n == cp.recommended,
                }
            )
        consumers.append(
            {
                "name": cp.consumer.name,
                "current": cp.consumer.tensorflow,
                "loader": str(cp.consumer.loader),
                "must_serve": cp.must,
                "skipped": cp.skipped,
                "recommended": decision.recommended,
                "serves_all": decision.serves_all,
                "choice": decision.choice,
                "upgrade_touches": decision.upgrade_touches,
                "reexport_touches": decision.reexport_touches,
                "blockers": [_cause_json(plan, g) for g in decision.blockers],
                "reexport_instead": [_cause_json(plan, g) for g in decision.stay],
                "candidates": rows,
            }
        )
    return {
        "models_examined": plan.examined,
        "model_groups": plan.groups,
        "distinct_outcomes": len(plan.signatures),
        "checks_run": plan.checks,
        "verdicts_recorded_at_upload": plan.recorded,
        "consumers": consumers,
        "producers": [vars(a) for a in export_advice(plan, moves)],
    }


CSV_HEADER = (
    "consumer", "release", "current", "recommended", "serves", "at_risk", "fails",
    "unknown", "gains", "loses", "still_fails", "misses", "first_cause",
)  # fmt: skip


def plan_rows(plan: Plan) -> list[tuple[str, ...]]:
    """One row per consumer and candidate (`--csv`)."""
    rows = []
    for number, cp in enumerate(plan.consumers):
        for n, (candidate, tally) in enumerate(zip(cp.candidates, cp.tallies, strict=True)):
            groups = cause_groups(plan, number, n)
            first = (groups[0].cause.code if groups[0].cause else groups[0].state) if groups else ""
            rows.append(
                (
                    cp.consumer.name,
                    candidate.release,
                    "yes" if candidate.current else "",
                    "yes" if n == cp.recommended else "",
                    *(
                        str(v)
                        for v in (
                            tally.serves,
                            tally.at_risk,
                            tally.fails,
                            tally.unknown,
                            tally.gains,
                            tally.loses,
                            tally.still_fails,
                            tally.misses,
                        )
                    ),
                    first,
                )
            )
    return rows


def recommended_fleet(plan: Plan, fleet: Fleet) -> Fleet:
    """The fleet with every consumer at its recommended release (`fleet apply`'s input
    once the plan is chosen); consumers that stay, or cannot move, unchanged."""
    moved = {
        cp.consumer.name: cp.candidates[cp.recommended].definition
        for cp in plan.consumers
        if cp.recommended is not None
    }
    return replace(fleet, consumers=tuple(moved.get(c.name, c) for c in fleet.consumers))
