#!/usr/bin/env python3
"""Which TFLite runtimes answer a builtin differently, measured (issue 37).

    python3 tools/tflite/runtimes.py install
    python3 tools/tflite/kernel_sweep.py convert --tf-envs TFENVS [--producers 2.17.1,2.12.1]
    python3 tools/tflite/kernel_sweep.py run --envs ENVS --tf-envs TFENVS [--only R1,R2]
    python3 tools/tflite/kernel_sweep.py write [--distribution]

`convert` runs kernel_models.py in each producer's TensorFlow venv: one single-op
model per (builtin, type variant) (float32; int8 full-integer; int16x8 where the
converter offers it; dynamic-range weights for the ops with weights), written once
by each producer into .cache/tflite-kernels/models/tf<version>/. `run` feeds every
file to every READY runtime (kernel_run.py in the runtime's own Python, one thread,
the same six input classes everywhere) and caches the raw outputs under
.cache/tflite-kernels/runs/<runtime>.jsonl (only files a runtime has not run yet, or
whose SHA-256 changed, are run; `--refresh` runs them all again); a model that kills
the process is recorded as a crash and the runtime restarted past it. `write`
compares each runtime's outputs with the reference runtime's (the newest LiteRT,
else the newest TensorFlow that answered) and writes
worker/catalog/data/tflite_kernel_changes.json.gz.

Comparison, per output element: bitwise equal; else, for float outputs, the distance
in ULPs of the output's scale (|a - b| over the float32 spacing at the reference
output's largest finite magnitude, so a sum that cancels to near zero is not counted
in the ULPs of its tiny result; NaN against NaN is equal, NaN or an infinity on one
side only is not comparable); for int8/int16 outputs, the distance in quantised
steps (the integer difference; both sides share the file's scale); an integer output
without a scale (ARG_MAX's indices) must be equal. A runtime differs on an input class
when some element is further than the tolerance (`TOLERANCE`: 16 ULPs, 1 step, 0),
chosen from the distribution `write --distribution` prints: on the ordinary classes
float differences reach 8 ULPs (summation order, another tanh) and the next are
dynamic-range kernels at 1.2e5 and beyond; quantised ones are 1 step (requantisation
rounding) and the next 3 to 4 (LOG_SOFTMAX int8 in TensorFlow 2.4 and 2.5), then 65
and beyond.
Classes ordinary, halves and positive are what a served model meets (`met_on:
ordinary`); special (NaN, infinities, -0.0, denormals), large (near float32's
limits; saturating for an integer input) and tiny are extremes.

Standard library and the package's own TFLite reader (`write` runs in the repository's
venv: .venv/bin/python); Python 3.11.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import gzip
import hashlib
import json
import math
import subprocess
import sys
import zlib
from array import array
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtimes import DEFAULT_ENVS, DEFAULT_TF_ENVS, REPO, python_of, ready, runtimes

CACHE = REPO / ".cache" / "tflite-kernels"
MODELS = CACHE / "models"
RUNS = CACHE / "runs"
TABLE = REPO / "worker" / "catalog" / "data" / "tflite_kernel_changes.json.gz"
HERE = Path(__file__).resolve().parent
ENV = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}
FORMAT = "tfcompat-tflite-kernel-changes/1"
PRODUCERS = ("2.21.0", "2.12.1")
ORDINARY = ("ordinary", "halves", "positive")
EXTREMES = ("special", "large", "tiny")
TOLERANCE = {"float_ulps": 16, "quantized_steps": 1, "integers": 0}
"""Within these a difference is rounding, not a change (see the distribution)."""
WHOLE_FLOAT_CAP = 2**16
"""The most ULPs a whole model's float output is allowed as rounding, however deep."""
ANSWERS = ("bitwise", "within rounding", "differs")


def whole_tolerance(depth: int) -> dict[str, float]:
    """Within these a whole model `depth` operators deep answers within rounding: its
    operators' roundings compounded, not a changed kernel (kernel_whole.py measures the
    distribution; docs/verdicts/tflite.md). Float outputs: the per-operator 16 ULPs times
    the depth squared, at most 2^16 ULPs of the output's largest magnitude (one operator:
    the per-operator tolerance); quantised outputs: 1 step, as per operator (measured on
    quantised files 2 to 4 operators deep only); unscaled integers: equal."""
    ulps = min(TOLERANCE["float_ulps"] * max(depth, 1) ** 2, WHOLE_FLOAT_CAP)
    return {"float_ulps": ulps, "quantized_steps": 1, "integers": 0}


