#!/usr/bin/env python3
"""Run common ops in every release on the same inputs and record where results differ.

    python3 tools/attrs/kernels.py [--envs $TFENVS] [--output FILE] [--cache DIR]

Each case of KERNEL_CASES (an op, one dtype, edge-case inputs: halves for rounding,
NaN and infinities, out-of-range casts, image corners) is run by tools/attrs/probe.py
in every READY venv (tools/build_registries.py) with the op's own attrs fixed, so
only the kernel differs. Each release's results are compared with the newest
release's:
- equal (NaN equals NaN, -0.0 equals 0.0): nothing recorded;
- every value within 1e-6 relative: recorded as `rounding` (not a hazard);
- anything else (other values, another shape or dtype, an error on one side only):
  a change, with the input and both results.

Writes its table (format `tfcompat-kernel-changes/1`: the releases and (op, dtype)
pairs compared, and per (op, dtype) the releases whose results differ from the
newest, with the evidence) as the `hand` cases of
`worker/catalog/data/kernel_changes.json.gz`, the sweep's table (tools/kernels/sweep.py).
Standard library only.
"""

from __future__ import annotations

import os
import argparse
import gzip
import hashlib
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: provenance

from provenance import cpu_wheels, source_record  # noqa: E402

PROBE = Path(__file__).with_name("probe.py")
DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "kernel_changes.json.gz"
FORMAT = "tfcompat-kernel-changes/1"
ROUNDING = 1e-6

F = "float32"
HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1e-8, -3.7]
SPECIAL = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 88.0, -88.0, 1e30]
IMAGE = [[[[0.0], [10.0], [20.0]], [[30.0], [40.0], [50.0]], [[60.0], [70.0], [80.0]]]]


def t(dtype: str, value: Any) -> dict[str, Any]:
    return {"tensor": {"dtype": dtype, "value": value}}


def typ(name: str) -> dict[str, str]:
    return {"type": name}


def unary(op: str, values: list[float] = HALVES + SPECIAL) -> dict[str, Any]:
    return {"op": op, "attrs": {"T": typ("DT_FLOAT")}, "inputs": [t(F, values)]}


def binary(op: str, x: list[float], y: list[float]) -> dict[str, Any]:
    return {"op": op, "attrs": {"T": typ("DT_FLOAT")}, "inputs": [t(F, x), t(F, y)]}


