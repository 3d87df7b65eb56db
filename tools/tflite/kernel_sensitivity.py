#!/usr/bin/env python3
"""A TFLite file's own sensitivity to rounding, measured in the reference runtime
(issue 36): what the whole-model tolerance is stated from.

    python3 tools/tflite/kernel_sensitivity.py measure --set NAME[,NAME] [--envs ENVS]
    .venv/bin/python tools/tflite/kernel_sensitivity.py rescore --set NAME[,NAME]
    .venv/bin/python tools/tflite/kernel_sensitivity.py margins --set NAME[,NAME]

A runtime whose kernels round otherwise than the reference's moves each operator's
output by about one ULP; the file's layers amplify that (or damp it) on the way to the
output. `measure` runs kernel_sens_run.py in the reference runtime (LiteRT 2.3.0, the
kernel sweep's) over a held-out round's files: each ordinary input class as it is, the
input moved one ULP per element, and the file with every float32 constant (weights,
biases) moved one ULP per element; the output's largest movement, in ULPs of its
largest magnitude, is the file's `amplification`. It also records, per output, the
DEQUANTIZE writing it and that tensor's scale (a quantised model's float output).
It writes tests/fixtures/tflite-kernels-heldout/sensitivity-<NAME>.json.

`rescore` reads a round's committed cells (cells*.jsonl: the furthest distance of each
(file, runtime) over the ordinary classes, and whether the rule put it at-risk) with
the file's sensitivity, and prints the answers and the precision and recall of
at-risk under the depth tolerance (kernel_sweep.whole_tolerance) and under the
sensitivity tolerance (kernel_sweep.sensitive_tolerance), per status of the rule's
table for the cell (kernel_whole.py's: `changed` on ordinary inputs, `extremes`,
`unmeasured`, `clean`). A dequantised output's distance is converted to steps of its
DEQUANTIZE's input with the reference output's ULP (the largest over the classes: the
cells keep only the furthest distance, not its class).

`margins` reads a round's raw runs (kernel_heldout.py run) and, per tolerance (depth,
sensitivity) and per kind of file (`hybrid`; `dequantised`: every output a DEQUANTIZE
writes; `other`: float or quantised outputs), prints the furthest cell each calls
rounding and the nearest it calls a difference, as a fraction of the cell's tolerance
(the worst output and ordinary class), and for dequantised outputs how many cells are
0, 1 and more steps.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_heldout as heldout
import kernel_sweep as sweep
from runtimes import DEFAULT_ENVS, REPO, python_of, runtimes

REFERENCE = "ai-edge-litert-2.3.0"
HERE = Path(__file__).resolve().parent
TENSOR_BUFFER = 2  # table Tensor: its buffer's index
FLOAT32 = 0
FORMAT = "tfcompat-tflite-sensitivity/1"


def out_of(name: str) -> Path:
    return heldout.FIXTURE / f"sensitivity-{name}.json"


def weight_spans(path: Path) -> list[tuple[int, int]]:
    """(byte offset, length) of every float32 constant's data inside the file."""
    sys.path.insert(0, str(REPO))
    from worker.formats import tflite_schema as S
    from worker.formats.source import FileSource
    from worker.formats.tflite import _Flat

    flat = _Flat(FileSource(path))
    model = flat.table(flat.u32(0))
    buffers = list(flat.tables(model, S.MODEL_BUFFERS, 1_000_000, "buffers"))
    spans: set[tuple[int, int]] = set()
    for subgraph in flat.tables(model, S.MODEL_SUBGRAPHS, 10_000, "subgraphs"):
        for tensor in flat.tables(subgraph, S.SUBGRAPH_TENSORS, 1_000_000, "tensors"):
            if flat.scalar(tensor, S.TENSOR_TYPE, "<b", 0) != FLOAT32:
                continue
            index = flat.scalar(tensor, TENSOR_BUFFER, "<I", 0)
            if not 0 < index < len(buffers):
                continue
            start, size = flat.vector(buffers[index], S.BUFFER_DATA, 1)
            if size >= 4:
                spans.add((start, size - size % 4))
    return sorted(spans)


