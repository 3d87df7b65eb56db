"""Bench: the planning step of a fleet change alone, at 100,000 models x 20 consumers.

What `tfcompat.fleet_changed` does before any unit runs: the index's listing
(`pipeline.fanout.index_fields`), the units cut from it (`plan_units`, chunks of
TFCOMPAT_FLEET_CHUNK_SIZE) and the plan stored with the run in Redis
(`FleetRuns.start`). Beside it, what the planning task did before it left that to the
chunks: finding which models change verdict under the new fleet, in its one process
(`pipeline.impact_run.assess_index`, as `tfcompat fleet impact` works it out).

The index is built as bench/fleet_impact.py builds it: --distinct models (default
1,000) from the metadata of real TensorFlow-written fixtures, varied, checked at upload
against a fleet of --consumers (default 20: releases and loaders in turn) with every
catalog release's verdict recorded; beyond them, entries are copies under other keys
(each decoded and checked on its own, as costly as a distinct one). The change adds one
consumer of another loader (TF 2.16, graph import): no verdict of it is recorded, so
every model is checked against it.

The planning runs first in a fresh process (`--plan-only`), so its peak RSS (VmHWM) is
the planning's, not the setup's; the RSS after imports and the catalog is printed too.
Reference, in that same process and run: one pass over the index decoding every entry
in full (artifacts included, nothing checked), as bench/fleet_impact.py's `load`.

Run: .venv/bin/python bench/fleet_fanout_plan.py [--models 100000] [--consumers 20]
     [--distinct 1000] [--chunk 200] [--redis-url URL] (default: a throwaway redis-server)
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet_impact import (  # noqa: E402
    NoReports,
    base_artifacts,
    bench_fleet,
    checked_at_upload,
    model_of,
    varied_ops,
    vary,
)
from local_s3 import redis_server  # noqa: E402
from rows import row  # noqa: E402

from worker.catalog.catalog import load_catalog  # noqa: E402
from worker.model.consumer import Loader  # noqa: E402
from worker.model.index import IndexedModel  # noqa: E402
from worker.sinks.index import BUILT, ModelIndex, gc_paused  # noqa: E402


def hwm_mb() -> float:
    """This process's peak resident set (VmHWM), MB."""
    text = Path("/proc/self/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(match.group(1)) / 1024 if match else float("nan")


def build_index(url: str, models: int, distinct: int, consumers: int) -> None:
    catalog = load_catalog()
    fleet = bench_fleet(catalog, consumers)
    bases, extra = base_artifacts(), varied_ops(catalog)
    rng = random.Random(7)
    client = redis.Redis.from_url(url)
    client.flushdb()
    index = ModelIndex(client, NoReports(), [], "r/")
    stored: list[IndexedModel] = []
    distinct = min(models, distinct)
    for start in range(0, distinct, 500):
        batch = [
            model_of(n, vary(rng.choice(bases), rng, extra, n))
            for n in range(start, min(start + 500, distinct))
        ]
        batch, _ = checked_at_upload(batch, fleet, catalog)
        index.put_many(batch)
        stored += batch
    for start in range(distinct, models, 1000):
        index.put_many(
            replace(stored[n % distinct], key=f"m{n}/saved_model.pb", report_key=f"r/m{n}.json")
            for n in range(start, min(start + 1000, models))
        )
    client.set(BUILT, "1")


def plan_only(url: str, consumers: int, chunk: int) -> dict[str, float]:
    """Run in a fresh process: the reference pass, then the planning step, timed."""
    from worker.compat.memo import forget_all
    from worker.compat.policy import Policy
    from worker.fleet.checker import Checker
    from worker.pipeline.fanout import digest_of, index_fields, plan_units
    from worker.pipeline.impact_run import assess_index
    from worker.sinks.fleet_runs import FleetRuns

    catalog = load_catalog()
    fleet = bench_fleet(catalog, consumers)
    after = [*fleet, catalog.consumer("2.16", Loader.GRAPH_IMPORT, name="new-import")]
    checker = Checker(tuple(after), Policy(), catalog, "bench")
    client = redis.Redis.from_url(url)
    index = ModelIndex(client, NoReports(), [], "r/")
    base_rss = hwm_mb()
    started = time.perf_counter()
    fields = index_fields(index)
    units = plan_units(fields, [], chunk)
    FleetRuns(client).start(digest_of(checker), "bench.yaml", units)
    planned = time.perf_counter() - started
    plan_rss = hwm_mb()
    started = time.perf_counter()
    with gc_paused():
        loaded = sum(1 for m in index.models() if m.artifacts is not None)
    reference = time.perf_counter() - started
    forget_all()
    started = time.perf_counter()
    impact = assess_index(
        index, checker.consumers, history=catalog, policy=checker.policy, with_artifacts=False
    )
    assessed = time.perf_counter() - started
    return {
        "models": loaded,
        "planned": len(fields),
        "changed": len(impact.models),
        "plan_rss_mb": plan_rss,
        "units": len(units),
        "reference_s": reference,
        "assess_s": assessed,
        "plan_s": planned,
        "base_rss_mb": base_rss,
        "peak_rss_mb": hwm_mb(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", type=int, default=100_000)
    parser.add_argument("--consumers", type=int, default=20)
    parser.add_argument("--distinct", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=200, help="TFCOMPAT_FLEET_CHUNK_SIZE")
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--plan-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plan_only:
        print(json.dumps(plan_only(args.redis_url, args.consumers, args.chunk)))
        return 0
    with TemporaryDirectory() as tmp, redis_server() as server:
        url = args.redis_url or f"{server}/0"
        del tmp
        started = time.perf_counter()
        build_index(url, args.models, args.distinct, args.consumers)
        print(
            f"setup: {args.models} models ({min(args.models, args.distinct)} distinct), "
            f"{args.consumers} consumers, indexed in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--plan-only",
                "--redis-url",
                url,
                "--consumers",
                str(args.consumers),
                "--chunk",
                str(args.chunk),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        found = json.loads(child.stdout.strip().splitlines()[-1])
        memory = redis.Redis.from_url(url).info("memory")["used_memory_human"]
    ratio = found["plan_s"] / found["reference_s"]
    before = found["assess_s"] / found["reference_s"]
    print(
        f"planning: {found['plan_s']:.2f} s for {found['models']} models, "
        f"{found['planned']} planned in {found['units']} units; reference (one full "
        f"decoding pass): {found['reference_s']:.1f} s; ratio {ratio:.3f}\n"
        f"finding the {found['changed']} changed models in one process (what planning did "
        f"before the chunks decided it): {found['assess_s']:.1f} s, ratio {before:.2f}\n"
        f"peak RSS of the planning process {found['plan_rss_mb']:.0f} MB after planning, "
        f"{found['peak_rss_mb']:.0f} MB after finding the changed models "
        f"({found['base_rss_mb']:.0f} MB after imports and the catalog); Redis {memory}"
    )
    row(
        f"fleet change planning, {args.models:,} models x {args.consumers} consumers "
        "(+1 of another loader)",
        f"{found['plan_s']:.2f} s, {ratio:.3f} x reference; {found['planned']:,} planned "
        f"in {found['units']} units; peak RSS {found['plan_rss_mb']:.0f} MB",
        f"one pass decoding every entry, same process: {found['reference_s']:.1f} s",
    )
    row(
        f"finding the changed models in one process, {args.models:,} models (planning "
        "before the chunks decided it)",
        f"{found['assess_s']:.1f} s, {before:.2f} x reference; {found['changed']:,} change",
        f"one pass decoding every entry, same process: {found['reference_s']:.1f} s",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
