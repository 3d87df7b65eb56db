"""Bench: memory and time to read large frozen graphs, ours next to protobuf's parse.

Writes frozen GraphDefs of growing size (Const nodes holding 64 MiB tensors, as
frozen weights are) to a temporary folder, then for each measures in a fresh
process the peak RSS and wall time of
  - `tfcompat inspect --json FILE` (our wire walker: tensor contents skipped), and
  - `GraphDef.ParseFromString(whole file)` (what reading with protobuf alone costs).

Run: .venv/bin/python bench/read_memory.py [--sizes-mb 256 768 1536]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rows import row  # noqa: E402
from worker.proto import tensorflow_subset_pb2 as pb  # noqa: E402

CHUNK_MB = 64

MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{code} {wall:.2f} {peak:.0f}")
"""

PARSE = """
import sys
from worker.proto import tensorflow_subset_pb2 as pb
graph = pb.GraphDef()
with open(sys.argv[1], "rb") as f:
    graph.ParseFromString(f.read())
print(len(graph.node))
"""


def write_graph(path: Path, size_mb: int) -> None:
    """A frozen graph: Placeholder -> MatMul chain over Consts of CHUNK_MB each."""
    with path.open("wb") as out:
        inp = pb.NodeDef(name="x", op="Placeholder")
        inp.attr["dtype"].type = pb.DT_FLOAT
        out.write(pb.GraphDef(node=[inp]).SerializeToString())
        previous = "x"
        for i in range(max(1, size_mb // CHUNK_MB)):
            const = pb.NodeDef(name=f"w{i}", op="Const")
            const.attr["dtype"].type = pb.DT_FLOAT
            tensor = const.attr["value"].tensor
            tensor.dtype = pb.DT_FLOAT
            tensor.tensor_shape.dim.add(size=CHUNK_MB * 1024 * 256)
            tensor.tensor_content = bytes(CHUNK_MB << 20)
            matmul = pb.NodeDef(name=f"mm{i}", op="MatMul", input=[previous, f"w{i}"])
            matmul.attr["T"].type = pb.DT_FLOAT
            out.write(pb.GraphDef(node=[const, matmul]).SerializeToString())  # fields concatenate
            previous = f"mm{i}"
        out.write(pb.GraphDef(versions=pb.VersionDef(producer=2474)).SerializeToString())


def measure(args: list[str]) -> tuple[int, float, float]:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.split()
    return int(out[0]), float(out[1]), float(out[2])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[256, 768, 1536])
    args = parser.parse_args()
    rows = [("file", "tfcompat inspect: peak MB", "s", "protobuf parse: peak MB", "s")]
    with tempfile.TemporaryDirectory(prefix="tfcompat-bench-") as tmp:
        for size in args.sizes_mb:
            path = Path(tmp) / f"frozen-{size}.pb"
            write_graph(path, size)
            real = path.stat().st_size / (1 << 20)
            code, ours_s, ours_mb = measure(
                [sys.executable, "-m", "worker.cli", "inspect", "--json", str(path)]
            )
            assert code == 0, "tfcompat inspect failed"
            _, parse_s, parse_mb = measure([sys.executable, "-c", PARSE, str(path)])
            row(
                f"`tfcompat inspect` peak memory, {real:,.0f} MB frozen graph",
                f"{ours_mb:,.0f} MiB, {ours_s:.1f} s (whole process)",
                f"protobuf parse {parse_mb:,.0f} MiB, {parse_s:.1f} s",
                "<= 64 MiB whatever the size",
                ours_mb <= 64,
            )
            rows.append(
                (
                    f"{real:,.0f} MB",
                    f"{ours_mb:,.0f}",
                    f"{ours_s:.1f}",
                    f"{parse_mb:,.0f}",
                    f"{parse_s:.1f}",
                )
            )
            path.unlink()
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for line in rows:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