def hybrid_of(path: Path) -> bool:
    """Whether some operator of the file is a dynamic-range one (int8 weights, float
    activations quantised on the fly), whatever else it holds (a DEQUANTIZE of int8
    weights computes nothing quantised)."""
    sys.path.insert(0, str(REPO))
    from worker.formats.read import read_path
    from worker.model.tflite import variant_of

    (artifact,) = read_path(str(path))
    model = artifact.tflite
    assert model is not None
    return any(
        variant_of(k, model.operator_codes[k.opcode_index].name).startswith("dynamic")
        for k in model.operator_kinds
        if not model.operator_codes[k.opcode_index].is_custom
    )


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One file's runs: the amplification (largest movement over classes, outputs and
    both nudges; null when nothing could be moved), per output its DEQUANTIZE and the
    reference's largest ULP over the classes."""
    answered = [r for r in rows if "moved" in r]
    if not answered:
        return {"error": next((r.get("error") for r in rows), "no run")}
    moves = [
        m
        for r in answered
        for kind in ("input", "weights")
        for m in r["moved"][kind]
        if m is not None
    ]
    outputs = []
    for j, shape in enumerate(answered[0]["outputs"]):
        entry: dict[str, Any] = {"dtype": shape["dtype"], "writer": shape.get("writer", "")}
        if "dequantizes" in shape:
            entry["dequantizes"] = shape["dequantizes"]
        entry["ulp"] = max(r["spacing"][j] for r in answered)
        outputs.append(entry)
    by_class = {r["class"]: {k: r["moved"][k] for k in ("input", "weights")} for r in answered}
    return {
        "amplification": max(moves) if moves else None,
        "moved": by_class,
        "outputs": outputs,
    }


def measure(args: argparse.Namespace) -> None:
    reference = next(r for r in runtimes() if r.name == REFERENCE)
    python = python_of(reference, args.envs, Path("."))
    for name in args.set.split(","):
        heldout.choose(name)
        paths = {heldout.key_of(p): p for p in heldout.files()}
        spec = [{"path": str(p), "spans": weight_spans(p)} for p in paths.values()]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(spec, f)
        done = subprocess.run(
            ["nice", str(python), str(HERE / "kernel_sens_run.py"), f.name],
            capture_output=True,
            text=True,
            env=sweep.ENV,
            cwd=HERE,
            check=True,
        )
        Path(f.name).unlink()
        rows: dict[str, list[dict[str, Any]]] = {}
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                rows.setdefault(heldout.key_of(Path(row["model"]).resolve()), []).append(row)
        found = {
            key: {**summarise(rows.get(key, [])), "hybrid": hybrid_of(paths[key])}
            for key in sorted(paths)
        }
        sys.path.insert(0, str(REPO / "tools"))
        from provenance import source_record

        doc = {
            "format": FORMAT,
            "source": source_record(
                "tools/tflite/kernel_sensitivity.py",
                "kernel_sens_run.py in the reference runtime's own Python: per file of the "
                "round, how far its output moves when the input, or every float32 constant, "
                "moves one ULP per element (ULPs of the output's largest magnitude), on the "
                "ordinary input classes; hybrid from the file's operators",
                [heldout._label(root) for root in heldout.SOURCES] + [REFERENCE],
            ),
            "reference": REFERENCE,
            "files": found,
        }
        out_of(name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(found)} files -> {out_of(name).relative_to(REPO)}", file=sys.stderr)


def load(name: str) -> dict[str, dict[str, Any]]:
    path = out_of(name)
    return json.loads(path.read_text())["files"] if path.exists() else {}


