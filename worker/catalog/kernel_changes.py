"""Ops whose kernels compute differently between releases (`data/kernel_changes.json.gz`).

Written by tools/kernels/sweep.py (format `tfcompat-kernel-changes/2`): every op the
probe could build from its OpDef, for each dtype it takes, run on eight input
classes in every catalogued release and compared with the newest release; per
(op, dtype) the releases whose results differ, the input class and both outputs.
Differences within the stated tolerance (ULPs of the output dtype, chosen from the
measured distribution: `tolerance` in the file) are kept but are no change here.
The 88 hand cases of tools/attrs/kernels.py (format `tfcompat-kernel-changes/1`,
richer inputs: image corners, quantization ranges) ride along under `hand` and are
looked up first; a file of format 1 alone is still read.

Severity per input class: the sweep records, per release that differs, every input
class that differs beyond the tolerance and whether one of them is a class a served
model meets (`met_on: ordinary`: ordinary, halves, scalar, indices) or only extreme
and special ones (`met_on: extremes`: NaN and infinities, overflowing magnitudes,
values near the smallest normal, zero-sized tensors, a special value against an
ordinary one, INT_MIN / -1). A change recorded without `met_on` counts as ordinary
(a hazard): nothing is demoted without a measurement per class. A hand case is
`extremes` when its inputs hold a NaN, an infinity or a magnitude of 1e18 or more and
every output value that differs beyond 4 ULPs has NaN or an infinity on one side
(`hand_met_on`).

Nondeterminism: the releases whose own two runs of a node of an (op, dtype) in one
session disagree (`nondeterministic`, with the input classes, `met_on`, the outputs that
differ and both answers), read as `KernelNondeterminism` for `kernel.nondeterministic`;
a file without it is read from `nondeterministic_in` (met on ordinary inputs, whose runs
not said).

The file is read at start-up but parsed on first use: most checks never ask. A
release is matched by its minor: the patch releases of a minor run the measured
one's kernels as far as the catalog knows (the registries say the same).
"""

from __future__ import annotations

import functools
import gzip
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from worker.model.effects import KernelChange, KernelNondeterminism

KERNEL_CHANGES_FORMAT = "tfcompat-kernel-changes/1"
SWEEP_FORMAT = "tfcompat-kernel-changes/2"
HAND_TOOL = "tools/attrs/kernels.py"
SWEEP_TOOL = "tools/kernels/sweep.py"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


def hand_dtype(attrs: Mapping[str, Any]) -> str | None:
    """A node's type as the hand cases key it: `T`, `Tparams`, or `SrcT->DstT`."""
    if "SrcT" in attrs and "DstT" in attrs:
        src, dst = attrs["SrcT"].get("type"), attrs["DstT"].get("type")
        return f"{src}->{dst}" if src and dst else None
    for name in ("T", "Tparams"):
        found = attrs.get(name, {}).get("type")
        if found:
            return str(found)
    return None


@dataclass
class _Tables:
    """The parsed file: (op, dtype, minor) -> change, and what was compared."""

    newest: str = ""
    releases: list[str] = field(default_factory=list)
    by_key: dict[tuple[str, str, str], KernelChange] = field(default_factory=dict)
    measured: set[tuple[str, str]] = field(default_factory=set)
    type_attr: dict[str, str | None] = field(default_factory=dict)
    fixed_dtype: dict[str, str] = field(default_factory=dict)
    unbuildable: dict[str, str] = field(default_factory=dict)
    tolerance_ulps: float | None = None
    sweep_releases: set[str] = field(default_factory=set)  # the minors the sweep ran in
    unsteady: dict[tuple[str, str, str], KernelNondeterminism] = field(default_factory=dict)


