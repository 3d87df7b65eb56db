"""The measured effect of every attr a release added (`data/attr_effects.json`).

Written by tools/attrs/measure.py (format `tfcompat-attr-effects/1`): for each attr
that some release's OpDef adds to an existing op, its class (`changes-results`,
`no-effect-on-results`, `unverified`), how that was established, the release the
probe ran in and, for `changes-results`, the input and both results that show it.
An attr missing from the table has no row: callers treat it as not verified.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from typing import Any

from worker.model.effects import AttrEffect, Effect

ATTR_EFFECTS_FORMAT = "tfcompat-attr-effects/1"
_SHOWN = 240  # characters of a result kept in a message; the data file has it all


class ShippedAttrEffects:
    """(op, attr) -> its measured effect; rows decoded once, on first use."""

    def __init__(self, data: bytes) -> None:
        doc = json.loads(data)
        if doc.get("format") != ATTR_EFFECTS_FORMAT:
            raise ValueError(f"attr effects: unknown format {doc.get('format')!r}")
        self._rows: dict[tuple[str, str], dict[str, Any]] = {
            (row["op"], row["attr"]): row for row in doc["attrs"]
        }
        self._decoded: dict[tuple[str, str], AttrEffect] = {}

    def effect(self, op: str, attr: str) -> AttrEffect | None:
        key = (op, attr)
        found = self._decoded.get(key)
        if found is None:
            row = self._rows.get(key)
            if row is None:
                return None
            found = self._decoded[key] = _effect(row)
        return found

    def since(self, op: str, attr: str) -> str | None:
        row = self._rows.get((op, attr))
        return row["since"] if row else None

    def counts(self, since: tuple[int, int] = (0, 0)) -> dict[Effect, int]:
        """How many attrs of each class, of those added in `since` (major, minor) or later."""
        counted = Counter(
            Effect(row["effect"])
            for row in self._rows.values()
            if tuple(int(p) for p in row["since"].split(".")[:2]) >= since
        )
        return {effect: counted.get(effect, 0) for effect in Effect}


def _effect(row: dict[str, Any]) -> AttrEffect:
    return AttrEffect(
        op=row["op"],
        attr=row["attr"],
        effect=Effect(row["effect"]),
        how=row["how"],
        measured_in=row.get("measured_in"),
        evidence=_evidence(row) if row["effect"] == Effect.CHANGES_RESULTS else "",
        refuses_only=row.get("difference") == "refuses",
    )


def _evidence(row: dict[str, Any]) -> str:
    """One line a message can quote: the value, and what the default and it gave."""
    found = row.get("evidence") or {}
    return (
        f"with {row['attr']}={_value(found.get('value'))} the op gave "
        f"{_result(found.get('value_result'))}; with the default, "
        f"{_result(found.get('default_result'))}"
    )


def _value(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1:
        ((kind, raw),) = value.items()
        if kind == "s":
            return repr(base64.b64decode(raw).decode(errors="replace"))
        if kind in ("i", "f", "b", "type"):
            return str(raw).lower() if kind == "b" else str(raw)
    return json.dumps(value, sort_keys=True)


def _tensor(found: dict[str, Any]) -> str:
    values = found.get("values", [])
    if found.get("dtype") == "string":  # the probe writes strings as base64
        values = [repr(base64.b64decode(v).decode(errors="replace")) for v in values]
    shown = ", ".join(str(v) for v in values[:8]) + (", ..." if len(values) > 8 else "")
    return f"{found.get('dtype')}{found.get('shape')} [{shown}]"


def _result(result: Any) -> str:
    if not isinstance(result, dict):
        return "nothing"
    if "error" in result:
        return f"the error {result['error']} ({result.get('message', '')[:120]})"
    parts = []
    for output in result.get("outputs", []):
        if "elements" in output:
            elements = output["elements"]
            parts.append(
                f"{len(elements)} element(s) "
                + "; ".join(" ".join(_tensor(c) for c in e) for e in elements[:4])
                + ("; ..." if len(elements) > 4 else "")
            )
        else:
            parts.append(_tensor(output))
    parts.extend(f"variable {_tensor(v)}" for v in result.get("variables", []))
    text = "outputs " + ", ".join(parts) if parts else "no outputs"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