def cell_distance(cell: dict[str, Any], sens: dict[str, Any]) -> tuple[float, str]:
    """A committed cell's furthest distance in the unit the sensitivity rule judges it:
    a float output written by a DEQUANTIZE counts in steps of its quantised input."""
    d = cell["distance"]
    d = math.inf if d == "not comparable" else float(d)
    outs = sens.get("outputs") or []
    deq = [o for o in outs if "dequantizes" in o and o["dequantizes"]["scale"]]
    if cell["kind"] == "float_ulps" and deq and len(deq) == len(outs):
        ulp = max(o["ulp"] for o in deq)
        scale = min(o["dequantizes"]["scale"] for o in deq)
        return sweep.dequantized_steps(d, ulp, scale), "quantized_steps"
    return d, cell["kind"]


def judged(cell: dict[str, Any], sens: dict[str, Any], rule: str) -> str:
    if rule == "sensitivity":
        d, kind = cell_distance(cell, sens)
        tolerance = sweep.sensitive_tolerance(sens.get("amplification"), bool(sens.get("hybrid")))
    else:
        d = math.inf if cell["distance"] == "not comparable" else float(cell["distance"])
        kind = cell["kind"]
        tolerance = sweep.whole_tolerance(cell["depth"])
    if d == 0:
        return "bitwise"
    return "within rounding" if d <= tolerance.get(kind, 0) else "differs"


def _status(name: str) -> dict[tuple[str, str], str]:
    """(file, runtime) -> what the rule's table records for the file's pairs there."""
    sys.path.insert(0, str(REPO))
    from worker.catalog.tflite import load_tflite_catalog
    from worker.formats.read import read_path
    from worker.model.tflite import variant_of

    heldout.choose(name)
    tables = {r.name: r for r in load_tflite_catalog().runtimes}
    found: dict[tuple[str, str], str] = {}
    for key, path in {heldout.key_of(p): p for p in heldout.files()}.items():
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
        for runtime, measured in tables.items():
            changes = [measured.result_changes[p] for p in pairs if p in measured.result_changes]
            if any(c.met_on == "ordinary" for c in changes):
                status = "changed"
            elif changes:
                status = "extremes"
            elif any(p not in measured.results_measured for p in pairs):
                status = "unmeasured"
            else:
                status = "clean"
            found[(key, runtime)] = status
    return found


def rescore(args: argparse.Namespace) -> None:
    for name in args.set.split(","):
        heldout.choose(name)
        cells = [json.loads(x) for x in heldout.CELLS.read_text().splitlines()]
        sens = load(name)
        status = _status(name)
        print(f"== {name}: {len(cells)} cells, sensitivity of {len(sens)} files")
        for rule in ("depth", "sensitivity"):
            answers: Counter[str] = Counter()
            by_status: Counter[tuple[str, str]] = Counter()
            tp = fp = fn = 0
            for c in cells:
                a = judged(c, sens.get(c["model"], {}), rule)
                answers[a] += 1
                by_status[(status.get((c["model"], c["runtime"]), "?"), a)] += 1
                differs = a == "differs"
                tp += c["at_risk"] and differs
                fp += c["at_risk"] and not differs
                fn += differs and not c["at_risk"]
            p = f"{tp}/{tp + fp}" + (f" = {tp / (tp + fp):.2f}" if tp + fp else "")
            r = f"{tp}/{tp + fn}" + (f" = {tp / (tp + fn):.2f}" if tp + fn else "")
            print(f"{rule}: " + "; ".join(f"{a} {answers[a]}" for a in sweep.ANSWERS))
            print(f"  precision {p}, recall {r}")
            for s in ("clean", "unmeasured", "extremes", "changed", "?"):
                row = [by_status[(s, a)] for a in sweep.ANSWERS]
                if any(row):
                    print(
                        f"  {s}: "
                        + ", ".join(f"{a} {n}" for a, n in zip(sweep.ANSWERS, row, strict=True))
                    )


