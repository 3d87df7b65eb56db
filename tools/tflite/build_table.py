#!/usr/bin/env python3
"""Build the table of TFLite builtin ops each runtime resolves, from real runtimes.

    python3 tools/tflite/runtimes.py install     # the standalone runtimes' venvs
    python3 tools/tflite/build_table.py probe    # run probe_ops.py in every READY runtime
    python3 tools/tflite/build_table.py pack     # -> worker/catalog/data/tflite_runtimes.json

`probe` runs `tools/tflite/probe_ops.py` with each runtime's own Python (see
that file for the method: one synthetic flatbuffer per (code, version), the
runtime's own builder says whether it resolves it) and keeps each runtime's raw
answer in `build/tflite/probes/<runtime>.json` (skipped when present unless
--force). `pack` checks that every runtime's versions of an op are contiguous
(TFLite registers version ranges, so a gap would mean the probe is wrong; a
range need not start at 1: BROADCAST_TO's starts at 2) and writes the compact table the worker ships, sorted and stable.
Standard library only; Python 3.11.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtimes import DEFAULT_ENVS, DEFAULT_TF_ENVS, REPO, Runtime, python_of, ready, runtimes

PROBES = REPO / "build" / "tflite" / "probes"
PROBE = Path(__file__).resolve().parent / "probe_ops.py"
OUTPUT = REPO / "worker" / "catalog" / "data" / "tflite_runtimes.json"
FORMAT = "tfcompat-tflite-runtimes/1"
MAX_CODE = 260
MAX_VERSION = 20


def probe(runtime: Runtime, envs: Path, tf_envs: Path, force: bool) -> None:
    out = PROBES / f"{runtime.name}.json"
    if out.exists() and not force:
        return
    PROBES.mkdir(parents=True, exist_ok=True)
    python = python_of(runtime, envs, tf_envs)
    print(f"probing {runtime.name} with {python}", file=sys.stderr, flush=True)
    result = subprocess.run(
        [str(python), str(PROBE), str(MAX_CODE), str(MAX_VERSION)],
        capture_output=True,
        text=True,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"},
    )
    if result.returncode != 0:
        raise SystemExit(f"{runtime.name}: probe failed:\n{result.stderr[-3000:]}")
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    if not any(doc["ops"].values()):  # a broken install, not a runtime without kernels
        raise SystemExit(f"{runtime.name}: resolved no op at all: {doc['other_errors'].get('0')}")
    doc["runtime"] = runtime._asdict()
    out.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")


def _version_ranges(name: str, ops: dict[str, list[int]]) -> dict[str, list[int]]:
    """code -> [lowest, highest] version resolved (BROADCAST_TO starts at 2)."""
    table = {}
    for code, versions in ops.items():
        if not versions:
            continue
        if versions != list(range(versions[0], versions[-1] + 1)):
            raise SystemExit(f"{name}: code {code} has non-contiguous versions {versions}")
        table[code] = [versions[0], versions[-1]]
    return table


FLEX_PROBE = "build/tflite/models/tf2.12/flex_det.tflite"


def _runs_flex(runtime: Runtime) -> bool:
    """Whether the runtime ran the 2.12 converter's Flex model (tools/tflite/build_matrix.py
    load): Flex support is measured on that one real model, the other producers' Flex
    models stay held out."""
    loads = REPO / "build" / "tflite" / "loads" / f"{runtime.name}.jsonl"
    if not loads.exists():
        raise SystemExit(f"{runtime.name}: run build_matrix.py load first (Flex is measured there)")
    for line in loads.read_text().splitlines():
        row = json.loads(line)
        if row["model"] == FLEX_PROBE:
            return bool(row["stage"] == "invoked")
    raise SystemExit(f"{runtime.name}: {FLEX_PROBE} was not loaded")


def pack() -> dict[str, object]:
    names: dict[str, str] = {}
    rows = []
    for runtime in runtimes():
        path = PROBES / f"{runtime.name}.json"
        if not path.exists():
            continue
        doc = json.loads(path.read_text())
        names.update(doc["names"])  # later (newer) runtimes win
        in_range = [int(c) for c in doc["ops"]]
        rows.append(
            {
                "name": runtime.name,
                "family": runtime.family,
                "version": runtime.version,
                "tensorflow": runtime.tensorflow,
                "module": doc["module"],
                "module_version": doc["module_version"],
                "flex": _runs_flex(runtime),
                "max_code": max(in_range),
                "ops": _version_ranges(runtime.name, doc["ops"]),
            }
        )
    return {
        "format": FORMAT,
        "method": "tools/tflite/build_table.py: probe_ops.py in each runtime",
        "names": dict(sorted(names.items(), key=lambda kv: int(kv[0]))),
        "runtimes": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("probe", "pack"))
    parser.add_argument("--envs", type=Path, default=DEFAULT_ENVS)
    parser.add_argument("--tf-envs", type=Path, default=DEFAULT_TF_ENVS)
    parser.add_argument("--only", default="")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    if args.command == "probe":
        for runtime in runtimes():
            if args.only and runtime.name not in args.only.split(","):
                continue
            if ready(runtime, args.envs, args.tf_envs):
                probe(runtime, args.envs, args.tf_envs, args.force)
            else:
                print(f"{runtime.name}: no READY venv, skipped", file=sys.stderr)
    else:
        doc = pack()
        text = json.dumps(doc, indent=None, separators=(",", ":"), sort_keys=False)
        OUTPUT.write_text(text + "\n")
        print(f"wrote {OUTPUT} ({len(text)} bytes, {len(doc['runtimes'])} runtimes)")


if __name__ == "__main__":
    main()
