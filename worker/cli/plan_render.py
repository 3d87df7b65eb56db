"""`tfcompat fleet plan` as text and CSV: rendered from the plan's data
(`worker.fleet.plan_advice`), never computed here."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from worker.fleet.plan_advice import (
    CSV_HEADER,
    CauseGroup,
    Decision,
    decisions,
    export_advice,
    listed,
    plan_rows,
)
from worker.notify.fixes import alternative_text, fix_text, plain

COLUMNS = ("release", "serves", "at-risk", "fails", "unknown", "gains", "loses", "misses")


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent
        + "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


TEXT_LISTED = 3  # models named per cause in text (--json names more)


def _group_lines(plan: Any, group: CauseGroup, consumer: str) -> list[str]:
    cause = group.cause
    head = f"{cause.code}" if cause else group.state
    lines = [f"    {head}: {group.models} model(s); owners: {', '.join(group.owners)}"]
    fix = dict(cause.fix) if cause and cause.fix else None
    if cause:
        lines.append(f"      e.g. {cause.message}")
    if group.reexport and group.reexport == fix:
        lines.append(f"      fix (by re-exporting): {fix_text(fix, consumer, plain)}")
    else:
        if fix and fix_text(fix, consumer, plain):
            lines.append(f"      fix: {fix_text(fix, consumer, plain)}")
        if group.reexport:
            text = fix_text(group.reexport, consumer, plain) or alternative_text(fix, plain)
            lines.append(f"      or re-export: {text or group.reexport['kind']}")
        else:
            lines.append("      re-export: no model-side fix known")
    shown = listed(plan, group.groups, TEXT_LISTED)
    lines += [f"      - {m}" for m in shown]
    if group.models > len(shown):
        lines.append(f"      ... and {group.models - len(shown)} more")
    return lines


def _advice(decision: Decision) -> str:
    if decision.choice == "nothing":
        return f"  {decision.current} already serves every model it must: stay"
    if not decision.moves:
        return (
            f"  no release it may move to serves more than {decision.current}: re-export "
            f"{decision.reexport_touches} model(s)"
        )
    moves = decision.upgrade_touches
    stays = decision.reexport_touches
    upgrade = (
        f"upgrade to {decision.recommended}"
        + (f" and re-export {moves - 1} model(s)" if moves > 1 else "")
        + f" (touches {moves})"
    )
    reexport = f"re-export {stays} model(s) and stay at {decision.current} (touches {stays})"
    if moves == stays:
        return f"  compare: {upgrade} vs {reexport}: both touch {moves}"
    better = "re-export" if decision.choice == "re-export" else "upgrade"
    return f"  compare: {upgrade} vs {reexport}: {better} touches fewer"


def render_plan(plan: Any) -> str:
    moves = decisions(plan)
    lines = [
        f"{plan.examined} model(s) examined in {plan.groups} record group(s), "
        f"{plan.checks} check(s) run, {plan.recorded} verdict(s) as recorded at upload",
        "",
    ]
    for cp, decision in zip(plan.consumers, moves, strict=True):
        c = cp.consumer
        lines.append(f"{c.name} ({c.tensorflow or 'no release'}, {c.loader}; must serve {cp.must})")
        if decision.skipped:
            lines += [f"  not planned: {decision.skipped}", ""]
            continue
        rows: list[tuple[str, ...]] = [COLUMNS]
        for n, (candidate, t) in enumerate(zip(cp.candidates, cp.tallies, strict=True)):
            mark = (" now" if candidate.current else "") + (" <" if n == cp.recommended else "")
            rows.append(
                (
                    candidate.release + mark,
                    *(str(v) for v in (t.serves, t.at_risk, t.fails, t.unknown, t.gains)),
                    str(t.loses),
                    str(t.misses),
                )
            )
        lines += _table(rows)
        risk = (
            f", {decision.at_risk} of them at-risk (serves with a hazard)"
            if decision.at_risk
            else ""
        )
        if decision.serves_all:
            lines.append(f"  recommended: {decision.recommended} serves every model it must{risk}")
        else:
            lines.append(
                f"  no release serves every model it must: {decision.recommended} serves most"
                f"{risk}; missing:"
            )
            for group in decision.blockers:
                lines += _group_lines(plan, group, c.name)
        if decision.stay and decision.moves and decision.choice == "re-export":
            lines.append(f"  staying at {decision.current}, re-export:")
            for group in decision.stay:
                lines += _group_lines(plan, group, c.name)
        elif decision.stay and decision.moves:
            codes = ", ".join(f"{g.cause.code if g.cause else g.state} {g.models}"
                              for g in decision.stay)  # fmt: skip
            owners = sorted({o for g in decision.stay for o in g.owners})
            lines.append(
                f"  staying at {decision.current}: re-export {decision.reexport_touches} "
                f"model(s) ({codes}); owners: {', '.join(owners)}"
            )
        lines += [_advice(decision), ""]
    lines.append("producers: the newest release to export with so that every consumer serves")
    lines.append(
        "  (a bound: the fleet's oldest consumer release; 'served now' is measured, from the "
        "recorded verdicts)"
    )
    producers: list[tuple[str, ...]] = [
        ("owner", "models", "served now", "export with", "after the plan")
    ]
    for a in export_advice(plan, moves):
        now = f"<= {a.newest_now} until {a.held_by} moves" if a.newest_now else "-"
        after = f"<= {a.newest_after} ({a.held_after_by})" if a.newest_after else "-"
        producers.append((a.owner, str(a.models), str(a.served_everywhere), now, after))
    lines += _table(producers)
    return "\n".join(lines) + "\n"


def render_plan_csv(plan: Any) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerows(plan_rows(plan))
    return out.getvalue()
