#!/usr/bin/env python3
"""Run every generically buildable op in every release on edge-case inputs; keep what changed.

    nice python3 tools/kernels/sweep.py [--envs $TFENVS] [--output FILE] [--cache DIR]
                                        [--releases 2.4.4,2.21.0] [--ops Max,Min [--write]]
                                        [--tolerance-ulps N] [--no-run] [--refresh]

tools/kernels/probe.py runs in every READY venv (its own Python): each op it can
build from its OpDef, for each swept dtype the op takes, on eight input classes
(ordinary, halves, special, large, tiny, empty, scalar, indices) in up to three
layouts, with the same seeds and attrs everywhere, so only the kernel differs;
tools/kernels/structured.py runs the ops that need inputs of related shapes or
attrs without defaults (matrix products, convolutions, pools, batch norms, seeded
random ops, CTC decoding...), in the same way; tools/kernels/mixed.py runs the ops
with two or more inputs of their swept type on operands of different classes (an
ordinary one against a special one, INT_MIN / -1).
Raw lines are cached per release under .cache/kernel-sweep (tools/kernels/runs.py:
restarted past an op that crashes or hangs). Every release is compared with the
newest measured one (tools/kernels/compare.py): bitwise equal; within the
tolerance (`rounding`, in ULPs of the output dtype, chosen from the measured
distribution of differences: see `tolerance` in the table); or `differs`. A ULP is
the element's own for an op that computes each element alone, and the output's
largest magnitude's for one that combines elements (`scale: output` on the pair: it
refused the rank-0 `scalar` class, or only the structured builders ran it), since
there an element that cancels to near zero keeps an absolute error at the scale of
the values combined: a bit of that scale is no change a served model meets, however
many ULPs of the small element it makes (compare.py says why and what it measured). A release
that differs records every input class that differs (`classes`) and `met_on`:
`ordinary` when one of ORDINARY_CLASSES does (its evidence shown), `extremes` when
only EXTREME_CLASSES do.

`--refresh` re-measures only the ops the table records as differing and the ops
with two or more inputs of one type attr (the catalogued registries say which), in
every release given, and replaces their entries in the table (the others, and the
tolerance's distribution, stay the whole sweep's; `remeasured` says which).
`--ops A,B --write` re-measures those ops alone in the same way (cached apart,
recorded under `remeasured_named`); without `--write` it prints how they compare.

Writes `worker/catalog/data/kernel_changes.json.gz` (format
`tfcompat-kernel-changes/2`): per op its key type attr, every (op, dtype) compared
and the releases where it was not measured, per changed (op, dtype) the releases
that differ or differ within rounding with evidence (input class and values, both
outputs, where), the releases whose own two runs of a node disagree
(`nondeterministic`: the input classes, the outputs that differ, both answers), the
ops that could not be built and why, the distribution of differences, and the hand
cases of tools/attrs/kernels.py (`hand`, format 1) merged in unchanged (re-measured
with tools/attrs/kernels.py). Standard library only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tools/: provenance

from compare import (  # noqa: E402
    DIFFERS,
    combines_elements,
    comparable,
    differences,
    finite_change,
    outputs_beyond,
)
from provenance import cpu_wheels, source_record  # noqa: E402
from runs import (  # noqa: E402
    MIXED,
    STRUCTURED,
    cache_path,
    probe_release,
    read_lines,
    ready_envs,
    version_key,
)

DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "kernel_changes.json.gz"
LEGACY_OUTPUT = REPO / "worker" / "catalog" / "data" / "kernel_changes.json"
REGISTRIES = REPO / "worker" / "catalog" / "data" / "registries.jsonl"
# A node's output with this many distinct values over the releases (and a quarter of
# the releases that ran it) holds memory nothing wrote: over the 25 releases a kernel
# that changed gave at most 5 answers (Qr half), unwritten memory 7 to 21 (a new value in
# most processes, zeros now and then).
UNSTABLE_DISTINCT = 6
UNSTABLE_SHARE = 0.25
DEFAULT_CACHE = REPO / ".cache" / "kernel-sweep"
FORMAT = "tfcompat-kernel-changes/2"
HAND_FORMAT = "tfcompat-kernel-changes/1"
DEFAULT_TOLERANCE_ULPS = 4.0
SHOWN = 6  # values of each output kept as evidence
BUCKETS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0, 1024.0, 2.0**16, 2.0**24)
REMEASURE = "nice python3 tools/kernels/sweep.py --envs $TFENVS --ops {op}"
# Input classes a served model meets on ordinary requests: a change on one of them is
# a hazard (at-risk). `indices` (-7 to 100) is out of range as an index but an ordinary
# magnitude as a number, and the sweep cannot tell which an op reads it as: ordinary.
# `ordinary_pair` (tools/kernels/mixed.py): a binary op on two different ordinary operands.
ORDINARY_CLASSES = ("ordinary", "halves", "scalar", "indices", "ordinary_pair")
# Ordinary classes of integer values (0, negative integers, 100): where a function's
# isolated poles and domain bounds lie (Digamma, Polygamma, Rsqrt, SqrtGrad at 0) and
# where some overflow (BesselI0 at 100). A node of one of them whose every difference
# has NaN or an infinity on one side at least (compare.finite_change, both_sides) is
# met at such a point: counted as extremes.
POLE_CLASSES = ("indices",)
# Classes only extreme or special inputs reach: overflowing magnitudes, NaN and
# infinities, values near the smallest normal and denormals, zero-sized tensors, a
# special value against an ordinary one, INT_MIN / -1 (tools/kernels/mixed.py).
EXTREME_CLASSES = (
    "special",
    "large",
    "tiny",
    "empty",
    "mixed",
    "mixed_swapped",
    "int_min_by_minus_one",
)


def _short(run: dict[str, Any]) -> dict[str, Any]:
    """A run as evidence: the error, or each output's dtype, shape and first values."""
    if "outputs" not in run:
        return {"error": run.get("error", "")}
    return {
        "outputs": [
            {"dtype": o["dtype"], "shape": o["shape"], "values": o["values"][:SHOWN]}
            for o in run["outputs"]
        ]
    }


