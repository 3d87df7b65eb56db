"""Bench: fleet impact over 10,000 indexed models and a fleet of 20 consumers.

Builds N index entries from the metadata of real TensorFlow-written fixtures
(each entry a real artifact with its node names, producer version and a few
ops varied, so kinds differ between models as they do between real models),
stores them in Redis (database 6 of --redis-url, emptied) as the upload path
does (verdicts for a 20-consumer fleet, and what every catalog release does
with the model: `worker.fleet.releases`), then times fleet changes side by
side, each from a cold process state (compat caches cleared) and streamed from
Redis the way `tfcompat fleet impact` reads the index:

  add one consumer (a catalog release, default loader: its verdict recorded at
  upload) | add one consumer of another loader (no record: every model is
  checked) | upgrade one consumer | replace all 20 (20 new definitions; those
  that are catalog releases with the default loader take recorded verdicts,
  the others are checked; a renamed consumer would keep its recorded verdicts)

For each: `load` is one pass decoding every entry in full, artifacts included
(nothing checked; a change that checks nothing anew builds no artifacts), `total`
the assessment streamed from Redis as `tfcompat fleet impact` runs it (shared
among as many forked processes as there are CPUs), `1 process` the same in
one process, and the reference, measured in the same run, the same assessment
over models already in memory in one process (the checks alone).
`checks` counts the checks run: one per verdict class of a model, so consumers
that read a model alike share one.
Wall and CPU seconds are both shown (CPU: of every process, the forked ones
included): wall time inflates with the machine's load.

Beyond --distinct (10,000) models, entries are copies of the distinct ones under
other keys: each is decoded and checked on its own, as costly as a distinct
one. --baseline recorded records every fleet consumer as `loads` instead of
checking 20 consumers per model up front, and no release verdicts (a faster
setup: every added or changed consumer is then checked).

Run: .venv/bin/python bench/fleet_impact.py [--models 10000] [--consumers 20]
     [--redis-url redis://127.0.0.1:6379/6] (or TFCOMPAT_BENCH_REDIS_URL)
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rows import row  # noqa: E402

from worker.catalog.catalog import Catalog, load_catalog  # noqa: E402
from worker.compat.memo import forget_all  # noqa: E402
from worker.compat.report import release_verdicts  # noqa: E402
from worker.fleet.digests import consumer_digest  # noqa: E402
from worker.fleet.impact import assess  # noqa: E402
from worker.fleet.releases import release_lookup, release_record, releases_of  # noqa: E402
from worker.formats.read import read_path  # noqa: E402
from worker.model.artifact import Artifact, Graph, MetaGraph, NodeKind  # noqa: E402
from worker.model.consumer import Consumer, Loader  # noqa: E402
from worker.model.index import IndexedModel  # noqa: E402
from worker.pipeline.impact_run import assess_index, default_jobs  # noqa: E402
from worker.sinks.index import BUILT, ModelIndex, gc_paused  # noqa: E402

GOALS_S = {"add one consumer": 1.0, "replace all 20": 5.0}

FIXTURES = [
    ROOT / "tests/fixtures/tf-base/artifacts",
    ROOT / "tests/fixtures/tf-real/artifacts",
]
RELEASES = [
    "1.15",
    "2.4",
    "2.8",
    "2.9",
    "2.10",
    "2.11",
    "2.12",
    "2.13",
    "2.14",
    "2.15",
    "2.16",
    "2.17",
    "2.18",
    "2.19",
    "2.20",
    "2.21",
    "2.12",
    "2.15",
    "2.18",
    "2.21",
]


class NoReports:
    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return []

    def get_json(self, bucket: str, key: str) -> None:
        return None

    def current_version(self, bucket: str, key: str) -> None:
        return None


def base_artifacts() -> list[Artifact]:
    found: list[Artifact] = []
    for root in FIXTURES:
        for saved_model in sorted(root.glob("*/*/saved_model.pb")):
            try:
                found += read_path(str(saved_model.parent))
            except Exception:
                continue
    return [a for a in found if a.meta_graphs]


def vary(artifact: Artifact, rng: random.Random, extra_ops: list[str], n: int) -> Artifact:
    """Another model: renamed nodes, another producer version, one or two other ops."""
    meta = artifact.meta_graphs[0]
    graph = meta.graph
    kinds = [replace(k, example=f"m{n}/{k.example}") for k in graph.kinds]
    for op in rng.sample(extra_ops, rng.randint(0, 2)):
        kinds.append(
            NodeKind(op, {"T": {"type": rng.choice(["DT_FLOAT", "DT_HALF"])}}, 1, 1, f"m{n}/{op}")
        )
    versions = (
        replace(graph.versions, producer=graph.versions.producer + rng.randint(0, 30))
        if graph.versions
        else None
    )
    new_graph = Graph(
        versions,
        graph.node_count,
        tuple(kinds),
        graph.edges,
        graph.functions,
        graph.library_node_count,
    )
    new_meta = MetaGraph(
        meta.tags,
        new_graph,
        meta.tensorflow_version,
        meta.tensorflow_git_version,
        meta.stripped_default_attrs,
        meta.producer_ops,
        meta.signatures,
        meta.has_object_graph,
    )
    return replace(artifact, path=f"s3://models/m{n}", meta_graphs=(new_meta,))


def cold() -> None:
    """A new process's state: every per-process memo of the checks emptied."""
    forget_all()


