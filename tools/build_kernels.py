#!/usr/bin/env python3
"""Rebuild the kernel registries and revived object types from real TensorFlow installs.

    python3 tools/build_kernels.py [--envs $TFENVS] [--output FILE.json.gz]

For every `<envs>/<version>/READY` venv (made by `tools/build_registries.py`, one per
release of its RECIPES: the CPU wheel, `tensorflow-cpu` from 2.1), runs the project's
own `worker/fleet/dump_manifest.py` with that interpreter (the same file
`tfcompat fleet dump-manifest` runs in a consumer's environment) and keeps its
`kernels` table (per op, per device, each kernel's type constraints) and its
`revived_types` (the object types `tf.saved_model.load` revives by identifier, with
the methods the revived object has), packed into `revived_types.json` beside it.

The packed file (`tfcompat-kernels/1`, gzip, sorted keys, no timestamps, so the same
installs give the same bytes) holds each distinct per-op table once (`tables`) and,
per release, op -> index (`releases`). A release whose venv is missing keeps the
table of the packed file it replaces. Standard library only.
"""

from __future__ import annotations

import os
import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

from provenance import cpu_wheels, source_record  # noqa: E402  (tools/, the script's own folder)

DUMPER = REPO / "worker" / "fleet" / "dump_manifest.py"
DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "kernels.json.gz"
FORMAT = "tfcompat-kernels/1"


def dump(python: str) -> tuple[str, dict, dict | None]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "manifest.json"
        subprocess.run([python, str(DUMPER), "-o", str(out)], check=True,
                       stderr=subprocess.DEVNULL)
        manifest = json.loads(out.read_text())
    kernels = manifest.get("kernels")
    if kernels is None:
        raise RuntimeError(f"{python}: this TensorFlow exposes no kernel registry")
    return manifest["tensorflow"]["version"], kernels, manifest.get("revived_types")


def read_packed(path: Path) -> dict[str, dict]:
    """release -> op -> device table, from an earlier packed file."""
    if not path.exists():
        return {}
    doc = json.loads(gzip.decompress(path.read_bytes()))
    tables = doc["tables"]
    return {r: {op: tables[i] for op, i in ops.items()} for r, ops in doc["releases"].items()}


def pack(releases: dict[str, dict]) -> bytes:
    index: dict[str, int] = {}
    tables: list[object] = []
    packed: dict[str, dict[str, int]] = {}
    for release in sorted(releases, key=lambda v: tuple(int(p) for p in v.split(".")[:3])):
        ops = {}
        for op, table in sorted(releases[release].items()):
            key = json.dumps(table, sort_keys=True)
            if key not in index:
                index[key] = len(tables)
                tables.append(table)
            ops[op] = index[key]
        packed[release] = ops
    doc = {
        "format": FORMAT,
        "source": source_record(
            "tools/build_kernels.py",
            "dump_manifest.py's kernels table in each release's CPU wheel (tensorflow-cpu "
            "from 2.1, tensorflow before)",
            cpu_wheels(packed),
        ),
        "releases": packed,
        "tables": tables,
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--envs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs")))
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    releases = read_packed(args.output)
    revived_path = args.output.parent / "revived_types.json"
    revived = json.loads(revived_path.read_text())["releases"] if revived_path.exists() else {}
    for ready in sorted(args.envs.glob("*/READY")):
        python = ready.read_text().strip().splitlines()[0].strip()
        try:
            version, kernels, types = dump(python)
        except (subprocess.CalledProcessError, RuntimeError) as exc:
            sys.stderr.write(f"{ready.parent.name}: {exc}\n")
            continue
        releases[version] = kernels
        if types is not None:
            revived[version] = types
        sys.stderr.write(f"{version}: kernels for {len(kernels)} ops\n")
    args.output.write_bytes(pack(releases))
    doc = {
        "format": "tfcompat-revived-types/1",
        "source": source_record(
            "tools/build_kernels.py",
            "dump_manifest.py's revived_types in each release",
            cpu_wheels(revived),
        ),
        "releases": dict(sorted(revived.items())),
    }
    revived_path.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    sys.stderr.write(f"{len(releases)} releases -> {args.output}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