def _bucket(d: float) -> str:
    if d == DIFFERS:
        return "not comparable as numbers (shape, integer, NaN or inf on one side)"
    if d == 0:
        return "0 (-0.0 against 0.0)"
    for edge in BUCKETS[1:]:
        if d <= edge:
            return f"<= {edge:g}"
    return f"> {BUCKETS[-1]:g}"


def _ordered(counts: Counter[str]) -> list[list[Any]]:
    """[bucket, count] in the order of their distance (a mapping's keys get sorted)."""
    order = ["0 (-0.0 against 0.0)", *(f"<= {e:g}" for e in BUCKETS[1:])]
    order += [
        f"> {BUCKETS[-1]:g}",
        "not comparable as numbers (shape, integer, NaN or inf on one side)",
    ]
    return [[k, counts[k]] for k in order if counts[k]]


def _verdict(newest: dict[str, Any], other: dict[str, Any], d: float, tolerance: float) -> str:
    """`raises` (this release refuses what the newest answers: a failed request, which the
    kernel registry's `kernel.missing` and the request checks speak for), `answers` (the
    newest refuses), `differs` or `rounding` (every difference within `tolerance`)."""
    if "outputs" in newest and "outputs" not in other:
        return "raises"
    if "outputs" not in newest and "outputs" in other:
        return "answers"
    return "differs" if d > tolerance else "rounding"