class ShippedKernelChanges:
    """(op, dtype, minor) -> the change measured there; parsed on first use."""

    def __init__(self, data: bytes) -> None:
        self._data = data  # gzip-compressed or not; decompressed and parsed on first use

    @functools.cached_property
    def _tables(self) -> _Tables:
        data = self._data
        doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
        tables = _Tables()
        if doc.get("format") == KERNEL_CHANGES_FORMAT:
            _add_hand(tables, doc)
            return tables
        if doc.get("format") != SWEEP_FORMAT:
            raise ValueError(f"kernel changes: unknown format {doc.get('format')!r}")
        if doc.get("hand"):
            _add_hand(tables, doc["hand"])
        _add_sweep(tables, doc)
        return tables

    @property
    def newest(self) -> str:
        return self._tables.newest

    @property
    def releases(self) -> list[str]:
        return self._tables.releases

    @functools.cached_property
    def ops(self) -> frozenset[str]:
        """Every op with a measured change or measured nondeterministic, in some release
        and dtype: the ops whose findings may differ by release."""
        tables = self._tables
        return frozenset(k[0] for k in (*tables.by_key, *tables.unsteady))

    @property
    def tolerance_ulps(self) -> float | None:
        return self._tables.tolerance_ulps

    def dtype_keys(self, op: str, attrs: Mapping[str, Any]) -> list[str]:
        """The keys a node of `op` with `attrs` is measured under: the hand cases' and the
        sweep's (its op's own type attr, or the op's one fixed dtype)."""
        keys = []
        hand = hand_dtype(attrs)
        if hand is not None:
            keys.append(hand)
        tables = self._tables
        if op in tables.fixed_dtype:
            keys.append(tables.fixed_dtype[op])
        else:
            name = tables.type_attr.get(op)
            found = attrs.get(name, {}).get("type") if name else None
            if found and found not in keys:
                keys.append(str(found))
        return keys

    def change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        return self._tables.by_key.get((op, dtype, _minor(release)))

    def nondeterminism(self, op: str, dtype: str, release: str) -> KernelNondeterminism | None:
        """Whether two runs of a node of (op, dtype) in one session of `release`'s minor
        answered otherwise, as measured; None: not seen (or not run twice)."""
        return self._tables.unsteady.get((op, dtype, _minor(release)))

    def measured(self, op: str, dtype: str) -> bool:
        """Whether (op, dtype) was run and compared in the releases (changed or not)."""
        return (op, dtype) in self._tables.measured

    def release_measured(self, release: str) -> bool:
        """Whether the sweep ran in `release`'s minor (the hand cases alone do not say)."""
        tables = self._tables
        return not tables.sweep_releases or _minor(release) in tables.sweep_releases

    def unbuildable(self, op: str) -> str | None:
        """Why the sweep could not run `op` (None: it ran, or it is not registered)."""
        return self._tables.unbuildable.get(op)

    def changed_pairs(self) -> set[tuple[str, str]]:
        return {(k[0], k[1]) for k in self._tables.by_key}


def _add_hand(tables: _Tables, doc: dict[str, Any]) -> None:
    tables.newest = tables.newest or doc["newest"]
    tables.releases = tables.releases or sorted(doc["releases"], key=_key)
    releases = sorted(doc["releases"], key=_key)
    for cid in doc.get("compared", []):
        _, op, dtype = cid.split(":")[:3]
        tables.measured.add((op, dtype))
    for row in doc["changes"]:
        differs = set(row["differs_in"])
        for release in differs:
            key = (row["op"], row["dtype"], _minor(release))
            if key in tables.by_key:
                continue  # several cases of one op and dtype: the first one's evidence
            tables.by_key[key] = KernelChange(
                op=row["op"],
                dtype=row["dtype"],
                release=release,
                newest=doc["newest"],
                evidence=_hand_evidence(row),
                same_from=_same_from(releases, release, differs),
                measured_by=HAND_TOOL,
                remeasure=f"python3 {HAND_TOOL} --envs $TFENVS",
                met_on=hand_met_on(row),
            )


def _add_sweep(tables: _Tables, doc: dict[str, Any]) -> None:
    tables.newest = doc["newest"]
    releases = sorted(doc["releases"], key=_key)
    tables.releases = releases
    tables.sweep_releases = {_minor(r) for r in releases}
    tolerance = doc.get("tolerance", {}).get("ulps")
    tables.tolerance_ulps = tolerance
    tables.unbuildable = dict(doc.get("unbuildable", {}))
    classes = doc.get("classes", {})
    remeasure = doc.get("remeasure", f"python3 {SWEEP_TOOL} --envs $TFENVS --ops {{op}}")
    for op, entry in doc["ops"].items():
        type_attr = entry.get("type_attr")
        tables.type_attr[op] = type_attr
        dtypes = entry.get("dtypes", {})
        if type_attr is None and len(dtypes) == 1:
            tables.fixed_dtype[op] = next(iter(dtypes))
        for dtype, pair in dtypes.items():
            tables.measured.add((op, dtype))
            absent = set(pair.get("absent_in", []))
            measured = [r for r in releases if r not in absent]
            differs = {
                r
                for g in pair.get("changes", [])
                if g["verdict"] == "differs"
                for r in g["releases"]
            }
            _add_nondeterminism(
                tables, (op, dtype), pair, classes.get(dtype, {}), measured, remeasure
            )
            for group in pair.get("changes", []):
                if group["verdict"] != "differs":
                    continue
                evidence = _sweep_evidence(group, classes.get(dtype, {}), measured, tolerance)
                met_on = group.get("met_on", "ordinary")
                outputs = differing_outputs(group)
                for release in group["releases"]:
                    key = (op, dtype, _minor(release))
                    known = tables.by_key.get(key)
                    if known is not None and known.measured_by == SWEEP_TOOL:
                        if known.met_on == met_on:  # another class alike: its outputs too
                            merged = _union(known.outputs, outputs)
                            tables.by_key[key] = replace(known, outputs=merged)
                            continue
                        if met_on == "extremes":
                            continue
                    elif known is not None and (known.met_on == met_on or met_on == "extremes"):
                        continue  # the hand case's richer evidence comes first, if as severe
                    tables.by_key[key] = KernelChange(
                        op=op,
                        dtype=dtype,
                        release=release,
                        newest=doc["newest"],
                        evidence=evidence,
                        same_from=_same_from(measured, release, differs),
                        measured_by=SWEEP_TOOL,
                        remeasure=remeasure.format(op=op),
                        met_on=met_on,
                        classes=tuple(group.get("classes", [group["class"]])),
                        outputs=outputs,
                    )