def new_fleet(catalog: Catalog, fleet: list[Consumer]) -> list[Consumer]:
    """As many consumers as the fleet, each defined unlike any of its consumers (other
    patch releases and loaders), so every model is checked against every one of them:
    a renamed copy would take the recorded verdict without a check."""
    taken = {consumer_digest(c) for c in fleet}
    fresh: list[Consumer] = []
    for release in reversed(catalog.releases):
        for loader in Loader:
            if release.registry_version is None or len(fresh) == len(fleet):
                continue
            candidate = catalog.consumer(release.version, loader, name=f"next-{len(fresh)}")
            if consumer_digest(candidate) not in taken:
                taken.add(consumer_digest(candidate))
                fresh.append(candidate)
    return fresh


def default_redis_url() -> str:
    port = os.environ.get("TFCOMPAT_TEST_REDIS_PORT", "6379")
    return os.environ.get("TFCOMPAT_BENCH_REDIS_URL", f"redis://127.0.0.1:{port}/6")


def cpu_s() -> float:
    """CPU seconds of this process and of its children that have ended."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def clocks() -> tuple[float, float]:
    return time.perf_counter(), cpu_s()


def since(started: tuple[float, float]) -> tuple[float, float]:
    """(wall s, CPU s) since `clocks()` returned `started`."""
    return time.perf_counter() - started[0], cpu_s() - started[1]


def bench_fleet(catalog: Catalog, size: int) -> list[Consumer]:
    """The fleet the index was checked against: releases and loaders in turn."""
    loaders = list(Loader)
    return [
        catalog.consumer(RELEASES[i % len(RELEASES)], loaders[i % 3], name=f"c{i}")
        for i in range(size)
    ]


def varied_ops(catalog: Catalog) -> list[str]:
    """The ops `vary` adds to models."""
    registry = catalog.consumer("2.21").registry
    assert registry is not None
    return sorted(registry.ops)[:400]


def model_of(n: int, artifact: Artifact) -> IndexedModel:
    """Model n, not yet checked (no verdicts)."""
    return IndexedModel(
        "models", f"m{n}/saved_model.pb", None, "models", f"r/m{n}.json", "compatible",
        (artifact,), {}, {},
    )  # fmt: skip


def checked_at_upload(
    batch: list[IndexedModel], fleet: list[Consumer], catalog: Catalog
) -> tuple[list[IndexedModel], int]:
    """The batch as the upload path indexes it: its verdicts for every fleet consumer and
    what every catalog release did with it (`worker.fleet.releases`); and the checks run."""
    digests = {c.name: consumer_digest(c) for c in fleet}
    ranges, lookup = catalog.range_consumers(), release_lookup(catalog)
    baseline = assess(
        [replace(m, verdicts={}, consumer_digests={}) for m in batch], fleet, history=catalog
    )
    checked = [
        replace(
            m.model,
            verdicts=m.verdicts_after,
            consumer_digests=digests,
            status=m.status_after,
            releases=releases_of(
                [
                    {
                        "release_verdicts": release_record(
                            release_verdicts(a, ranges, catalog), lookup
                        )
                    }
                    for a in m.model.artifacts
                ]
            ),
        )
        for m in baseline.models
    ]
    return checked, baseline.checks


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--consumers", type=int, default=20)
    parser.add_argument("--redis-url", default=default_redis_url())
    parser.add_argument("--baseline", choices=["checked", "recorded"], default=None)
    parser.add_argument(
        "--distinct",
        type=int,
        default=10_000,
        help="models built; beyond that, entries are copies of them under other keys "
        "(as costly to decode: every entry is decoded on its own)",
    )
    parser.add_argument(
        "--scenarios",
        default="add,add-other,upgrade,replace",
        help="which of add,add-other,upgrade,replace to time",
    )
    args = parser.parse_args()
    baseline_mode = args.baseline or "checked"
    rng = random.Random(7)
    catalog = load_catalog()
    fleet = bench_fleet(catalog, args.consumers)
    bases = base_artifacts()
    extra_ops = varied_ops(catalog)
    client = redis.Redis.from_url(args.redis_url)
    client.flushdb()
    index = ModelIndex(client, NoReports(), [], "r/")
    digests = {c.name: consumer_digest(c) for c in fleet}

    t = time.perf_counter()
    checks = 0
    batch: list[IndexedModel] = []
    distinct = min(args.models, args.distinct)
    stored: list[IndexedModel] = []
    for n in range(distinct):
        model = model_of(n, vary(rng.choice(bases), rng, extra_ops, n))
        if baseline_mode != "checked":  # every fleet consumer recorded as loading it
            model = replace(model, verdicts={c.name: "loads" for c in fleet},
                            consumer_digests=dict(digests))  # fmt: skip
        batch.append(model)
        if len(batch) == 1000 or n == distinct - 1:
            if baseline_mode == "checked":
                batch, done = checked_at_upload(batch, fleet, catalog)
                checks += done
            index.put_many(batch)
            stored += batch if distinct < args.models else []
            batch = []
    for start in range(distinct, args.models, 1000):  # copies under other keys
        index.put_many(
            replace(stored[n % distinct], key=f"m{n}/saved_model.pb", report_key=f"r/m{n}.json")
            for n in range(start, min(start + 1000, args.models))
        )
    del stored
    client.set(BUILT, "1")
    print(
        f"setup: {args.models} models ({distinct} distinct) from {len(bases)} real "
        "fixtures, baseline "
        f"{baseline_mode} ({checks} checks), stored ({time.perf_counter() - t:.0f} s)",
        file=sys.stderr,
    )

    upgraded = list(fleet)
    upgraded[3] = catalog.consumer("2.21", upgraded[3].loader, name=upgraded[3].name)
    every = {
        "add": ("add one consumer", [*fleet, catalog.consumer("2.16", name="new-edge")]),
        "add-other": (
            "add one consumer of another loader",
            [*fleet, catalog.consumer("2.16", Loader.GRAPH_IMPORT, name="new-import")],
        ),
        "upgrade": ("upgrade one consumer", upgraded),
        "replace": (f"replace all {args.consumers}", new_fleet(catalog, fleet)),
    }
    scenarios = dict(every[s] for s in args.scenarios.split(","))
    jobs = default_jobs()
    header = (
        "scenario", "models", "checks", "load s", "total s", "1 process s", "in memory s",
        "CPU total s",
    )  # fmt: skip
    table = [header]
    for name, consumers in scenarios.items():
        cold()
        started = clocks()
        with gc_paused():
            examined = sum(1 for m in index.models() if m.artifacts is not None)  # in full
        load_wall, _ = since(started)
        cold()
        started = clocks()
        # as `fleet impact` runs it
        impact = assess_index(index, consumers, history=catalog, with_artifacts=False, jobs=jobs)
        total_wall, total_cpu = since(started)
        assert impact.examined == examined
        del impact.models[:]
        cold()
        started = clocks()
        alone = assess_index(index, consumers, history=catalog, with_artifacts=False)
        alone_wall, _ = since(started)
        assert alone.checks == impact.checks
        del alone
        with gc_paused():
            loaded = list(index.models())
            cold()
            started = clocks()
            assess(loaded, consumers, history=catalog)
            memory_wall, memory_cpu = since(started)
        del loaded
        table.append(
            (
                name,
                str(impact.examined),
                str(impact.checks),
                f"{load_wall:.2f}",
                f"{total_wall:.2f}",
                f"{alone_wall:.2f}",
                f"{memory_wall:.2f}",
                f"{total_cpu:.2f}",
            )
        )
        goal = GOALS_S.get(name.replace(str(args.consumers), "20"))
        row(
            f"fleet impact: {name}, {args.models:,} models x {args.consumers} consumers",
            f"{total_wall:.2f} s wall in {jobs} processes ({alone_wall:.2f} s in one; "
            f"{load_wall:.2f} s loading), {total_cpu:.2f} s CPU",
            f"same checks on models in memory, one process: {memory_wall:.2f} s wall, "
            f"{memory_cpu:.2f} s CPU",
            f"<= {goal} s" if goal else "",
            (total_wall <= goal) if goal else None,
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for line in table:
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"consumers: {args.consumers}; peak RSS {peak:.0f} MB; "
        f"Redis memory {client.info('memory')['used_memory_human']}"
    )
    client.flushdb()
    return 0


if __name__ == "__main__":
    sys.exit(main())