def load_answers(
    cache: Path, releases: list[str], only: str = "", mixed_only: str = ""
) -> dict[str, dict[str, dict[str, Any]]]:
    """release -> op -> the probe's line (complete releases only), with the structured
    builders' and the mixed operands' runs joined to it."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for release in releases:
        lines = read_lines(cache_path(cache, release, only=only))
        if not any(line.get("done") for line in lines):
            continue
        found[release] = {line["op"]: line for line in lines if "op" in line}
        classes = next((line["classes"] for line in lines if "classes" in line), None)
        mixed = read_lines(cache_path(cache, release, MIXED, only=mixed_only))
        for line in mixed:
            for dtype, values in line.get("classes", {}).items():
                classes = dict(classes or {})
                classes[dtype] = {**classes.get(dtype, {}), **values}
        found[release]["__classes__"] = {"classes": classes}
        structured = read_lines(cache_path(cache, release, STRUCTURED, only=only))
        merge_structured(found[release], structured)
        merge_structured(found[release], mixed)
    return found


def merge_structured(ops: dict[str, dict[str, Any]], lines: list[dict[str, Any]]) -> None:
    """Add the structured builders' runs (tools/kernels/structured.py) to the generic ones:
    they replace an op the probe could not build, and join one it could under the same
    type attr (their layouts are named apart)."""
    for line in lines:
        if "runs" not in line:
            continue
        generic = ops.get(line["op"])
        if generic is None or "runs" not in generic:
            ops[line["op"]] = line
        elif generic.get("type_attr") == line.get("type_attr"):
            generic["runs"] = generic["runs"] + line["runs"]


def _unstable_outputs(
    op: str, releases: list[str], answers: dict[str, dict[str, dict[str, Any]]]
) -> set[tuple[str, str, str, int]]:
    """(dtype, class, layout, output) of a node whose output takes UNSTABLE_DISTINCT or
    more values over the releases, and UNSTABLE_SHARE of those that ran it: not a kernel
    that changed a few times but memory nothing wrote (DynamicStitch positions no index
    covers, FusedBatchNormV3's reserve space, an FFT of an empty tensor). Where two
    nodes of an (op, dtype)'s output are so, that output is unstable in every node
    (unwritten memory is zeros now and then). Left out of the comparison and listed
    under `unstable_outputs`."""
    seen: dict[tuple[str, str, str, int], list[str]] = {}
    for release in releases:
        for run in (answers[release].get(op) or {}).get("runs", []):
            if "build_error" in run or "outputs" not in run:
                continue  # a nondeterministic run counts: its first answer is one more value
            for n, output in enumerate(run["outputs"]):
                key = (run["dtype"], run["class"], run["layout"], n)
                seen.setdefault(key, []).append(output["sha"])
    found = {
        k
        for k, shas in seen.items()
        if len(set(shas)) >= max(UNSTABLE_DISTINCT, UNSTABLE_SHARE * len(shas))
    }
    repeated = Counter((k[0], k[3]) for k in found)
    return found | {k for k in seen if repeated[(k[0], k[3])] >= 2}


def _without(run: dict[str, Any], unstable: set[tuple[str, str, str, int]]) -> dict[str, Any]:
    """The run with its unstable outputs blanked (kept in place: output numbers stay)."""
    if "outputs" not in run or not unstable:
        return run
    outputs = [
        {**o, "sha": "unstable", "values": [], "n": 0}
        if (run["dtype"], run["class"], run["layout"], n) in unstable
        else o
        for n, o in enumerate(run["outputs"])
    ]
    return {**run, "outputs": outputs}


def _nondeterministic(
    op: str, dtype: str, releases: list[str], answers: dict[str, dict[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """The releases (the newest among them) whose own two runs of a node of (op, dtype)
    differ, grouped by evidence: every input class with such a node (`classes`),
    `met_on` (`ordinary` when one of them is among ORDINARY_CLASSES: a served model's
    request meets it), and one node's two answers (an ordinary class's where one
    differs). Unlike `nondeterministic_in` (releases not compared, the newest's
    unsteadiness counted too) this is the release's own: what its consumers meet."""
    groups: dict[str, dict[str, Any]] = {}
    for release in releases:
        runs = [
            r
            for r in (answers[release].get(op) or {}).get("runs", [])
            if r["dtype"] == dtype and r.get("nondeterministic")
        ]
        if not runs:
            continue
        classes = sorted({r["class"] for r in runs})
        ordinary = [r for r in runs if r["class"] in ORDINARY_CLASSES]
        shown = min(ordinary or runs, key=lambda r: (r["class"] != "ordinary", r["class"]))
        evidence = {
            "classes": classes,
            "met_on": "ordinary" if ordinary else "extremes",
            "class": shown["class"],
            "layout": shown["layout"],
            "first": _short(shown),
            "second": _short(shown["second"]) if "second" in shown else None,
            "nodes": len(runs),
        }
        # which outputs the two runs disagree in, over every such node of the severity's
        # classes: a model that reads none of them (a batch norm's reserve space in
        # inference) gets the same answer every time
        spots = [_unsteady_outputs(r) for r in ordinary or runs]
        if spots and all(o is not None for o in spots):
            evidence["outputs"] = sorted({n for o in spots if o for n in o})
        key = json.dumps(evidence, sort_keys=True)
        groups.setdefault(key, {**evidence, "releases": []})["releases"].append(release)
    return sorted(groups.values(), key=lambda g: version_key(g["releases"][0]))


