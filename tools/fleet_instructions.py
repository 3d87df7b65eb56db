"""Instructions one fleet change costs: a figure this shared machine's load cannot move.

Wall time on a busy 2-core machine swings by a fifth between runs of the same code;
callgrind counts the instructions the interpreter executes, which repeat exactly for
the same code and inputs. This builds N models as `bench/fleet_impact.py` does (real
fixtures varied, baseline-checked against its 20-consumer fleet, release verdicts
recorded), keeps them in a pickle, then runs `assess` with that bench's "replace all
20" fleet (one process, models in memory) under `valgrind --tool=callgrind` twice,
once stopping just before `assess`, and prints the difference: the instructions of
the assessment alone. Compare two commits by running it on each (the pickle is built
by whichever runs first; delete it when the model format changes).

Run: .venv/bin/python tools/fleet_instructions.py [--models 1000]   (about 80 s)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CACHE = ROOT / ".cache"


def build(n: int, path: Path) -> None:
    import fleet_impact as bench

    from worker.catalog.catalog import load_catalog

    rng = random.Random(7)
    catalog = load_catalog()
    fleet = bench.bench_fleet(catalog, 20)
    bases, extra = bench.base_artifacts(), bench.varied_ops(catalog)
    models = [bench.model_of(k, bench.vary(rng.choice(bases), rng, extra, k)) for k in range(n)]
    models, _ = bench.checked_at_upload(models, fleet, catalog)
    fresh = [(c.tensorflow, c.loader.value, c.name) for c in bench.new_fleet(catalog, fleet)]
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(pickle.dumps((models, fresh)))


def run(path: Path, stop_before: bool) -> None:
    """The measured program: load the models and the catalog; assess unless told not to."""
    import gc

    from worker.catalog.catalog import load_catalog
    from worker.fleet.impact import assess
    from worker.model.consumer import Loader

    catalog = load_catalog()
    models, fresh = pickle.loads(path.read_bytes())
    consumers = [catalog.consumer(v, Loader(loader), name=name) for v, loader, name in fresh]
    gc.disable()  # as `fleet impact` runs it (worker.sinks.index.gc_paused)
    if stop_before:
        return
    impact = assess(models, consumers, history=catalog, with_artifacts=False)
    outcome = [(m.model.key, str(m.status_after), m.changes) for m in impact.models]
    print(
        f"checks {impact.checks}; outcome {hashlib.sha256(pickle.dumps(outcome)).hexdigest()[:16]}"
    )


def collected(args: list[str]) -> tuple[int, str]:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *args],
        env={**os.environ, "PYTHONHASHSEED": "0"},  # set and dict orders repeat too
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1)), done.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--run", choices=["before", "assess"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = CACHE / f"fleet-instructions-{args.models}.pickle"
    if args.run:
        run(path, args.run == "before")
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt install valgrind)", file=sys.stderr)
        return 2
    if not path.exists():
        started = time.perf_counter()
        build(args.models, path)
        print(f"built {args.models} models in {time.perf_counter() - started:.0f} s: {path}")
    me = [sys.executable, __file__, "--models", str(args.models), "--run"]
    before, _ = collected([*me, "before"])
    total, outcome = collected([*me, "assess"])
    print(f"{outcome}")
    print(f"replace all 20 over {args.models} models: {(total - before) / 1e6:,.0f} M instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