def _add_nondeterminism(
    tables: _Tables,
    pair_key: tuple[str, str],
    pair: Mapping[str, Any],
    classes: dict[str, Any],
    measured: list[str],
    remeasure: str,
) -> None:
    """The releases whose own two runs of a node disagree (`nondeterministic`, with the
    input classes and both answers). A table written before the sweep kept those lists
    only `nondeterministic_in`: the releases not compared because a node's runs, the
    release's own or the newest's, disagreed, with no class; read as met on ordinary
    inputs (nothing is demoted without a measurement per class)."""
    op, dtype = pair_key
    groups = pair.get("nondeterministic")
    unsteady = {r for g in groups or () for r in g["releases"]}
    unsteady |= set(pair.get("nondeterministic_in", [])) if not groups else set()
    if groups:
        for group in groups:
            evidence = _unsteady_evidence(group, classes)
            for release in group["releases"]:
                tables.unsteady.setdefault(
                    (op, dtype, _minor(release)),
                    KernelNondeterminism(
                        op=op,
                        dtype=dtype,
                        release=release,
                        evidence=evidence,
                        measured_by=SWEEP_TOOL,
                        remeasure=remeasure.format(op=op),
                        met_on=group.get("met_on", "ordinary"),
                        classes=tuple(group.get("classes", ())),
                        steady_from=_same_from(measured, release, unsteady),
                        outputs=differing_outputs(group),
                    ),
                )
        return
    for release in pair.get("nondeterministic_in", []):
        tables.unsteady.setdefault(
            (op, dtype, _minor(release)),
            KernelNondeterminism(
                op=op,
                dtype=dtype,
                release=release,
                evidence=(
                    f"two runs of one node in one session disagreed in {release} or in the "
                    f"newest release, {tables.newest} (the table records neither which nor "
                    "the input class)"
                ),
                measured_by=SWEEP_TOOL,
                remeasure=remeasure.format(op=op),
                steady_from=_same_from(measured, release, unsteady),
            ),
        )


def _unsteady_evidence(group: Mapping[str, Any], classes: dict[str, Any]) -> str:
    """The input class and values, and one node's two answers (in the outputs that differ,
    where recorded)."""
    value = classes.get(group["class"])
    shown = "a [2, 0] tensor" if value == "EMPTY" else json.dumps(value, separators=(",", ":"))
    first, second = group["first"], group.get("second")
    outputs = differing_outputs(group)
    where = ""
    if outputs is not None and second and "outputs" in first and "outputs" in second:
        first = {"outputs": [o for n, o in enumerate(first["outputs"]) if n in outputs]}
        second = {"outputs": [o for n, o in enumerate(second["outputs"]) if n in outputs]}
        where = f" in output {', '.join(str(n) for n in outputs)}"
    other = _values(second) if second else "other values (not kept by the probe)"
    return (
        f"on the {group['class']} inputs ({shown} for "
        f"{LAYOUTS.get(group['layout'], group['layout'])}), one node of "
        f"{group['releases'][0]} gave {_values(first)} on its first run and "
        f"{other} on its second{where}, in one session; input classes with such a node: "
        f"{', '.join(group.get('classes', [group['class']]))}"
    )