def _unsteady_outputs(run: dict[str, Any]) -> list[int] | None:
    """The output positions whose bytes differ between a node's two runs (None: the
    second run was not kept, or one of them raised)."""
    second = run.get("second")
    if not second or "outputs" not in second or "outputs" not in run:
        return None
    pairs = zip(run["outputs"], second["outputs"], strict=False)
    return [n for n, (a, b) in enumerate(pairs) if a.get("sha") != b.get("sha")]


def _not_built(line: dict[str, Any] | None) -> str | None:
    if line is None:
        return "not registered"
    if line.get("crashed"):
        return "the probe process died or hung running it"
    if "unbuildable" in line:
        if line["op"].startswith("_"):  # the probe denies these by name as well
            return "internal op: made by graph rewrites at run time, not run on its own"
        return str(line["unbuildable"])
    return None


def build_table(answers: dict[str, dict[str, dict[str, Any]]], tolerance: float) -> dict[str, Any]:
    releases = sorted(answers, key=version_key)
    newest = releases[-1]
    classes = answers[newest]["__classes__"]["classes"]
    ops: dict[str, Any] = {}
    unbuildable: dict[str, str] = {}
    distribution: Counter[str] = Counter()
    per_dtype: dict[str, Counter[str]] = {}
    names = sorted({op for a in answers.values() for op in a if op != "__classes__"})
    for op in names:
        line = answers[newest].get(op)
        reason = _not_built(line)
        if reason is not None or line is None:
            older = [r for r in releases if _not_built(answers[r].get(op)) is None]
            if reason == "not registered" and not older:
                continue
            unbuildable[op] = reason or ""
            if reason == "not registered":
                unbuildable[op] = f"not registered in {newest} (measured up to {older[-1]})"
            continue
        unstable = _unstable_outputs(op, releases, answers)
        newest_runs = [_without(r, unstable) for r in line["runs"]]
        dtypes = sorted({r["dtype"] for r in newest_runs})
        entry: dict[str, Any] = {"type_attr": line.get("type_attr"), "dtypes": {}}
        for dtype in dtypes:
            mine = [r for r in newest_runs if r["dtype"] == dtype]
            if not any(comparable(r) for r in mine):
                nondet = any(r.get("nondeterministic") for r in mine)
                entry.setdefault("not_compared", {})[dtype] = (
                    "nondeterministic: two runs in one release differ"
                    if nondet
                    else "every input class refused by the shape function"
                )
                continue
            # an op that combines elements is measured at each output's scale
            # (compare.py: a cancelled element's few ULPs of that scale are no change)
            scaled = combines_elements(mine)
            pair: dict[str, Any] = {"scale": "output"} if scaled else {}
            absent = []
            unsteady: list[str] = []
            groups: dict[str, dict[str, Any]] = {}
            for release in releases[:-1]:
                theirs = answers[release].get(op)
                runs = [
                    _without(r, unstable)
                    for r in (theirs or {}).get("runs", [])
                    if r["dtype"] == dtype
                ]
                if not any(comparable(r) for r in runs):
                    absent.append(release)
                    continue
                if any(r.get("nondeterministic") for r in runs + mine):
                    unsteady.append(release)  # its own two runs disagree: not a kernel's
                    continue
                found = differences(mine, runs, scaled)
                if not found:
                    continue
                worst = max(found, key=lambda f: (f[2], f[0]["class"] == "ordinary"))
                d = worst[2]
                verdict = _verdict(worst[0], worst[1], d, tolerance)
                if verdict in ("differs", "rounding"):  # values compared, not a refusal
                    distribution[_bucket(d)] += 1
                    per_dtype.setdefault(dtype, Counter())[_bucket(d)] += 1
                # Values beyond the tolerance on any node make the release differ, even
                # where another node's worst is a refusal; the evidence is an ordinary
                # class's where one differs (what a served model meets), the worst else.
                beyond = [f for f in found if _verdict(f[0], f[1], f[2], tolerance) == "differs"]
                # NaN or an infinity against anything on integer inputs is a pole's, a
                # domain bound's or an overflow's (Digamma at -7, SqrtGrad at 0): met on
                # extremes; on the other ordinary classes it is a region outside
                # the domain (Erfinv beyond 1) that ordinary values reach: ordinary
                ordinary = [
                    f
                    for f in beyond
                    if f[0]["class"] not in EXTREME_CLASSES
                    and (
                        f[0]["class"] not in POLE_CLASSES
                        or finite_change(f[0], f[1], tolerance, both_sides=True, scaled=scaled)
                    )
                ]
                severity: dict[str, Any] = {}
                if beyond:
                    worst = max(
                        ordinary or beyond,
                        key=lambda f: (f[2], f[0]["class"] == "ordinary", f[0]["class"]),
                    )
                    d, verdict = worst[2], "differs"
                    severity = {
                        "classes": sorted({f[0]["class"] for f in beyond}),
                        "met_on": "ordinary" if ordinary else "extremes",
                    }
                    poles = {
                        f[0]["class"] for f in beyond if f[0]["class"] not in EXTREME_CLASSES
                    } - {f[0]["class"] for f in ordinary}
                    if poles:  # integer classes whose differences all have NaN or inf
                        severity["poles"] = sorted(poles)
                    # which outputs differ, over every node of the severity's classes: a
                    # change only in outputs a model never reads is no hazard to it
                    spots = [
                        outputs_beyond(f[0], f[1], tolerance, scaled) for f in ordinary or beyond
                    ]
                    if spots and all(o is not None for o in spots):
                        severity["outputs"] = sorted({n for o in spots if o for n in o})
                run_n, run_r, _, where = worst
                evidence = {
                    **severity,
                    "verdict": verdict,
                    "class": run_n["class"],
                    "layout": run_n["layout"],
                    "result": _short(run_r),
                    "newest_result": _short(run_n),
                    "where": where,
                    "ulps": None if d == DIFFERS else round(d, 3),
                    "nodes_differing": len(found),
                }
                key = json.dumps(evidence, sort_keys=True)
                groups.setdefault(key, {**evidence, "releases": []})["releases"].append(release)
            if absent:
                pair["absent_in"] = absent
            if unsteady:
                pair["nondeterministic_in"] = unsteady
            unsteady_own = _nondeterministic(op, dtype, releases, answers)
            if unsteady_own:
                pair["nondeterministic"] = unsteady_own
            if groups:
                pair["changes"] = sorted(
                    groups.values(), key=lambda g: version_key(g["releases"][0])
                )
            entry["dtypes"][dtype] = pair
        if unstable:
            entry["unstable_outputs"] = sorted(
                f"{k[0]} {k[1]} {k[2]} output {k[3]}" for k in unstable
            )
        if entry["dtypes"] or entry.get("not_compared"):
            ops[op] = entry
    differs = sum(
        1
        for e in ops.values()
        for p in e["dtypes"].values()
        if any(g["verdict"] == "differs" for g in p.get("changes", []))
    )
    rounding_only = sum(
        1
        for e in ops.values()
        for p in e["dtypes"].values()
        if p.get("changes") and all(g["verdict"] == "rounding" for g in p["changes"])
    )
    extremes_only = sum(
        1
        for e in ops.values()
        for p in e["dtypes"].values()
        if any(g["verdict"] == "differs" for g in p.get("changes", []))
        and all(g.get("met_on") == "extremes" for g in p["changes"] if g["verdict"] == "differs")
    )
    refusals = sum(
        1
        for e in ops.values()
        for p in e["dtypes"].values()
        if any(g["verdict"] in ("raises", "answers") for g in p.get("changes", []))
    )
    return {
        "format": FORMAT,
        "newest": newest,
        "releases": releases,
        "classes": classes,
        "input_classes": {
            "ordinary": list(ORDINARY_CLASSES),
            "extremes": list(EXTREME_CLASSES),
            "how": "a release differs `met_on: ordinary` when a node fed an ordinary class "
            "differs beyond the tolerance with a number on one side at least (its evidence "
            "shown), `met_on: extremes` when only nodes fed extreme or special classes do, or "
            "every difference of the nodes of an ordinary class of integer values has NaN or "
            "an infinity on one side at least (a pole, a domain bound or an overflow: "
            "`poles` lists those classes); `classes` lists every class that differs",
            "pole_classes": list(POLE_CLASSES),
        },
        "nondeterministic": {
            "how": "every node runs twice in one session, the first answers kept alive; a "
            "node whose two runs differ is nondeterministic (memory nothing wrote, a seedless "
            "random op). A release where a node of the (op, dtype), its own or the newest's, "
            "is so is not compared and listed under `nondeterministic_in`: not a change. "
            "`nondeterministic` lists the releases whose own nodes are so (the newest "
            "among them), with the input classes (`classes`, `met_on`), the outputs whose two "
            "runs differ (`outputs`, over the nodes of an ordinary class where one is so) and "
            "one node's two answers (`first`, `second`; `second` null where the probe did not "
            "keep it)",
        },
        "tolerance": {
            "ulps": tolerance,
            "how": "a float output within this many ULPs of the newest release's (in the "
            "output's dtype, relative to the larger magnitude of each element; for an (op, "
            "dtype) marked `scale: output`, one whose kernel combines elements, since it "
            "refused the rank-0 `scalar` class or only the structured builders ran it, "
            "relative to the output's largest magnitude), every value finite on both sides, "
            "is `rounding`; chosen from `distribution`",
            "distribution": _ordered(distribution),
            "distribution_by_dtype": {k: _ordered(v) for k, v in sorted(per_dtype.items())},
            "counted": "per (op, dtype, release) not bitwise equal to the newest: the largest "
            "distance over its nodes",
        },
        "remeasure": REMEASURE,
        "ops_compared": len(ops),
        "pairs_compared": sum(len(e["dtypes"]) for e in ops.values()),
        "pairs_differ": differs,
        "pairs_differ_on_extremes_only": extremes_only,
        "pairs_rounding_only": rounding_only,
        "pairs_raise_on_one_side": refusals,
        "ops": ops,
        "unbuildable": dict(sorted(unbuildable.items())),
    }


