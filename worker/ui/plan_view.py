"""The plan page's data, shaped from `tfcompat fleet plan --json` (`plan_advice.plan_json`)
as the worker computed it: nothing is computed again here, only put in words the way
`worker.cli.plan_render` words the same fields (the fixes by `worker.notify.fixes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worker.notify.fixes import alternative_text, fix_text, plain

NO_FIX = "no model-side fix known"


def group_of(cause: Mapping[str, Any], consumer: str) -> dict[str, Any]:
    """One cause of missed models: its head (the finding's code, or the verdict state
    when no finding names one), counts, owners, an example message, what fixes it (the
    consumer's fix and the model-side alternative) and the first models."""
    fix, reexport = cause.get("fix"), cause.get("reexport")
    fixes: list[tuple[str, str]] = []
    if reexport and reexport == fix:
        fixes.append(("Fix (by re-exporting)", fix_text(fix, consumer, plain)))
    else:
        if fix and fix_text(fix, consumer, plain):
            fixes.append(("Fix", fix_text(fix, consumer, plain)))
        if reexport:
            text = fix_text(reexport, consumer, plain) or alternative_text(fix, plain)
            fixes.append(("Or re-export", text or str(reexport.get("kind"))))
        else:
            fixes.append(("Re-export", NO_FIX))
    listed = list(cause.get("listed") or [])
    return {
        "head": cause.get("code") or cause.get("state"),
        "models": int(cause.get("models") or 0),
        "owners": list(cause.get("owners") or []),
        "message": cause.get("message"),
        "fixes": fixes,
        "listed": listed,
        "more": int(cause.get("models") or 0) - len(listed),
    }


def advice(consumer: Mapping[str, Any]) -> str:
    """Upgrade or re-export, compared by what each touches (`plan_render._advice`)."""
    current, recommended = consumer.get("current"), consumer.get("recommended")
    stays = consumer.get("reexport_touches", 0)
    if consumer.get("choice") == "nothing":
        return f"{current} already serves every model it must: stay"
    if recommended == current:
        return f"no release it may move to serves more than {current}: re-export {stays} model(s)"
    moves = consumer.get("upgrade_touches", 0)
    upgrade = (
        f"upgrade to {recommended}"
        + (f" and re-export {moves - 1} model(s)" if moves > 1 else "")
        + f" (touches {moves})"
    )
    reexport = f"re-export {stays} model(s) and stay at {current} (touches {stays})"
    if moves == stays:
        return f"{upgrade} vs {reexport}: both touch {moves}"
    better = "re-export" if consumer.get("choice") == "re-export" else "upgrade"
    return f"{upgrade} vs {reexport}: {better} touches fewer"


def consumer_of(consumer: Mapping[str, Any]) -> dict[str, Any]:
    name = str(consumer.get("name"))
    rows = list(consumer.get("candidates") or [])
    chosen = next((r for r in rows if r.get("recommended")), None)
    moves = consumer.get("recommended") not in (None, consumer.get("current"))
    return {
        **consumer,
        "rows": rows,
        "at_risk": int(chosen.get("at_risk") or 0) if chosen else 0,
        "blocked_by": [group_of(c, name) for c in consumer.get("blockers") or []],
        "instead": [group_of(c, name) for c in consumer.get("reexport_instead") or []]
        if moves
        else [],
        "advice": advice(consumer) if consumer.get("recommended") else "",
    }


def producer_of(producer: Mapping[str, Any]) -> dict[str, Any]:
    now, after = producer.get("newest_now"), producer.get("newest_after")
    return {
        **producer,
        "now": f"<= {now} until {producer.get('held_by')} moves" if now else "-",
        "after": f"<= {after} ({producer.get('held_after_by')})" if after else "-",
    }


def page_of(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The page's view of the plan's JSON document."""
    return {
        **plan,
        "consumers": [consumer_of(c) for c in plan.get("consumers") or []],
        "producers": [producer_of(p) for p in plan.get("producers") or []],
    }