SENSITIVITY_FACTOR = 32
"""How many times a float file's own amplification of a one-ULP rounding its output may
move and still be rounding: about twice the largest ratio measured in-sample where the
table records no change (17, selfie_segmentation; two real files 300 times and more
further are not explained and differ under any tolerance; kernel_sensitivity.py
rescore)."""


def sensitive_tolerance(amplification: float | None, hybrid: bool = False) -> dict[str, float]:
    """Within these a whole model answers within rounding, stated from the file's own
    properties rather than its depth (kernel_sensitivity.py measures them in the
    reference runtime). `amplification`: how far the file's float output moves, in ULPs of
    its largest magnitude, when its float input or every float32 constant moves one ULP
    (the largest over the ordinary input classes; None: nothing float to move).

    - float outputs: SENSITIVITY_FACTOR times the amplification, never below the
      per-operator 16 ULPs;
    - float outputs of a `hybrid` file (dynamic-range operators: int8 weights, the float
      activations quantised on the fly): the per-operator 16 ULPs. A one-ULP nudge there
      crosses the on-the-fly int8 steps, so its amplification measures a quantisation
      flip, not the rounding runtimes that agree per operator show;
    - quantised outputs, and a float output a DEQUANTIZE writes (counted in the steps of
      the tensor it dequantises, dequantized_steps): 1 step; unscaled integers: equal."""
    floor = float(TOLERANCE["float_ulps"])
    ulps = floor if hybrid else max(floor, SENSITIVITY_FACTOR * (amplification or 0.0))
    return {"float_ulps": ulps, "quantized_steps": 1, "integers": 0}


def dequantized_steps(ulps: float, ulp: float, scale: float) -> float:
    """A float output's distance of `ulps` ULPs (each `ulp` wide) in steps of the
    quantised tensor a DEQUANTIZE made it from (`scale`): |a - b| / scale."""
    if math.isinf(ulps) or not scale:
        return ulps
    return round(ulps * ulp / scale * 100) / 100  # float32 arithmetic blurs whole steps


def answer_by_sensitivity(
    got: list[dict[str, Any]], expected: list[dict[str, Any]], sensitivity: dict[str, Any]
) -> str:
    """A whole model's outputs on one input class against the reference's, judged by
    sensitive_tolerance of the file's `sensitivity` (kernel_sensitivity.py: its
    amplification, whether it is hybrid, per output the scale a DEQUANTIZE reads):
    `bitwise`, `within rounding` or `differs`."""
    if len(got) != len(expected):
        return "differs"
    tolerance = sensitive_tolerance(
        sensitivity.get("amplification"), bool(sensitivity.get("hybrid"))
    )
    outputs = sensitivity.get("outputs") or []
    found = "bitwise"
    for j, (a, b) in enumerate(zip(got, expected, strict=True)):
        d, _ = distance(a, b)
        kind = kind_of(b)
        scale = (outputs[j].get("dequantizes") or {}).get("scale") if j < len(outputs) else None
        if kind == "float_ulps" and scale and d:
            d, kind = dequantized_steps(d, _spacing(values(b)), scale), "quantized_steps"
        if d > tolerance[kind]:
            return "differs"
        if d:
            found = "within rounding"
    return found


REMEASURE = (
    "python3 tools/tflite/kernel_sweep.py run --only {runtime} --refresh && "
    ".venv/bin/python tools/tflite/kernel_sweep.py write"
)
TIMEOUT = 900


def convert(args: argparse.Namespace) -> None:
    for version in args.producers.split(","):
        python = args.tf_envs / version / "bin" / "python"
        out = MODELS / f"tf{version}"
        if (out / "models.json").exists():
            print(f"{version}: already converted", file=sys.stderr)
            continue
        subprocess.run(
            [str(python), str(HERE / "kernel_models.py"), str(out)],
            check=True,
            env=ENV,
        )


def model_files() -> list[Path]:
    return sorted(MODELS.glob("tf*/*.tflite"))