def _read_table(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    return dict(json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw))


def _binary_ops(registries: Path = REGISTRIES) -> set[str]:
    """Every op some catalogued release registers with two or more inputs of one type
    attr (a list input counts as two): what tools/kernels/mixed.py may build."""
    found = set()
    with registries.open() as lines:
        for text in lines:
            op = json.loads(text)
            counts: Counter[str] = Counter()
            for arg in op.get("input_arg", []):
                if arg.get("type_attr"):
                    counts[arg["type_attr"]] += 2 if arg.get("number_attr") else 1
            if counts and max(counts.values()) >= 2:
                found.add(op["name"])
    return found


def _refresh_ops(output: Path) -> str:
    """The ops `--refresh` re-measures: every op the table records as differing, and every
    op with two or more inputs of one type attr in the catalogued registries (the same
    list whatever --releases says, so runs split over releases share one cache)."""
    table = _read_table(output)
    changed = {
        op
        for op, e in table["ops"].items()
        for p in e["dtypes"].values()
        if any(g["verdict"] == "differs" for g in p.get("changes", []))
    }
    return ",".join(sorted(changed | (_binary_ops() & set(table["ops"]))))


def _counts(ops: dict[str, Any]) -> dict[str, int]:
    pairs = [p for e in ops.values() for p in e["dtypes"].values()]

    def verdicts(p: dict[str, Any]) -> list[str]:
        return [g["verdict"] for g in p.get("changes", [])]

    differing = [
        [g for g in p.get("changes", []) if g["verdict"] == "differs"]
        for p in pairs
        if "differs" in verdicts(p)
    ]
    return {
        "ops_compared": len(ops),
        "pairs_compared": len(pairs),
        "pairs_differ": len(differing),
        "pairs_differ_on_extremes_only": sum(
            all(g.get("met_on") == "extremes" for g in d) for d in differing
        ),
        "pairs_rounding_only": sum(
            bool(verdicts(p)) and all(v == "rounding" for v in verdicts(p)) for p in pairs
        ),
        "pairs_raise_on_one_side": sum(
            any(v in ("raises", "answers") for v in verdicts(p)) for p in pairs
        ),
    }


