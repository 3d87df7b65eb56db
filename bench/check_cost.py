"""Bench: what a `check` costs on top of reading, and what start-up costs.

Side by side in one run, each command in a fresh process, interleaved R times
(medians), on the 519-byte frozen graph TensorFlow 2.21 wrote
(tests/fixtures/tf-real/artifacts/tf2.21/frozen_graph):

  python -c pass                          the interpreter alone (start-up floor)
  bare protobuf parse of FILE             python, protobuf and our generated classes
  tfcompat inspect FILE                   reading the model
  tfcompat check FILE --consumer x3       reading + 3 consumers + all 79 releases

Start-up (issue 26: CI pays it on every call) is shown beside the bare parse, the
floor any reader of the file pays; goal: check <= inspect + 0.15 s (issue 12).
Wall and CPU (user+sys) are both shown: on a loaded machine wall time inflates
with the run queue, CPU time less.
Then one in-process breakdown of the check (imports, catalog, checks) says
where the difference goes.

Run: .venv/bin/python bench/check_cost.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from rows import row  # noqa: E402

GRAPH = ROOT / "tests/fixtures/tf-real/artifacts/tf2.21/frozen_graph/frozen_graph.pb"
CONSUMERS = ["--consumer", "tf==2.12", "--consumer", "tf==2.15", "--consumer", "tf==2.21"]
GOAL_S = 0.15
BARE_PARSE = (
    "import sys; from worker.proto import tensorflow_subset_pb2 as pb; "
    "pb.GraphDef().ParseFromString(open(sys.argv[1], 'rb').read())"
)

BREAKDOWN = """
import sys, time
t0 = time.perf_counter()
import worker.cli, worker.logs
from worker.formats.read import read_path
from worker.formats.summary import inspect_json
t1 = time.perf_counter()
from worker.catalog.catalog import load_catalog
from worker.compat.report import artifact_report
from worker.cli.render import render_check
t2 = time.perf_counter()
catalog = load_catalog()
t3 = time.perf_counter()
consumers = [catalog.consumer(v) for v in ("2.12", "2.15", "2.21")]
releases = catalog.range_consumers()
t4 = time.perf_counter()
artifacts = read_path(sys.argv[1])
t5 = time.perf_counter()
reports = [artifact_report(a, consumers, releases, catalog) for a in artifacts]
t6 = time.perf_counter()
pool = catalog._shipped.pool
print(f"imports shared with inspect {t1 - t0:.3f} s | check's own imports {t2 - t1:.3f} s | "
      f"catalog {t3 - t2:.3f} s | 79 release consumers {t4 - t3:.3f} s | read {t5 - t4:.3f} s | "
      f"checks (3 + {len(releases)}) {t6 - t5:.3f} s | OpDefs converted: "
      f"{pool.converted()} of {len(pool)}")
"""


def measure(command: list[str]) -> tuple[float, float, float]:
    """(wall s, cpu s, peak RSS MiB) of one fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=ROOT)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1, 3):
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    python = sys.executable
    tfcompat = str(Path(python).with_name("tfcompat"))
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "bare protobuf parse": [python, "-c", BARE_PARSE, str(GRAPH)],
        "inspect": [tfcompat, "inspect", str(GRAPH)],
        "check, 3 consumers": [tfcompat, "check", str(GRAPH), *CONSUMERS],
    }
    for command in commands.values():  # warm the page cache and .pyc files
        measure(command)
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            samples[name].append(measure(command))
    med = {
        name: tuple(statistics.median(s[i] for s in runs) for i in range(3))
        for name, runs in samples.items()
    }
    print(f"{args.runs} interleaved runs, medians; file {GRAPH.stat().st_size} bytes")
    print(f"{'command':<20} {'wall s':>7} {'cpu s':>7} {'peak MiB':>8}")
    for name, (wall, cpu, rss) in med.items():
        print(f"{name:<20} {wall:>7.3f} {cpu:>7.3f} {rss:>8.0f}")
    breakdown = subprocess.run(
        [python, "-c", BREAKDOWN, str(GRAPH)], capture_output=True, text=True, cwd=ROOT
    )
    print("check, in process:", breakdown.stdout.strip() or breakdown.stderr.strip())

    _, pass_cpu, _ = med["python -c pass"]
    bare_wall, bare_cpu, _ = med["bare protobuf parse"]
    ins_wall, ins_cpu, _ = med["inspect"]
    chk_wall, chk_cpu, _ = med["check, 3 consumers"]
    row(
        "start-up: `inspect` 519 B graph",
        f"{ins_wall:.2f} s wall, {ins_cpu:.2f} s CPU (+{ins_cpu - bare_cpu:.2f} CPU)",
        f"bare protobuf parse {bare_wall:.2f} s wall, {bare_cpu:.2f} s CPU; "
        f"python -c pass {pass_cpu:.2f} s CPU",
        "(start-up: imports on top of the bare parse)",
        None,
    )
    extra_wall, extra_cpu = chk_wall - ins_wall, chk_cpu - ins_cpu
    row(
        "`check` 3 consumers, 519 B graph",
        f"{chk_wall:.2f} s wall (+{extra_wall:.2f}), {chk_cpu:.2f} s CPU (+{extra_cpu:.2f})",
        f"inspect {ins_wall:.2f} s wall, {ins_cpu:.2f} s CPU",
        f"<= inspect + {GOAL_S} s",
        extra_wall <= GOAL_S,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