def _run_runtime(python: Path, files: list[Path]) -> list[dict[str, Any]]:
    """Every file through one runtime, restarting past a file that kills the process."""
    rows: list[dict[str, Any]] = []
    left = [str(f) for f in files]
    while left:
        try:
            proc = subprocess.run(
                ["nice", str(python), str(HERE / "kernel_run.py"), *left],
                capture_output=True,
                text=True,
                env=ENV,
                cwd=HERE,
                timeout=TIMEOUT,
            )
            out, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as e:
            raw = e.stdout or b""
            out, code = raw.decode() if isinstance(raw, bytes) else raw, -1
        last = None
        for line in out.splitlines():
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if "progress" in row:
                last = row["model"]
                continue
            if "interpreter" not in row:
                rows.append(row)
        if code == 0 or last is None:
            break
        rows.append({"model": last, "error": f"crash: the process ended with {code}"})
        left = left[left.index(last) + 1 :]
    return rows


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(args: argparse.Namespace) -> None:
    """Every file a runtime has not run yet, or whose bytes changed since (rows carry the
    file's SHA-256: a case converted again under the same name is run again)."""
    RUNS.mkdir(parents=True, exist_ok=True)
    digests = {str(f.relative_to(MODELS)): _digest(f) for f in model_files()}
    only = set(args.only.split(",")) if args.only else None
    for runtime in runtimes():
        if only and runtime.name not in only:
            continue
        if not ready(runtime, args.envs, args.tf_envs):
            continue
        cached = RUNS / f"{runtime.name}.jsonl"
        lines = [] if args.refresh or not cached.exists() else cached.read_text().splitlines()
        kept = [
            line
            for line in lines
            if (row := json.loads(line)).get("sha256") == digests.get(row["model"])
        ]
        done = {json.loads(line)["model"] for line in kept}
        pending = [MODELS / name for name in sorted(digests) if name not in done]
        if not pending and len(kept) == len(lines):
            continue
        rows = _run_runtime(python_of(runtime, args.envs, args.tf_envs), pending)
        for row in rows:
            row["model"] = str(Path(row["model"]).resolve().relative_to(MODELS))
            row["sha256"] = digests[row["model"]]
        cached.write_text(
            "".join(line + "\n" for line in kept) + "".join(json.dumps(r) + "\n" for r in rows)
        )
        print(f"{runtime.name}: {len(rows)} new rows", file=sys.stderr)


# --- comparison ---------------------------------------------------------------------------