def resize(op: str, **flags: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {"T": typ("DT_FLOAT")}
    attrs.update({k: {"b": v} for k, v in flags.items()})
    return {"op": op, "attrs": attrs, "inputs": [t(F, IMAGE), t("int32", [5, 4])]}


NUMERATORS = [7.0, -7.0, 7.5, -0.0, 1.0, 0.0, float("inf")]
DENOMINATORS = [2.0, 2.0, -2.0, 3.0, 0.0, 0.0, 3.0]

KERNEL_CASES: list[dict[str, Any]] = [
    *(
        unary(op)
        for op in (
            "Relu",
            "Relu6",
            "Elu",
            "Selu",
            "Sigmoid",
            "Tanh",
            "Softplus",
            "Softsign",
            "Exp",
            "Log",
            "Log1p",
            "Sqrt",
            "Rsqrt",
            "Erf",
            "Round",
            "Rint",
            "Floor",
            "Ceil",
            "Abs",
            "Neg",
            "Square",
            "Reciprocal",
            "Sin",
            "Cos",
            "Atan",
            "Sign",
            "IsNan",
        )
    ),
    {
        "op": "LeakyRelu",
        "attrs": {"T": typ("DT_FLOAT"), "alpha": {"f": 0.2}},
        "inputs": [t(F, HALVES + SPECIAL)],
    },
    *(
        binary(op, NUMERATORS, DENOMINATORS)
        for op in (
            "RealDiv",
            "Div",
            "FloorDiv",
            "FloorMod",
            "Mod",
            "DivNoNan",
            "Pow",
            "Maximum",
            "Minimum",
            "SquaredDifference",
            "Atan2",
            "Xdivy",
        )
    ),
    *(
        {
            "op": op,
            "attrs": {"T": typ("DT_INT32")},
            "inputs": [t("int32", [7, -7, 7, -7, 0]), t("int32", [2, 2, -2, -2, 3])],
        }
        for op in ("FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Div")
    ),
    *(
        {
            "op": "Cast",
            "attrs": {"SrcT": typ("DT_FLOAT"), "DstT": typ(dst)},
            "inputs": [t(F, [1.5, -1.5, 300.0, -300.0, 3e9, float("nan"), float("inf")])],
        }
        for dst in ("DT_INT32", "DT_UINT8", "DT_INT8", "DT_INT64", "DT_HALF", "DT_BFLOAT16")
    ),
    {
        "op": "Cast",
        "attrs": {"SrcT": typ("DT_INT64"), "DstT": typ("DT_INT32")},
        "inputs": [t("int64", [2**31, -(2**31) - 1, 5])],
    },
    *(
        {
            "op": op,
            "attrs": {"T": typ("DT_FLOAT"), "Tidx": typ("DT_INT32"), "keep_dims": {"b": False}},
            "inputs": [t(F, [[1.0, float("nan"), 3.0], [1e30, -1e30, 1.0]]), t("int32", [1])],
        }
        for op in ("Sum", "Mean", "Max", "Min", "Prod")
    ),
    *(
        {
            "op": op,
            "attrs": {
                "T": typ("DT_FLOAT"),
                "Tidx": typ("DT_INT32"),
                "output_type": typ("DT_INT64"),
            },
            "inputs": [t(F, [[1.0, 3.0, 3.0], [float("nan"), 2.0, float("nan")]]), t("int32", 1)],
        }
        for op in ("ArgMax", "ArgMin")
    ),
    {
        "op": "Softmax",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [[1000.0, 0.0, -1000.0], [float("-inf"), 0.0, 1.0]])],
    },
    {
        "op": "LogSoftmax",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [[1000.0, 0.0, -1000.0], [float("-inf"), 0.0, 1.0]])],
    },
    {
        "op": "MatMul",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [[1e8, 1.0, -1e8], [0.1, 0.2, 0.3]]), t(F, [[1.0], [1.0], [1.0]])],
    },
    {
        "op": "BatchMatMulV2",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [[[1e8, 1.0, -1e8]]]), t(F, [[[1.0], [1.0], [1.0]]])],
    },
    {
        "op": "Conv2D",
        "attrs": {
            "T": typ("DT_FLOAT"),
            "strides": {"list": {"i": ["1", "2", "2", "1"]}},
            "padding": {"s": "U0FNRQ=="},
        },
        "inputs": [t(F, IMAGE), t(F, [[[[1.0]], [[-1.0]]], [[[0.5]], [[0.25]]]])],
    },
    {
        "op": "DepthwiseConv2dNative",
        "attrs": {
            "T": typ("DT_FLOAT"),
            "strides": {"list": {"i": ["1", "1", "1", "1"]}},
            "padding": {"s": "U0FNRQ=="},
        },
        "inputs": [t(F, IMAGE), t(F, [[[[1.0]], [[-1.0]]], [[[0.5]], [[0.25]]]])],
    },
    *(
        {
            "op": op,
            "attrs": {
                "T": typ("DT_FLOAT"),
                "ksize": {"list": {"i": ["1", "2", "2", "1"]}},
                "strides": {"list": {"i": ["1", "2", "2", "1"]}},
                "padding": {"s": "U0FNRQ=="},
            },
            "inputs": [t(F, IMAGE)],
        }
        for op in ("MaxPool", "AvgPool")
    ),
    {
        "op": "BiasAdd",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [[1.0, 2.0], [3.0, 4.0]]), t(F, [0.5, -0.5])],
    },
    {
        "op": "FusedBatchNormV3",
        "attrs": {
            "T": typ("DT_FLOAT"),
            "U": typ("DT_FLOAT"),
            "is_training": {"b": False},
            "epsilon": {"f": 0.001},
        },
        "inputs": [t(F, IMAGE), t(F, [2.0]), t(F, [0.5]), t(F, [40.0]), t(F, [600.0])],
    },
    resize("ResizeBilinear"),
    resize("ResizeBilinear", align_corners=True),
    resize("ResizeBilinear", half_pixel_centers=True),
    resize("ResizeNearestNeighbor"),
    resize("ResizeNearestNeighbor", half_pixel_centers=True),
    resize("ResizeBicubic"),
    resize("ResizeBicubic", half_pixel_centers=True),
    resize("ResizeArea"),
    {
        "op": "CropAndResize",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [
            t(F, IMAGE),
            t(F, [[0.0, 0.0, 1.0, 1.0], [0.25, -0.5, 1.5, 0.75]]),
            t("int32", [0, 0]),
            t("int32", [3, 3]),
        ],
    },
    {
        "op": "TopKV2",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [1.0, 3.0, 3.0, float("nan"), 2.0, 3.0]), t("int32", 3)],
    },
    {
        "op": "Unique",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [3.0, 1.0, 3.0, -0.0, 0.0, 2.0])],
    },
    {
        "op": "Cumsum",
        "attrs": {"T": typ("DT_FLOAT"), "Tidx": typ("DT_INT32")},
        "inputs": [t(F, [1e8, 1.0, -1e8, 1.0]), t("int32", 0)],
    },
    {
        "op": "GatherV2",
        "attrs": {
            "Tparams": typ("DT_FLOAT"),
            "Tindices": typ("DT_INT32"),
            "Taxis": typ("DT_INT32"),
        },
        "inputs": [t(F, [1.0, 2.0, 3.0]), t("int32", [0, 3]), t("int32", 0)],
    },
    {
        "op": "OneHot",
        "attrs": {"T": typ("DT_FLOAT"), "TI": typ("DT_INT32")},
        "inputs": [t("int32", [0, 2, -1, 5]), t("int32", 3), t(F, 1.0), t(F, 0.0)],
    },
    {
        "op": "QuantizeV2",
        "attrs": {"T": typ("DT_QUINT8"), "mode": {"s": "TUlOX0NPTUJJTkVE"}},
        "inputs": [t(F, [-1.0, 0.0, 0.3, 1.0, 6.1]), t(F, 0.0), t(F, 6.0)],
    },
    {
        "op": "QuantizeV2",
        "attrs": {"T": typ("DT_QINT8"), "mode": {"s": "U0NBTEVE"}},
        "inputs": [t(F, [-1.0, 0.0, 0.3, 1.0, 6.1]), t(F, -6.0), t(F, 6.0)],
    },
    {
        "op": "FakeQuantWithMinMaxArgs",
        "attrs": {"min": {"f": -1.0}, "max": {"f": 1.0}},
        "inputs": [t(F, [-2.0, -0.5, 0.0, 0.33, 0.5, 2.0])],
    },
    {
        "op": "AsString",
        "attrs": {"T": typ("DT_FLOAT")},
        "inputs": [t(F, [1.5, 1e10, float("nan"), -0.0, 0.1])],
    },
    {
        "op": "StringToNumber",
        "attrs": {"out_type": typ("DT_FLOAT")},
        "inputs": [t("string", ["1.5", "1e3", "0x10", " 2", "inf"])],
    },
]