def merge_refresh(
    old: dict[str, Any], new: dict[str, Any], asked: list[str], named: bool = False
) -> dict[str, Any]:
    """The table with the re-measured ops' entries replaced (an op the re-run could not
    build keeps its former entry); the counts recomputed, the tolerance's distribution
    kept from the whole sweep, and what was re-measured recorded under `remeasured`
    (a `--refresh`), or appended to `remeasured_named` (ops named with `--ops --write`,
    the last refresh's record kept)."""
    merged = {k: v for k, v in old.items() if k != "hand"}
    ops = dict(old["ops"])
    replaced = sorted(op for op in new["ops"] if op in asked)
    missing = [r for r in old["releases"] if r not in new["releases"]]
    for op in replaced:
        ops[op] = new["ops"][op]
        for pair in ops[op]["dtypes"].values():  # not re-run there: not measured there
            if missing:
                pair["absent_in"] = sorted(
                    set(pair.get("absent_in", [])) | set(missing), key=version_key
                )
    merged["ops"] = dict(sorted(ops.items()))
    merged.update(_counts(ops))
    merged["format"] = new["format"]
    merged["input_classes"] = new["input_classes"]
    merged["nondeterministic"] = new["nondeterministic"]
    classes = {k: dict(v) for k, v in old["classes"].items()}
    for dtype, values in new["classes"].items():
        classes.setdefault(dtype, {}).update(values)
    merged["classes"] = classes
    if named:
        merged["remeasured_named"] = [
            *old.get("remeasured_named", []),
            {
                "ops": replaced,
                "kept": sorted(set(asked) & set(old["ops"]) - set(replaced)),
                "releases": new["releases"],
                "how": "tools/kernels/sweep.py --ops ... --write: these ops run again in every "
                "release (the probe, the structured builders and the mixed operands), each "
                "node twice; their entries replaced",
            },
        ]
        return merged
    merged["remeasured"] = {
        "ops": replaced,
        "kept": sorted(set(asked) & set(old["ops"]) - set(replaced)),
        "releases": new["releases"],
        "how": "tools/kernels/sweep.py --refresh: the ops the table recorded as differing "
        "and every op with two or more inputs of its swept type, run again in every release "
        "with the mixed operands (tools/kernels/mixed.py) added; each class that differs "
        "recorded (`classes`, `met_on`). The other ops' entries and the tolerance's "
        "distribution are the whole sweep's.",
    }
    return merged


