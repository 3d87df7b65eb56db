"""Bench: time and peak memory of `inspect` next to a bare protobuf (upb) parse of the same file.

Writes three frozen GraphDefs with our own proto classes (bench/_graphs.py) to a
temporary folder:
  - resnet50: ResNet50's shape, ~280 nodes around ~100 MB of float32 Consts;
  - many-nodes: 2,000 nodes (400 convolution layers) around ~92 MB of Consts;
  - 1gb: the same ~280 nodes with every channel count x3.2, ~1 GB of weights;
  - empty-nodes: 1.5 million empty NodeDefs, 3 MB.
Each side runs in a fresh process, `--runs` times (the fastest run is shown;
peak RSS is the process's own maximum):
  - ours: `read_path(FILE)` and `inspect_json` of what it returns, which is what
    `tfcompat inspect --json` does (sha256 of the whole file included);
  - upb: `GraphDef.FromString(open(FILE).read())` with our proto subset;
  - reader: ours without the digest (`read_graph_source`), what reading costs;
  - sha256: hashing the file alone, the floor ours cannot go under while every
    artifact carries the sha256 of all its bytes.
Interpreter start-up and imports are outside every timing; bench/read_memory.py
measures whole `tfcompat inspect` processes the same way on growing sizes.

Run: .venv/bin/python bench/read_speed.py [--runs 3] [--only resnet50 1gb empty-nodes]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from rows import row  # noqa: E402

GRAPHS = ROOT / "bench" / "_graphs.py"

MEASURE = """
import resource, sys, time
{setup}
start = time.perf_counter()
{work}
wall = time.perf_counter() - start
print(f"{{wall:.4f}} {{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}}")
"""
SIDES = {
    "ours": (
        "from worker.formats.read import read_path\n"
        "from worker.formats.summary import inspect_json",
        "docs = [inspect_json(a) for a in read_path(sys.argv[1])]",
    ),
    "reader": (
        "from worker.formats.read import read_graph_source\n"
        "from worker.formats.source import FileSource",
        "read_graph_source(FileSource(sys.argv[1]))",
    ),
    "upb": (
        "from worker.proto import tensorflow_subset_pb2 as pb",
        "with open(sys.argv[1], 'rb') as f:\n    pb.GraphDef.FromString(f.read())",
    ),
    "sha256": (
        "import hashlib",
        "with open(sys.argv[1], 'rb') as f:\n    hashlib.file_digest(f, 'sha256').hexdigest()",
    ),
}
GOALS = {
    "resnet50": "wall <= 1.0x upb, peak <= 64 MiB",
    "many-nodes": "wall <= 1.0x upb",
    "1gb": "wall <= 0.5 s",
    "empty-nodes": "scales with bytes",
}


def measure(side: str, path: Path, runs: int) -> tuple[float, float]:
    """(fastest wall seconds, largest peak MiB) over `runs` fresh processes.

    ru_maxrss survives fork and exec, so the processes are started from this
    one while it is small (inputs are written by a process of their own).
    """
    setup, work = SIDES[side]
    script = MEASURE.format(setup=setup, work=work)
    results = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        ).stdout.split()
        results.append((float(out[0]), float(out[1])))
    return min(r[0] for r in results), max(r[1] for r in results)


def result_row(
    name: str,
    nodes: int,
    size: float,
    ours_s: float,
    ours_mb: float,
    upb_s: float,
    upb_mb: float,
    reader_s: float,
    sha_s: float,
) -> None:
    """One `make bench` row per input, against the issue's goal for it."""
    work = f"`inspect` {name} frozen graph ({nodes:,} nodes, {size:,.0f} MiB)"
    figure = f"{ours_s / upb_s:.2f}x upb wall ({ours_s:.2f} s), {ours_mb:,.0f} MiB"
    reference = f"upb parse {upb_s:.2f} s, {upb_mb:,.0f} MiB"
    if name == "resnet50":
        met = ours_s <= upb_s and ours_mb <= 64
    elif name == "many-nodes":
        met = ours_s <= upb_s
    elif name == "1gb":
        # The digest of every byte is the floor while artifacts carry their sha256.
        figure = (
            f"{ours_s:.2f} s = reader {reader_s:.3f} s + sha256 of all bytes "
            f"(alone {sha_s:.2f} s), {ours_mb:,.0f} MiB"
        )
        met = ours_s <= 0.5
    else:
        figure += f"; reader alone {reader_s:.2f} s"
        met = None
    row(work, figure, reference, GOALS[name], met)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=list(GOALS), default=list(GOALS))
    args = parser.parse_args()
    header = (
        "input", "size", "ours s", "upb s", "ours/upb", "reader s", "sha256 s",
        "ours MiB", "upb MiB", "ours/upb", "goal",
    )  # fmt: skip
    rows = [header]
    with tempfile.TemporaryDirectory(prefix="tfcompat-bench-") as tmp:
        for name in args.only:
            goal = GOALS[name]
            path = Path(tmp) / f"{name}.pb"
            written = subprocess.run(
                [sys.executable, str(GRAPHS), name, str(path)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=True,
            )
            nodes = int(written.stdout)
            ours_s, ours_mb = measure("ours", path, args.runs)
            upb_s, upb_mb = measure("upb", path, args.runs)
            reader_s, _ = measure("reader", path, args.runs)
            sha_s, _ = measure("sha256", path, args.runs)
            size = path.stat().st_size / (1 << 20)
            result_row(name, nodes, size, ours_s, ours_mb, upb_s, upb_mb, reader_s, sha_s)
            rows.append(
                (
                    f"{name} ({nodes:,} nodes)",
                    f"{size:,.0f} MiB",
                    f"{ours_s:.3f}",
                    f"{upb_s:.3f}",
                    f"{ours_s / upb_s:.2f}x",
                    f"{reader_s:.3f}",
                    f"{sha_s:.3f}",
                    f"{ours_mb:,.0f}",
                    f"{upb_mb:,.0f}",
                    f"{ours_mb / upb_mb:.2f}x",
                    goal,
                )
            )
            path.unlink()
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for line in rows:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