def differing_outputs(group: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The output positions that differ beyond the tolerance on the change's classes, as
    the sweep recorded them (`outputs`); None (any output) where it did not."""
    found = group.get("outputs")
    if not isinstance(found, list) or not found:
        return None
    return tuple(int(n) for n in found)


def _union(a: tuple[int, ...] | None, b: tuple[int, ...] | None) -> tuple[int, ...] | None:
    return None if a is None or b is None else tuple(sorted(set(a) | set(b)))


# what each of the sweep's layouts feeds the class's values to
LAYOUTS = {
    "same": "every input",
    "aux": "the swept inputs; the others 1",
    "vector": "the swept inputs; the others [1]",
    "m:same": "the first input, then the others",
    "m:aux": "the first swept input, then the other swept ones; the rest 1",
}
HUGE = 1e18  # a hand case's input this large in magnitude is an extreme one
ROUNDING_ULPS = 4.0  # the sweep's stated tolerance, applied to a hand case's outputs
EPSILON = {"float32": 2.0**-23, "float64": 2.0**-52, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _flat(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [v for item in value for v in _flat(item)]
    return [value]


def _extreme_input(value: Any) -> bool:
    x = _float(value)
    return x is not None and (not math.isfinite(x) or abs(x) >= HUGE)


def hand_met_on(row: Mapping[str, Any]) -> str:
    """`extremes` when the hand case's inputs hold an extreme value and every output
    value that differs from the newest's beyond ROUNDING_ULPS has NaN or an infinity on
    a side (what an extreme input reaching the output looks like), `ordinary` else."""
    inputs = [v for i in row.get("inputs", []) for v in _flat(i.get("tensor", {}).get("value"))]
    if not any(_extreme_input(v) for v in inputs):
        return "ordinary"
    found = row.get("evidence") or {}
    mine = (found.get("result") or {}).get("outputs")
    newest = (row.get("newest_result") or {}).get("outputs")
    if not mine or not newest or len(mine) != len(newest):
        return "ordinary"
    for a, b in zip(mine, newest, strict=True):
        if len(a.get("values", [])) != len(b.get("values", [])):
            return "ordinary"
        eps = EPSILON.get(str(b.get("dtype")))
        for u, v in zip(a["values"], b["values"], strict=True):
            x, y = _float(u), _float(v)
            if u == v:
                continue
            if x is None or y is None or eps is None:
                return "ordinary"  # a changed integer, bool or string
            if x == y or (math.isnan(x) and math.isnan(y)):
                continue
            if not (math.isfinite(x) and math.isfinite(y)):
                continue  # NaN or an infinity on a side
            if abs(x - y) > ROUNDING_ULPS * eps * max(abs(x), abs(y), 2.0**-126):
                return "ordinary"  # two numbers apart beyond rounding
    return "extremes"


def _same_from(releases: list[str], release: str, differs: set[str]) -> str | None:
    """The oldest measured release newer than `release` that gives the newest's results."""
    return next((r for r in releases if _key(r) > _key(release) and r not in differs), None)


def _hand_evidence(row: dict[str, Any]) -> str:
    found = row.get("evidence") or {}
    inputs = ", ".join(
        json.dumps(i.get("tensor", {}).get("value"), separators=(",", ":"))[:60]
        for i in row.get("inputs", [])
    )
    return (
        f"on input {inputs}, {found.get('release')} gives "
        f"{found.get('first_difference', 'other results')}"
    )


def _values(result: dict[str, Any]) -> str:
    if "outputs" not in result:
        return f"raises {result.get('error') or 'an error'}"
    shown = []
    for output in result["outputs"]:
        values = ", ".join(str(v) for v in output["values"])
        shown.append(f"{output['dtype']}{output['shape']} [{values}]")
    return "; ".join(shown)


def _sweep_evidence(
    group: dict[str, Any], classes: dict[str, Any], measured: list[str], tolerance: float | None
) -> str:
    """Input class and values, both outputs, the releases measured and the tolerance."""
    value = classes.get(group["class"])
    shown = "a [2, 0] tensor" if value == "EMPTY" else json.dumps(value, separators=(",", ":"))
    layout = LAYOUTS.get(group["layout"], group["layout"])
    near = (
        f"{group['ulps']:g} ULPs apart" if group.get("ulps") is not None else "not within rounding"
    )
    span = f"{measured[0]} to {measured[-1]}" if measured else "no release"
    rounding = f"; within {tolerance:g} ULPs counts as rounding" if tolerance is not None else ""
    return (
        f"on the {group['class']} inputs ({shown} for {layout}), {group['releases'][0]} gives "
        f"{_values(group['result'])} where the newest gives {_values(group['newest_result'])} "
        f"({group['where']}; {near}{rounding}); measured in {len(measured)} releases, {span}"
    )