def hand_table(output: Path) -> dict[str, Any] | None:
    """The hand cases' table (format 1) kept in the current file, or the legacy file."""
    for path in (output, LEGACY_OUTPUT):
        if not path.exists():
            continue
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
        if doc.get("format") == HAND_FORMAT:
            return dict(doc)
        if doc.get("hand"):
            return dict(doc["hand"])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument(
        "--envs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs"))
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--releases", default="")
    parser.add_argument("--ops", default="", help="re-measure only these ops (comma-separated)")
    parser.add_argument(
        "--write",
        action="store_true",
        help="with --ops: replace those ops' entries in the table (cached like --refresh) "
        "instead of printing how they compare",
    )
    parser.add_argument("--tolerance-ulps", type=float, default=DEFAULT_TOLERANCE_ULPS)
    parser.add_argument("--no-run", action="store_true", help="build the table from the cache")
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="re-measure only the ops the table records as differing and the ops with two "
        "inputs of their swept type (mixed operands), and replace their entries",
    )
    args = parser.parse_args(argv)
    only = set(filter(None, args.releases.split(","))) or None
    args.cache.mkdir(parents=True, exist_ok=True)
    envs = ready_envs(args.envs, only)
    if args.ops and not args.write:
        return _remeasure(envs, args.ops)
    only = args.ops or (_refresh_ops(args.output) if args.refresh else "")
    mixed_only = args.ops  # a refresh runs every mixed operand (one cache for all)
    if not args.no_run:
        for release, python in sorted(envs, key=lambda e: version_key(e[0]), reverse=True):
            started = time.monotonic()
            lines = probe_release(python, cache_path(args.cache, release, only=only), only=only)
            lines += probe_release(
                python,
                cache_path(args.cache, release, STRUCTURED, only=only),
                only=only,
                script=STRUCTURED,
            )
            lines += probe_release(
                python,
                cache_path(args.cache, release, MIXED, only=mixed_only),
                only=mixed_only,
                script=MIXED,
            )
            print(
                f"{release}: {len(lines)} ops ({time.monotonic() - started:.0f}s)", file=sys.stderr
            )
    answers = load_answers(args.cache, [r for r, _ in envs], only=only, mixed_only=mixed_only)
    if not answers:
        print("no release measured", file=sys.stderr)
        return 1
    table = build_table(answers, args.tolerance_ulps)
    if only:
        table = merge_refresh(
            _read_table(args.output), table, sorted(only.split(",")), named=bool(args.ops)
        )
    hand = hand_table(args.output)
    if hand is not None:
        table["hand"] = hand
    table["source"] = source_record(
        "tools/kernels/sweep.py",
        "tools/kernels/probe.py runs every generically buildable op on eight input classes "
        "(tools/kernels/structured.py the ops needing shaped inputs, tools/kernels/mixed.py "
        "binary ops on operands of different classes) in every release's CPU wheel (its own "
        "Python); results compared with the newest release's; hand cases from "
        "tools/attrs/kernels.py",
        cpu_wheels([*table["releases"], *(hand or {}).get("releases", [])]),
    )
    text = json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n"
    args.output.write_bytes(gzip.compress(text.encode(), mtime=0))
    if args.output != LEGACY_OUTPUT and LEGACY_OUTPUT.exists():
        LEGACY_OUTPUT.unlink()  # its hand cases now live in the new file
    print(
        f"{table['pairs_compared']} (op, dtype) pairs of {table['ops_compared']} ops over "
        f"{len(table['releases'])} releases: {table['pairs_differ']} differ, "
        f"{table['pairs_rounding_only']} only within {args.tolerance_ulps:g} ULPs; "
        f"{len(table['unbuildable'])} ops not built -> {args.output}",
        file=sys.stderr,
    )
    return 0


def _remeasure(envs: list[tuple[str, Path]], ops: str) -> int:
    """Run the probe, the structured builders and the mixed operands for a few ops in every
    release (uncached) and print how each compares."""
    lines: dict[str, dict[str, dict[str, Any]]] = {}
    for release, python in envs:
        found: dict[str, dict[str, Any]] = {}
        classes: dict[str, Any] = {}
        for script in (HERE / "probe.py", STRUCTURED, MIXED):
            done = subprocess.run(
                ["nice", "-n", "19", str(python), str(script), "--only", ops],
                capture_output=True,
                text=True,
                check=False,
            )
            out = [json.loads(t) for t in done.stdout.splitlines() if t.strip()]
            for line in out:
                for dtype, values in (line.get("classes") or {}).items():
                    classes[dtype] = {**classes.get(dtype, {}), **values}
            if script == HERE / "probe.py":  # its unbuildable lines say why
                found.update({line["op"]: line for line in out if "op" in line})
            else:
                merge_structured(found, [line for line in out if "op" in line])
        found["__classes__"] = {"classes": classes}
        lines[release] = found
    table = build_table(lines, DEFAULT_TOLERANCE_ULPS)
    json.dump({"ops": table["ops"], "unbuildable": table["unbuildable"]}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
