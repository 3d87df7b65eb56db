"""Bench: `tfcompat fleet plan` over an index of N models and a fleet of 20 consumers,
as a ratio to `tfcompat fleet impact` for one change on the same index.

The index is built as bench/fleet_impact.py builds it (real TensorFlow-written
fixtures varied per model, each entry stored in Redis database 6 of --redis-url
with its fleet verdicts and what every catalog release did with it at upload);
beyond --distinct models, entries are copies under other keys (decoded on their
own, as costly as distinct ones). Two fleets, each indexed anew:

  default loader: 20 consumers, each a catalog release read by saved-model-v1
    (TF Serving's loader): every candidate's verdict is the one recorded at upload,
    a lookup per group of models with equal records (the <= 2 s goal at 100,000);
  mixed loaders: bench/fleet_impact.py's fleet, a third of it per loader: the
    saved-model-v2 and graph-import candidates have no record and are checked per
    model, once per verdict class.

For each: `impact` is `fleet impact` upgrading one consumer (one process, streamed
from Redis), `plan` the plan of every consumer at every candidate release (one
process, streamed likewise), each from a cold process state; then both again over
the models already read (in memory: the computation alone, where the 2 s goal
applies). The row's figures are plan / impact (ratios: the machine is shared) with
the wall times, and the in-memory CPU seconds of each (the process's own CPU time:
on a shared machine, wall time counts the other processes' turns too; the goal is
judged on it).

Run: .venv/bin/python bench/fleet_plan.py [--models 10000] [--distinct 2000]
     [--fleets default,mixed] [--redis-url redis://127.0.0.1:6379/6]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet_impact import (  # noqa: E402
    RELEASES,
    NoReports,
    base_artifacts,
    bench_fleet,
    checked_at_upload,
    cold,
    default_redis_url,
    model_of,
    varied_ops,
    vary,
)
from rows import row  # noqa: E402

from worker.catalog.catalog import Catalog, load_catalog  # noqa: E402
from worker.fleet.fleet import Fleet  # noqa: E402
from worker.fleet.impact import assess  # noqa: E402
from worker.fleet.plan import build_plan  # noqa: E402
from worker.model.consumer import Consumer  # noqa: E402
from worker.model.index import IndexedModel  # noqa: E402
from worker.pipeline.impact_run import assess_index  # noqa: E402
from worker.sinks.index import BUILT, ModelIndex, gc_paused  # noqa: E402

GOAL_S = 2.0  # default-loader fleet, 100,000 models x 20 consumers


def default_fleet(catalog: Catalog, size: int) -> list[Consumer]:
    return [catalog.consumer(RELEASES[i % len(RELEASES)], name=f"c{i}") for i in range(size)]


def build_index(
    index: ModelIndex, fleet: list[Consumer], catalog: Catalog, models: int, distinct: int
) -> None:
    rng = random.Random(7)
    bases, extra_ops = base_artifacts(), varied_ops(catalog)
    index.redis_client.flushdb()
    stored: list[IndexedModel] = []
    batch: list[IndexedModel] = []
    distinct = min(models, distinct)
    for n in range(distinct):
        batch.append(model_of(n, vary(rng.choice(bases), rng, extra_ops, n)))
        if len(batch) == 1000 or n == distinct - 1:
            batch, _ = checked_at_upload(batch, fleet, catalog)
            index.put_many(batch)
            stored += batch
            batch = []
    for start in range(distinct, models, 1000):
        index.put_many(
            replace(stored[n % distinct], key=f"m{n}/saved_model.pb", report_key=f"r/m{n}.json")
            for n in range(start, min(start + 1000, models))
        )
    index.redis_client.set(BUILT, "1")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--distinct", type=int, default=2_000)
    parser.add_argument("--consumers", type=int, default=20)
    parser.add_argument("--fleets", default="default,mixed")
    parser.add_argument("--redis-url", default=default_redis_url())
    args = parser.parse_args()
    catalog = load_catalog()
    client = redis.Redis.from_url(args.redis_url)
    index = ModelIndex(client, NoReports(), [], "r/")
    fleets = {
        "default": ("default loader", default_fleet(catalog, args.consumers)),
        "mixed": ("mixed loaders", bench_fleet(catalog, args.consumers)),
    }
    for key in args.fleets.split(","):
        label, consumers = fleets[key]
        t = time.perf_counter()
        build_index(index, consumers, catalog, args.models, args.distinct)
        print(f"setup ({label}): {args.models} models, {time.perf_counter() - t:.0f} s",
              file=sys.stderr)  # fmt: skip
        upgraded = list(consumers)
        upgraded[3] = catalog.consumer("2.21", upgraded[3].loader, name=upgraded[3].name)
        cold()
        started = time.perf_counter()
        impact = assess_index(index, upgraded, history=catalog, with_artifacts=False)
        impact_s = time.perf_counter() - started
        cold()
        started = time.perf_counter()
        with gc_paused():
            plan = build_plan(index.models(), Fleet(tuple(consumers)), catalog)
        plan_s = time.perf_counter() - started
        # the same two over models already read from Redis (the computation alone)
        with gc_paused():
            loaded = list(index.models())
            cold()
            started, cpu = time.perf_counter(), time.process_time()
            assess(loaded, upgraded, history=catalog, with_artifacts=False)
            impact_memory_s = time.perf_counter() - started
            impact_cpu_s = time.process_time() - cpu
            cold()
            started, cpu = time.perf_counter(), time.process_time()
            build_plan(loaded, Fleet(tuple(consumers)), catalog)
            plan_memory_s = time.perf_counter() - started
            plan_cpu_s = time.process_time() - cpu
        del loaded
        slots = sum(len(c.candidates) for c in plan.consumers)
        print(
            f"{label}: in memory: impact {impact_memory_s:.2f} s ({impact_cpu_s:.2f} s CPU), "
            f"plan {plan_memory_s:.2f} s ({plan_cpu_s:.2f} s CPU); "
            f"from Redis: impact {impact_s:.2f} s ({impact.checks} checks); plan {plan_s:.2f} s "
            f"({slots} candidates, {plan.groups} record groups, {len(plan.signatures)} distinct "
            f"outcomes, {plan.checks} checks, {plan.recorded} recorded verdicts)"
        )
        goal = key == "default" and args.models >= 100_000 and args.consumers == 20
        row(
            f"fleet plan: {label}, {args.models:,} models x {args.consumers} consumers, "
            f"{slots} candidates",
            f"{plan_s / impact_s:.2f}x fleet impact from Redis ({plan_s:.2f} s vs "
            f"{impact_s:.2f} s); {plan_memory_s / impact_memory_s:.2f}x in memory "
            f"({plan_memory_s:.2f} s vs {impact_memory_s:.2f} s; CPU {plan_cpu_s:.2f} s vs "
            f"{impact_cpu_s:.2f} s)",
            "fleet impact upgrading one consumer, one process, same index",
            f"<= {GOAL_S} s CPU in memory" if goal else "",
            (plan_cpu_s <= GOAL_S) if goal else None,
        )
    client.flushdb()
    return 0


if __name__ == "__main__":
    sys.exit(main())
