#!/usr/bin/env python3
"""How far whole TFLite models answer apart between runtimes, measured (issues 36, 37).

    .venv/bin/python tools/tflite/kernel_whole.py [--set files,mixes,deep] [--cells OUT]

The kernel sweep's tolerance is per operator: 16 ULPs of the output's largest
magnitude for a float32 output, 1 step for an int8/int16 one (kernel_sweep.TOLERANCE).
A model of many operators rounds at each, and the roundings compound, so its output
can be further from the reference runtime's than one operator's tolerance without
any kernel having changed. This reads the raw runs of the held-out rounds
(kernel_heldout.py run: every file in every runtime, the six input classes) and, per
cell (file, runtime) that answered the ordinary classes on both sides, takes the
largest distance over the ordinary classes and the outputs (kernel_sweep.distance:
ULPs of the reference output's largest magnitude, or quantised steps), the file's
depth (the longest chain of operators from an input to an output of its first
subgraph) and what the rule's table records for that runtime and the file's
(builtin, variant) pairs:

- `changed`: some pair is measured to change on ordinary inputs (`kernel.changed`);
- `extremes`: some pair changes on extreme inputs only;
- `unmeasured`: some pair was never run in that runtime (not verified);
- `clean`: every pair was run there and is within the per-operator tolerance.

It prints the distribution of the distance per status, per output kind and per the
file's arithmetic (`float`: every operator float32; `quantised`, `dynamic`), and for
the clean float files per depth. `kernel_sweep.whole_tolerance` states, from that distribution,
where a whole model's difference is rounding; kernel_heldout.py scores with it
(`kernel_sweep.answer`). `--cells` writes every cell as JSON lines.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_heldout as heldout
import kernel_sweep as sweep
from runtimes import REPO

sys.path.insert(0, str(REPO))

STATUSES = ("clean", "unmeasured", "extremes", "changed")
DEPTHS = ((1, 2), (3, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, 10**9))
BUCKETS = (0, 1, 16, 64, 256, 1024, 4096, 2**16, 2**24)


def worst_answer(answers: Iterable[str]) -> str:
    """The furthest of the answers of several input classes."""
    return max(answers, key=sweep.ANSWERS.index, default="bitwise")


def arithmetic_of(variants: set[str]) -> str:
    """`quantised` when some operator computes in int8, uint8 or int16; else `dynamic`
    with dynamic-range weights; else `float` (float32, float16 weights dequantised,
    integer shape arithmetic)."""
    bare = {v.removesuffix("-per-channel") for v in variants}
    if bare & {"int8", "uint8", "int16x8"}:
        return "quantised"
    if "dynamic" in bare:
        return "dynamic"
    return "float"


def _worst(
    got: dict[tuple[str, str], dict[str, Any]],
    ref: dict[tuple[str, str], dict[str, Any]],
    key: str,
) -> tuple[float, str]:
    worst, kind = -1.0, "float_ulps"
    for cls in sweep.ORDINARY:
        a_outs, b_outs = got[(key, cls)]["outputs"], ref[(key, cls)]["outputs"]
        if len(a_outs) != len(b_outs):
            return math.inf, "float_ulps"
        for a, b in zip(a_outs, b_outs, strict=True):
            d, _ = sweep.distance(a, b)
            if d > worst:
                worst, kind = d, sweep.kind_of(b)
    return worst, kind


def cells(name: str) -> list[dict[str, Any]]:
    """Every (file, runtime) of round `name` that answered the ordinary classes, with the
    reference's, as in kernel_heldout.score."""
    from worker.catalog.tflite import load_tflite_catalog
    from worker.formats.read import read_path
    from worker.model.tflite import variant_of

    heldout.choose(name)
    runs = heldout._load()
    if not runs:
        return []
    order = sweep.reference_of(sorted(runs))
    tables = {r.name: r for r in load_tflite_catalog().runtimes}
    found: list[dict[str, Any]] = []
    for key, path in sorted({heldout.key_of(p): p for p in heldout.files()}.items()):
        answered = [
            r for r in order if all("outputs" in runs[r].get((key, c), {}) for c in sweep.ORDINARY)
        ]
        if not answered:
            continue
        ref = answered[0]
        (artifact,) = read_path(str(path))
        model = artifact.tflite
        assert model is not None
        pairs = {
            (
                model.operator_codes[k.opcode_index].name,
                variant_of(k, model.operator_codes[k.opcode_index].name),
            )
            for k in model.operator_kinds
            if not model.operator_codes[k.opcode_index].is_custom
        }
        depth = sweep.depth_of(path)
        arithmetic = arithmetic_of({v for _, v in pairs})
        for runtime, table in runs.items():
            measured = tables.get(runtime)
            if runtime == ref or measured is None:
                continue
            if not all("outputs" in table.get((key, c), {}) for c in sweep.ORDINARY):
                continue
            distance, kind = _worst(table, runs[ref], key)
            changes = [measured.result_changes[p] for p in pairs if p in measured.result_changes]
            if any(c.met_on == "ordinary" for c in changes):
                status = "changed"
            elif changes:
                status = "extremes"
            elif any(p not in measured.results_measured for p in pairs):
                status = "unmeasured"
            else:
                status = "clean"
            found.append(
                {
                    "set": name,
                    "model": key,
                    "runtime": runtime,
                    "reference": ref,
                    "kind": kind,
                    "distance": distance,
                    "depth": depth,
                    "arithmetic": arithmetic,
                    "status": status,
                    "answer": worst_answer(
                        sweep.answer(
                            table[(key, c)]["outputs"], runs[ref][(key, c)]["outputs"], depth
                        )
                        for c in sweep.ORDINARY
                    ),
                }
            )
    return found