CODES = {"float32": "f", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B"}


def values(out: dict[str, Any]) -> array[Any]:
    data = zlib.decompress(base64.b64decode(out["data"]))
    code = CODES.get(out["dtype"], "B")
    a = array(code)
    a.frombytes(data)
    return a


def _spacing(values: array[Any]) -> float:
    """The float32 spacing (one ULP) at the output's largest finite magnitude."""
    top = max((abs(v) for v in values if math.isfinite(v)), default=0.0)
    return 2.0 ** (math.frexp(top)[1] - 24) if top else 2.0**-149


def distance(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, int]:
    """The largest distance between an output `a` and the reference's `b` (ULPs of the
    reference output's largest magnitude for float32, steps for integers; inf: not
    comparable) and the element where it is (-1: shape or type)."""
    if a["dtype"] != b["dtype"] or a["shape"] != b["shape"]:
        return math.inf, -1
    if a["data"] == b["data"]:
        return 0.0, 0
    x, y = values(a), values(b)
    ulp = _spacing(y) if a["dtype"] == "float32" else 1.0
    worst, where = 0.0, 0
    for i, (p, q) in enumerate(zip(x, y, strict=True)):
        if a["dtype"] == "float32":
            if math.isnan(p) and math.isnan(q):
                continue
            if not (math.isfinite(p) and math.isfinite(q)):
                d = 0.0 if p == q else math.inf
            else:
                d = abs(p - q) / ulp
        else:
            d = float(abs(int(p) - int(q)))
        if d > worst:
            worst, where = d, i
    return worst, where


def answer(got: list[dict[str, Any]], expected: list[dict[str, Any]], depth: int) -> str:
    """A whole model's outputs on one input class against the reference's: `bitwise`,
    `within rounding` (every output within whole_tolerance(depth)) or `differs`."""
    if len(got) != len(expected):
        return "differs"
    tolerance = whole_tolerance(depth)
    found = "bitwise"
    for a, b in zip(got, expected, strict=True):
        d, _ = distance(a, b)
        if d > tolerance[kind_of(b)]:
            return "differs"
        if d:
            found = "within rounding"
    return found


def depth_of(path: Path) -> int:
    """The longest chain of operators of the file's first subgraph, each consuming a
    tensor the one before wrote (operators are stored in the order the runtime runs
    them); what whole_tolerance is stated per."""
    sys.path.insert(0, str(REPO))
    from worker.formats import tflite_schema as S
    from worker.formats.source import FileSource
    from worker.formats.tflite import _Flat

    flat = _Flat(FileSource(path))
    model = flat.table(flat.u32(0))
    subgraph = next(flat.tables(model, S.MODEL_SUBGRAPHS, 1, "subgraphs"))
    written: dict[int, int] = {}
    deepest = 0
    for op in flat.tables(subgraph, S.SUBGRAPH_OPERATORS, 100_000, "operators"):
        ins = flat.ints(op, S.OPERATOR_INPUTS, 10_000, "inputs")
        depth = 1 + max((written.get(i, 0) for i in ins), default=0)
        for o in flat.ints(op, S.OPERATOR_OUTPUTS, 10_000, "outputs"):
            written[o] = depth
        deepest = max(deepest, depth)
    return deepest


def kind_of(out: dict[str, Any]) -> str:
    """How an output's distance is counted: float32 in ULPs, a quantised integer in
    steps, an integer without a scale (an index, a count) exactly."""
    if out["dtype"] == "float32":
        return "float_ulps"
    scale = (out.get("quantization") or [0.0, 0])[0]
    return "quantized_steps" if scale else "integers"


def load_runs(folder: Path | None = None) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    """runtime -> (model, class) -> row; a model-level error under class "" (the sweep's
    raw runs, or those of another folder of per-runtime JSON lines)."""
    found: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for path in sorted((folder or RUNS).glob("*.jsonl")):
        rows = {}
        for line in path.read_text().splitlines():
            row = json.loads(line)
            rows[(row["model"], row.get("class", ""))] = row
        found[path.stem] = rows
    return found


def reference_of(measured: list[str]) -> list[str]:
    """Runtimes in the order a reference is chosen: newest LiteRT first, then TensorFlow."""
    order = {r.name: i for i, r in enumerate(runtimes())}
    litert = [n for n in measured if n.startswith("ai-edge-litert-")]
    tf = [n for n in measured if n.startswith("tensorflow-")]
    return sorted(litert, key=order.__getitem__, reverse=True) + sorted(
        tf, key=order.__getitem__, reverse=True
    )


def _catalogue() -> dict[str, dict[str, Any]]:
    """file key (tfX/case.variant) -> how it was made, with the builtin's variant as the
    file holds it (worker.model.tflite.variant_of, what the rule keys on): a converter
    may keep an op float in a quantised file, or write no such builtin at all."""
    sys.path.insert(0, str(REPO))
    from worker.formats.source import FileSource
    from worker.formats.tflite import read_tflite
    from worker.model.tflite import variant_of

    made: dict[str, dict[str, Any]] = {}
    for path in sorted(MODELS.glob("tf*/models.json")):
        doc = json.loads(path.read_text())
        for name, row in doc["models"].items():
            entry = dict(row, producer=doc["converter"])
            if "file" in row:
                model = read_tflite(FileSource(path.parent / row["file"]))
                names = [model.operator_codes[k.opcode_index].name for k in model.operator_kinds]
                kinds = [
                    k
                    for k, n in zip(model.operator_kinds, names, strict=True)
                    if n == row["builtin"]
                ]
                found = variant_of(kinds[0], row["builtin"]) if kinds else None
                wanted = {"float16": "float32"}.get(row["variant"], row["variant"])
                # DEQUANTIZE and DENSIFY of float16 weights hold float16 themselves; the
                # suffixes (-per-channel, -1x1) are what the file holds, not what was asked
                if found is not None and found.split("-")[0] in (
                    wanted,
                    row["variant"],
                ):
                    entry["variant"] = found
                    entry["ops"] = sorted(set(names))
                elif kinds:  # its answers would be the QUANTIZE around a float op's
                    del entry["file"]
                    entry["error"] = f"the converter kept {row['builtin']} {found} in this file"
                else:
                    del entry["file"]
                    entry["error"] = (
                        f"the converter wrote no {row['builtin']}: {sorted(set(names))}"
                    )
            made[f"{path.parent.name}/{name}"] = entry
    return made


def _fmt(out: dict[str, Any], where: int) -> str:
    """The element that differs most, with its neighbours, as the runtime returned it."""
    vals = values(out)
    lo = max(0, where - 1)
    shown = list(vals[lo : lo + 3])
    text = ", ".join(f"{v:.9g}" if isinstance(v, float) else str(v) for v in shown)
    scale = out.get("quantization", [0.0, 0])
    if out["dtype"] != "float32" and scale and scale[0]:
        real = ", ".join(f"{(int(v) - scale[1]) * scale[0]:.6g}" for v in shown)
        text += f" (real {real})"
    return f"[{text}] at {lo}"


def compare(
    runs: dict[str, dict[tuple[str, str], dict[str, Any]]],
) -> tuple[list[dict[str, Any]], Counter[tuple[str, str]]]:
    """One row per (model, runtime, class) that answered on both sides and was not
    bitwise equal to the reference; and the distribution of all distances."""
    made = _catalogue()
    order = reference_of(sorted(runs))
    rows: list[dict[str, Any]] = []
    histogram: Counter[tuple[str, str]] = Counter()
    for model in sorted(made):
        if "file" not in made[model]:
            continue
        key = model.rsplit("/", 1)[0] + "/" + made[model]["file"]
        for cls in ORDINARY + EXTREMES:
            ref = next(
                (r for r in order if "outputs" in runs[r].get((key, cls), {})),
                None,
            )
            if ref is None:
                continue
            expect = runs[ref][(key, cls)]["outputs"]
            for runtime, table in runs.items():
                got = table.get((key, cls))
                if runtime == ref or got is None or "outputs" not in got:
                    continue
                worst, where, bucket_kind, at = 0.0, 0, "float_ulps", 0
                for j, (a, b) in enumerate(zip(got["outputs"], expect, strict=False)):
                    d, w = distance(a, b)
                    if d > worst or (d == worst and j == 0):
                        worst, where, bucket_kind, at = d, w, kind_of(b), j
                group = "ordinary" if cls in ORDINARY else "extremes"
                histogram[(f"{bucket_kind} {group}", _bucket(worst))] += 1
                if worst == 0:
                    continue
                rows.append(
                    {
                        "model": key,
                        "case": made[model]["case"],
                        "op": made[model]["builtin"],
                        "variant": made[model]["variant"],
                        "producer": made[model]["producer"],
                        "runtime": runtime,
                        "reference": ref,
                        "class": cls,
                        "kind": bucket_kind,
                        "distance": worst,
                        "got": _fmt(got["outputs"][at], max(where, 0)),
                        "expected": _fmt(expect[at], max(where, 0)),
                    }
                )
    return rows, histogram


BUCKETS = (0, 1, 2, 4, 8, 16, 64, 256, 4096, 2**16, 2**24)


def _bucket(d: float) -> str:
    if d == 0:
        return "0"
    if math.isinf(d):
        return "not comparable"
    for b in BUCKETS[1:]:
        if d <= b:
            return f"<= {b}"
    return f"> {BUCKETS[-1]}"


def build_table(runs: dict[str, dict[tuple[str, str], dict[str, Any]]]) -> dict[str, Any]:
    rows, histogram = compare(runs)
    made = _catalogue()
    changes: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        if row["distance"] <= TOLERANCE[row["kind"]]:
            continue
        key = (row["op"], row["variant"], row["runtime"])
        entry = changes.setdefault(
            key,
            {
                "op": row["op"],
                "variant": row["variant"],
                "runtime": row["runtime"],
                "reference": row["reference"],
                "classes": [],
                "producers": [],
                "evidence": None,
            },
        )
        if row["class"] not in entry["classes"]:
            entry["classes"].append(row["class"])
        if row["producer"] not in entry["producers"]:
            entry["producers"].append(row["producer"])
        ordinary = row["class"] in ORDINARY
        shown = entry["evidence"]
        if shown is None or (ordinary and shown["class"] not in ORDINARY):
            entry["evidence"] = {
                k: row[k]
                for k in ("class", "producer", "got", "expected", "distance", "kind", "reference")
            }
    for entry in changes.values():
        entry["classes"].sort(key=(ORDINARY + EXTREMES).index)
        entry["met_on"] = "ordinary" if any(c in ORDINARY for c in entry["classes"]) else "extremes"
        entry["producers"].sort()
        ev = entry["evidence"]
        if math.isinf(ev["distance"]):
            ev["distance"] = "not comparable"
    measured: dict[str, dict[str, list[str]]] = {}
    refused: dict[str, dict[str, list[str]]] = {}
    for runtime, table in runs.items():
        for model, row in made.items():
            if "file" not in row:
                continue
            key = model.rsplit("/", 1)[0] + "/" + row["file"]
            answered = any("outputs" in table.get((key, c), {}) for c in ORDINARY + EXTREMES)
            into = measured if answered else refused
            if answered or (key, "") in table:
                runtimes_of = into.setdefault(row["builtin"], {}).setdefault(row["variant"], [])
                if runtime not in runtimes_of:
                    runtimes_of.append(runtime)
    order = {r.name: i for i, r in enumerate(runtimes())}
    producers = sorted({str(r["producer"]) for r in made.values()}, key=_version_key)
    for tree in (measured, refused):
        for per in tree.values():
            for names in per.values():
                names.sort(key=order.__getitem__)
    unbuildable = {
        f"{row['builtin']} {row['case']}.{row['variant']} ({row['producer']})": row["error"]
        for row in made.values()
        if "error" in row
    }
    labels = [_bucket(b) for b in BUCKETS] + [f"> {BUCKETS[-1]}", "not comparable"]
    dist = {
        kind: {
            group: {b: histogram[(f"{kind} {group}", b)] for b in labels}
            for group in ("ordinary", "extremes")
        }
        for kind in TOLERANCE
    }
    return {
        "format": FORMAT,
        "source": {
            "tool": "tools/tflite/kernel_sweep.py",
            "how": (
                "kernel_run.py in each runtime's own Python over single-op files "
                "(kernel_models.py: one per builtin and type variant, per converter), six "
                "input classes, outputs compared with the reference runtime's"
            ),
            "read": [f"converter tensorflow {v}" for v in producers]
            + sorted(runs, key=order.__getitem__),
            "date": datetime.date.today().isoformat(),
        },
        "remeasure": REMEASURE,
        "tolerance": TOLERANCE,
        "classes": {"ordinary": list(ORDINARY), "extremes": list(EXTREMES)},
        "reference": reference_of(sorted(runs))[0] if runs else None,
        "runtimes": sorted(runs, key=order.__getitem__),
        "distribution": dist,
        "measured": measured,
        "refused": refused,
        "unbuildable": unbuildable,
        "changes": sorted(
            changes.values(),
            key=lambda c: (c["op"], c["variant"], order[c["runtime"]]),
        ),
    }


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def write(args: argparse.Namespace) -> None:
    runs = load_runs()
    table = build_table(runs)
    if args.distribution:
        print(json.dumps(table["distribution"], indent=1))
        rows, _ = compare(runs)
        by: Counter[tuple[str, str, str]] = Counter()
        for row in rows:
            group = "ordinary" if row["class"] in ORDINARY else "extremes"
            what = f"{row['op']} {row['variant']} {group}"
            by[(row["kind"], what, _bucket(row["distance"]))] += 1
        for (kind, what, bucket), n in sorted(by.items()):
            print(f"{kind}\t{what}\t{bucket}\t{n}")
        return
    text = json.dumps(table, separators=(",", ":"), sort_keys=True) + "\n"
    TABLE.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(
        f"{len(table['changes'])} (op, variant, runtime) changes over "
        f"{len(table['runtimes'])} runtimes",
        file=sys.stderr,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert")
    c.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    c.add_argument("--producers", default=",".join(PRODUCERS))
    r = sub.add_parser("run")
    r.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    r.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    r.add_argument("--only", default="")
    r.add_argument("--refresh", action="store_true")
    w = sub.add_parser("write")
    w.add_argument("--distribution", action="store_true")
    args = parser.parse_args()
    {"convert": convert, "run": run, "write": write}[args.command](args)


if __name__ == "__main__":
    main()
