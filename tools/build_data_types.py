#!/usr/bin/env python3
"""Rebuild `worker/catalog/data/data_types.json`: each release's DataType enum.

    python3 tools/build_data_types.py --envs DIR [--output FILE]

For every venv under DIR with TensorFlow installed (`<venv>/bin/python`), reads the
release's own `tensorflow/core/framework/types_pb2.py` (`tensorflow_core/` in 1.15)
with that venv's interpreter, loaded by file path (TensorFlow itself is not imported:
the enum is the generated module's), and records the names of `DataType`, keyed by the
installed release's version (its `tensorflow*.dist-info`). A release read before and
not found now keeps its row.

Releases not installed get a lower bound (`at_least`): the DataType names their kernel
table holds (`data/kernels.json.gz`, dumped in each release by its own protobuf, so a
name there is one its enum has). The file (`tfcompat-data-types/1`, sorted keys)
carries a `source` record: the tool, the releases read and the date. Standard library
only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import re
import subprocess
from pathlib import Path

from provenance import cpu_wheels, source_record  # tools/, the script's own folder

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "data_types.json"
KERNELS = REPO / "worker" / "catalog" / "data" / "kernels.json.gz"
FORMAT = "tfcompat-data-types/1"

PACKAGES = ("tensorflow", "tensorflow_core")
READER = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("types_pb2", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps(sorted(name for name, _ in module.DataType.items())))
"""


def installed_release(venv: Path) -> tuple[str, Path] | None:
    """(TensorFlow version, its types_pb2.py) of a venv, or None without TensorFlow."""
    for site in sorted(venv.glob("lib/python*/site-packages")):
        # 1.15 keeps the package's body in tensorflow_core
        candidates = [site / p / "core" / "framework" / "types_pb2.py" for p in PACKAGES]
        types = next((c for c in candidates if c.exists()), None)
        if types is None:
            continue
        for info in sorted(site.glob("tensorflow*.dist-info")):
            name, _, version = info.name[: -len(".dist-info")].rpartition("-")
            if name.replace("_", "-") in ("tensorflow", "tensorflow-cpu"):
                return version, types
    return None


def read_enum(python: Path, types: Path) -> list[str]:
    out = subprocess.run(
        [str(python), "-c", READER, str(types)], check=True, capture_output=True, text=True
    )
    names: list[str] = json.loads(out.stdout)
    return names


def kernel_table_names(path: Path) -> dict[str, list[str]]:
    """Per release, the DataType names its measured kernel table mentions."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    per_table = [set(re.findall(r'"(DT_[A-Z0-9_]+)"', json.dumps(t))) for t in doc["tables"]]
    found: dict[str, list[str]] = {}
    for release, ops in doc["releases"].items():
        names: set[str] = set()
        for index in ops.values():
            names |= per_table[index]
        found[release] = sorted(names)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=Path, required=True)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    doc = json.loads(args.output.read_text()) if args.output.exists() else {}
    releases: dict[str, list[str]] = dict(doc.get("releases", {}))
    read: list[str] = []
    for venv in sorted(p for p in args.envs.iterdir() if (p / "bin" / "python").exists()):
        found = installed_release(venv)
        if found is None:
            continue
        version, types = found
        releases[version] = read_enum(venv / "bin" / "python", types)
        read.append(version)
        print(f"{version}: {len(releases[version])} DataType names")
    source = source_record(
        "tools/build_data_types.py",
        "the DataType enum of tensorflow/core/framework/types_pb2.py in each installed "
        "release (exact); at_least: the DataType names in each release's measured kernel "
        "table (data/kernels.json.gz), a lower bound for the releases not installed",
        cpu_wheels(sorted(set(read) | set(releases))),
        dt.date.today(),
    )
    at_least = kernel_table_names(KERNELS) if KERNELS.exists() else {}
    out = {"format": FORMAT, "source": source, "releases": releases, "at_least": at_least}
    args.output.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