def _bucket(d: float) -> str:
    if d == 0:
        return "0"
    if math.isinf(d):
        return "inf"
    for b in BUCKETS[1:]:
        if d <= b:
            return f"<={b}"
    return f">{BUCKETS[-1]}"


def _depth_label(depth: int) -> str:
    lo, hi = next(r for r in DEPTHS if r[0] <= depth <= r[1])
    return f"{lo}+" if hi >= 10**9 else f"{lo}-{hi}"


def report(found: list[dict[str, Any]]) -> None:
    labels = ["0"] + [f"<={b}" for b in BUCKETS[1:]] + [f">{BUCKETS[-1]}", "inf"]
    groups: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for c in found:
        groups[(c["status"], c["kind"], c["arithmetic"])][_bucket(c["distance"])] += 1
    print("status\tkind\tarithmetic\t" + "\t".join(labels))
    for (status, kind, arith), counts in sorted(
        groups.items(), key=lambda g: (STATUSES.index(g[0][0]), g[0][1], g[0][2])
    ):
        print(f"{status}\t{kind}\t{arith}\t" + "\t".join(str(counts[b]) for b in labels))
    print()
    print("clean float files, float outputs, by depth (ULPs of the output's scale)")
    print("depth\tfiles\tcells\t" + "\t".join(labels) + "\tlargest")
    by_depth: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in found:
        if c["status"] == "clean" and c["arithmetic"] == "float" and c["kind"] == "float_ulps":
            by_depth[_depth_label(c["depth"])].append(c)
    for lo, _hi in DEPTHS:
        label = _depth_label(lo)
        rows = by_depth.get(label, [])
        if not rows:
            continue
        counts = Counter(_bucket(c["distance"]) for c in rows)
        files = len({c["model"] for c in rows})
        top = max(c["distance"] for c in rows)
        print(
            f"{label}\t{files}\t{len(rows)}\t"
            + "\t".join(str(counts[b]) for b in labels)
            + f"\t{top:.6g}"
        )
    print()
    answers = Counter((c["status"], c["answer"]) for c in found)
    print(
        "answer under the whole-model tolerance (float: min(16 x depth^2, "
        f"{sweep.WHOLE_FLOAT_CAP}) ULPs; quantised: 1 step)"
    )
    for status in STATUSES:
        print(status + "\t" + "\t".join(f"{a}: {answers[(status, a)]}" for a in sweep.ANSWERS))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--set", default=",".join(heldout.ROUNDS))
    parser.add_argument("--cells", type=Path, help="write every cell here (JSON lines)")
    args = parser.parse_args()
    found = [c for name in args.set.split(",") for c in cells(name)]
    report(found)
    if args.cells:
        args.cells.write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in found))


if __name__ == "__main__":
    main()