def _kind(sens: dict[str, Any]) -> str:
    if sens.get("hybrid"):
        return "hybrid"
    outs = sens.get("outputs") or []
    return "dequantised" if outs and all("dequantizes" in o for o in outs) else "other"


def ratio(
    got: dict[tuple[str, str], Any],
    expected: dict[tuple[str, str], Any],
    key: str,
    sens: dict[str, Any],
    depth: int | None,
) -> tuple[float, float]:
    """A cell's furthest output over the ordinary classes as a fraction of its tolerance
    (the depth's when `depth` is given, in float ULPs; else the sensitivity's), and its
    furthest dequantised distance in steps (0 when none)."""
    worst = steps = 0.0
    outs = sens.get("outputs") or []
    for cls in sweep.ORDINARY:
        mine, theirs = got[(key, cls)]["outputs"], expected[(key, cls)]["outputs"]
        if len(mine) != len(theirs):
            return math.inf, math.inf
        for j, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            d, _ = sweep.distance(a, b)
            kind = sweep.kind_of(b)
            if depth is not None:
                tolerance = sweep.whole_tolerance(depth)
            else:
                tolerance = sweep.sensitive_tolerance(
                    sens.get("amplification"), bool(sens.get("hybrid"))
                )
            scale = (outs[j].get("dequantizes") or {}).get("scale") if j < len(outs) else None
            if kind == "float_ulps" and scale and d:
                counted = sweep.dequantized_steps(d, sweep._spacing(sweep.values(b)), scale)
                steps = max(steps, counted)
                if depth is None:  # the depth tolerance counts float ULPs
                    d, kind = counted, "quantized_steps"
            if d:
                worst = max(worst, d / tolerance[kind] if tolerance[kind] else math.inf)
    return worst, steps


def margins(args: argparse.Namespace) -> None:
    for name in args.set.split(","):
        heldout.choose(name)
        runs = sweep.load_runs(heldout.HELD)
        sens = load(name)
        cells = [json.loads(x) for x in heldout.CELLS.read_text().splitlines()]
        print(f"== {name}: {len(cells)} cells")
        step_counts: Counter[str] = Counter()
        for rule in ("depth", "sensitivity"):
            within: dict[str, tuple[float, str]] = {}
            apart: dict[str, tuple[float, str]] = {}
            for c in cells:
                key, s = c["model"], sens.get(c["model"], {})
                r, steps = ratio(
                    runs[c["runtime"]],
                    runs[c["reference"]],
                    key,
                    s,
                    c["depth"] if rule == "depth" else None,
                )
                kind = _kind(s)
                where = f"{key} in {c['runtime']}"
                if 0 < r <= 1 and r > within.get(kind, (0.0, ""))[0]:
                    within[kind] = (r, where)
                if r > 1 and r < apart.get(kind, (math.inf, ""))[0]:
                    apart[kind] = (r, where)
                if rule == "depth" and kind == "dequantised":
                    step_counts["0" if not steps else "1" if steps <= 1 else "more"] += 1
            for kind in ("other", "hybrid", "dequantised"):
                w, a = within.get(kind), apart.get(kind)
                print(
                    f"{rule}\t{kind}\tfurthest rounding "
                    + (f"{w[0]:.3g} ({w[1]})" if w else "-")
                    + "\tnearest difference "
                    + (f"{a[0]:.4g} ({a[1]})" if a else "-")
                )
        if step_counts:
            print(
                "dequantised cells by steps: "
                + ", ".join(f"{k} {step_counts[k]}" for k in ("0", "1", "more"))
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    r = sub.add_parser("rescore")
    g = sub.add_parser("margins")
    for p in (m, r, g):
        p.add_argument("--set", default=",".join(heldout.ROUNDS))
    args = parser.parse_args()
    {"measure": measure, "rescore": rescore, "margins": margins}[args.command](args)


if __name__ == "__main__":
    main()
