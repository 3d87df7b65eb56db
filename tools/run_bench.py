#!/usr/bin/env python3
"""Run every benchmark under bench/ and print one table (`make bench`).

A benchmark is any `bench/*.py` with a `__main__` block (modules without one,
like `bench/rows.py`, are helpers the scripts import). Each runs in its own
process with its default arguments, one after the other (they measure time:
running two at once on a 2-core machine would measure each other). Its output
passes through as it comes; the lines it prints as `bench-row {json}` (see
`bench/rows.py`) become rows of the closing table. A script that prints no row
still gets one, saying how it ended, so nothing is silently left out; a script
that is absent is simply not run.

The machine's load (`/proc/loadavg`) is printed before and after: the table's
figures are ratios against references measured in the same run, but on a
shared machine they still move with the load.

With --results FILE it also writes the run as JSON (date, machine, load, each script's
rows and how it ended), which `tools/bench_doc.py` renders into docs/benchmarks.md.

Usage: python tools/run_bench.py [--only NAME ...] [--timeout S] [--python PY] [--results F]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
PREFIX = "bench-row "


def scripts(only: list[str]) -> list[Path]:
    found = []
    for path in sorted(BENCH.glob("*.py")):
        if path.name.startswith("_"):
            continue
        if '__name__ == "__main__"' not in path.read_text(errors="replace"):
            continue  # a helper module, not a benchmark
        if only and path.stem not in only and path.name not in only:
            continue
        found.append(path)
    return found


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def machine() -> dict[str, object]:
    """What the figures were measured on: they are only comparable on the same machine."""
    cpu = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def run(path: Path, python: str, timeout: float) -> tuple[list[dict[str, object]], str]:
    """The script's rows, and how it ended."""
    print(f"\n=== {path.relative_to(ROOT)} (load {load()})", flush=True)
    rows: list[dict[str, object]] = []
    start = time.monotonic()
    child = subprocess.Popen(
        [python, str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )
    assert child.stdout is not None
    timer = threading.Timer(timeout, child.kill)  # also ends a script that hangs silently
    timer.start()
    try:
        for line in child.stdout:
            print(line, end="", flush=True)
            if line.startswith(PREFIX):
                with contextlib.suppress(ValueError):  # a malformed row stays in the output
                    rows.append(json.loads(line[len(PREFIX) :]))
        code = child.wait()
    finally:
        timer.cancel()
    took = time.monotonic() - start
    ended = f"exit {code} after {took:.0f} s" if took < timeout else f"killed after {timeout:.0f} s"
    return rows, ended


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, r in enumerate(rows):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="script names (stem) to run")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per script, seconds")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the scripts")
    parser.add_argument(
        "--results", type=Path, help="also write the run as JSON here (tools/bench_doc.py)"
    )
    args = parser.parse_args(argv)
    started = datetime.datetime.now(datetime.UTC)
    before = load()
    runs: list[dict[str, object]] = []
    out = [["script", "work", "figure", "reference (same run)", "goal", "met"]]
    failed = False
    for path in scripts(args.only):
        rows, ended = run(path, args.python, args.timeout)
        runs.append({"script": path.name, "ended": ended, "rows": rows})
        if not ended.startswith("exit 0"):
            failed = True
        if not rows:
            out.append([path.name, "(no rows)", ended, "", "", ""])
        for r in rows:
            met = r.get("met")
            mark = "yes" if met is True else "NO" if met is False else "-"
            cells = [str(r.get(k) or "") for k in ("work", "figure", "reference", "goal")]
            out.append([path.name, *cells, mark])
        if rows and not ended.startswith("exit 0"):
            out.append([path.name, "(ended)", ended, "", "", ""])
    after = load()
    print(f"\n=== bench table (load average before {before}, after {after}; 2 cores)")
    print(table(out))
    if args.results:
        document = {
            "format": "tfcompat-bench/1",
            "date": started.strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "load_before": before,
            "load_after": after,
            "only": args.only,
            "scripts": runs,
        }
        args.results.write_text(json.dumps(document, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
