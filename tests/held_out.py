"""The held-out sets of the agreement matrices, as first measured (tests/fixtures/held_out.json).

Held-out means first measured, against rules committed before the rows, before any
tuning on them. Once rules were changed from a set's rows (`tuned_on`), those rows are
in-sample: the agreement tools print the current figure as in-sample and the
first-measured one (the commit whose message recorded it) as the held-out figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT = ROOT / "tests" / "fixtures" / "held_out.json"


@dataclass(frozen=True)
class HeldOutSet:
    name: str
    fixture: str  # repository-relative folder of its matrix
    select: dict[str, Any]  # what picks its rows: held_out_after, family or held_out
    first_measured: dict[str, Any]
    tuned_on: tuple[str, ...]  # commits that changed rules from its rows
    after_tuning: dict[str, Any] | None

    @property
    def tuned(self) -> bool:
        return bool(self.tuned_on)

    def first(self) -> str:
        """The held-out figure as first measured, or why there is none."""
        return _figures(self.first_measured)

    def label(self) -> str:
        """How an agreement tool names this set's rows now."""
        if self.tuned:
            after = f"; after tuning: {_figures(self.after_tuning)}" if self.after_tuning else ""
            return (
                f"in-sample: {self.name}, tuned on in {', '.join(self.tuned_on)} "
                f"(held-out, first measured: {self.first()}{after})"
            )
        return f"held-out: {self.name} (first measured: {self.first()})"


def _figures(record: dict[str, Any] | None) -> str:
    if not record:
        return "not recorded"
    if record.get("not_recorded"):
        return f"not recorded ({record['not_recorded']})"
    shown = ", ".join(f"{k} {a} of {n}" for k, (a, n) in record["figures"].items())
    return f"{shown} (commit {record['commit']}, rules of {record['against']})"


@cache
def held_out_sets() -> tuple[HeldOutSet, ...]:
    doc = json.loads(HELD_OUT.read_text())
    return tuple(
        HeldOutSet(
            s["name"],
            s["fixture"],
            s["select"],
            s["first_measured"],
            tuple(s["tuned_on"]),
            s["after_tuning"],
        )
        for s in doc["sets"]
    )


def held_out_set(fixture: Path, **select: Any) -> HeldOutSet | None:
    """The set of a fixture folder whose `select` is exactly this (None: no record)."""
    where = str(fixture.relative_to(ROOT)) if fixture.is_absolute() else str(fixture)
    for found in held_out_sets():
        if found.fixture == where and found.select == select:
            return found
    return None