def key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


def dtype_of(case: dict[str, Any]) -> str:
    attrs = case["attrs"]
    for name in ("T", "SrcT", "Tparams"):
        if name in attrs:
            found = attrs[name]["type"]
            if name == "SrcT":
                return f"{found}->{attrs['DstT']['type']}"
            return str(found)
    return "DT_FLOAT"


def case_id(n: int, case: dict[str, Any]) -> str:
    flags = sorted(k for k, v in case["attrs"].items() if v == {"b": True})
    return f"{n:03d}:{case['op']}:{dtype_of(case)}" + (f":{'+'.join(flags)}" if flags else "")


def _number(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def compare(newest: dict[str, Any], other: dict[str, Any]) -> tuple[str, str]:
    """('same' | 'rounding' | 'differs', where the first real difference is)."""
    if "outputs" not in newest or "outputs" not in other:
        same = newest.get("error") == other.get("error")
        return ("same", "") if same else ("differs", "an error on one side only, or another")
    a, b = newest["outputs"], other["outputs"]
    if len(a) != len(b):
        return "differs", f"{len(b)} outputs, the newest {len(a)}"
    worst = "same"
    for n, (x, y) in enumerate(zip(a, b, strict=True)):
        if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
            return (
                "differs",
                f"output {n}: {y['dtype']}{y['shape']}, the newest {x['dtype']}{x['shape']}",
            )
        for m, (u, v) in enumerate(zip(x["values"], y["values"], strict=True)):
            if u == v:
                continue
            fu, fv = _number(u), _number(v)
            where = f"output {n} value {m}: {v}, the newest {u}"
            if fu is None or fv is None:
                return "differs", where
            if (math.isnan(fu) and math.isnan(fv)) or fu == fv:
                continue  # NaN, or -0.0 and 0.0
            if math.isinf(fu) or math.isinf(fv) or math.isnan(fu) or math.isnan(fv):
                return "differs", where
            if abs(fu - fv) <= ROUNDING * max(1.0, abs(fu), abs(fv)):
                worst = "rounding"
                continue
            return "differs", where
    return worst, ""


def run_all(envs: dict[str, str], cache: Path | None) -> dict[str, dict[str, Any]]:
    """release -> case id -> the run. A release whose runs of exactly these cases are in
    `cache` is not run again."""
    cases = [
        {**case, "id": case_id(n, case), "attr": "", "values": [None]}
        for n, case in enumerate(KERNEL_CASES)
    ]
    digest = hashlib.sha256(json.dumps(cases, sort_keys=True).encode()).hexdigest()[:16]
    found: dict[str, dict[str, Any]] = {}
    for version, python in envs.items():
        kept = cache / f"{version}-{digest}.json" if cache else None
        if kept is not None and kept.exists():
            found[version] = json.loads(kept.read_text())
            continue
        done = subprocess.run(
            [python, str(PROBE)],
            input=json.dumps({"cases": cases}),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            sys.stderr.write(f"{version}: probe failed: {done.stderr.strip()[-300:]}\n")
            continue
        doc = json.loads(done.stdout)
        found[version] = {r["id"]: r["runs"][0] for r in doc["results"]}
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(json.dumps(found[version], sort_keys=True))
        sys.stderr.write(f"{version}: {len(found[version])} cases\n")
    return found


def write_hand(output: Path, doc: dict[str, Any]) -> None:
    """Into the sweep's table (format 2, tools/kernels/sweep.py) as its `hand` cases, or
    alone (format 1) where there is no sweep table yet."""
    if output.exists() and output.suffix == ".gz":
        table = json.loads(gzip.decompress(output.read_bytes()))
        table["hand"] = doc
        text = json.dumps(table, sort_keys=True, separators=(",", ":")) + "\n"
        output.write_bytes(gzip.compress(text.encode(), mtime=0))
        return
    output.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--envs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs")))
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--cache", type=Path, default=REPO / ".cache" / "kernel-runs", help="'' for none"
    )
    args = parser.parse_args()
    started = time.monotonic()
    envs = {}
    for ready in sorted(args.envs.glob("*/READY"), key=lambda p: key(p.parent.name)):
        envs[ready.parent.name] = ready.read_text().strip().splitlines()[0].strip()
    runs = run_all(envs, args.cache if str(args.cache) else None)
    newest = max(runs, key=key)
    compared = []
    changes = []
    for n, case in enumerate(KERNEL_CASES):
        cid = case_id(n, case)
        reference = runs[newest].get(cid)
        if reference is None or "build_error" in reference:
            continue
        compared.append(cid)
        differs: list[str] = []
        rounding: list[str] = []
        evidence = None
        for version in sorted(runs, key=key):
            run = runs[version].get(cid)
            if version == newest or run is None or "build_error" in run:
                continue  # the release cannot build the node: its registry says so
            verdict, where = compare(reference, run)
            if verdict == "differs":
                differs.append(version)
                if evidence is None:
                    evidence = {"release": version, "result": run, "first_difference": where}
            elif verdict == "rounding":
                rounding.append(version)
        if differs or rounding:
            changes.append(
                {
                    "id": cid,
                    "op": case["op"],
                    "dtype": dtype_of(case),
                    "attrs": case["attrs"],
                    "inputs": case["inputs"],
                    "differs_in": differs,
                    "rounding_in": rounding,
                    "newest_result": reference,
                    "evidence": evidence,
                }
            )
    doc = {
        "format": FORMAT,
        "source": source_record(
            "tools/attrs/kernels.py",
            "tools/attrs/probe.py runs each case in every release's CPU wheel; results "
            "compared with the newest release's",
            cpu_wheels(runs),
        ),
        "newest": newest,
        "releases": sorted(runs, key=key),
        "compared": compared,
        "changes": changes,
    }
    write_hand(args.output, doc)
    sys.stderr.write(
        f"{len(compared)} cases over {len(runs)} releases in {time.monotonic() - started:.0f}s: "
        f"{sum(bool(c['differs_in']) for c in changes)} differ, "
        f"{sum(not c['differs_in'] for c in changes)} only by rounding\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
