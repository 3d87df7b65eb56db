"""Bench: fleet impact over 10,000 indexed models and a fleet of 20 consumers.

Builds N index entries from the metadata of real TensorFlow-written fixtures
(each entry a real artifact with its node names, producer version and a few
ops varied, so kinds differ between models as they do between real models),
stores them in Redis (database 6, emptied), records verdicts for a 20-consumer
fleet, then times fleet changes side by side, each from a cold process state
(index read back from Redis, caches cleared):

  add one consumer | upgrade one consumer | replace all 20 (full re-check)

Run: .venv/bin/python bench/fleet_impact.py [--models 10000] [--consumers 20]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from worker.catalog.catalog import load_catalog  # noqa: E402
from worker.compat import edges as edges_module  # noqa: E402
from worker.compat import nodes as nodes_module  # noqa: E402
from worker.fleet.impact import assess, consumer_digest
from worker.formats.read import read_path  # noqa: E402
from worker.model.artifact import Artifact, Graph, MetaGraph, NodeKind
from worker.model.consumer import Loader
from worker.model.index import IndexedModel
from worker.sinks.index import ModelIndex  # noqa: E402

FIXTURES = [
    ROOT.parent / "shared/fixtures/tf-real/artifacts",
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
    nodes_module._CLEAN.clear()
    edges_module._TYPES.clear()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--consumers", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(7)
    catalog = load_catalog()
    loaders = list(Loader)
    fleet = [
        catalog.consumer(RELEASES[i % len(RELEASES)], loaders[i % 3], name=f"c{i}")
        for i in range(args.consumers)
    ]
    bases = base_artifacts()
    registry = catalog.consumer("2.21").registry
    assert registry is not None
    extra_ops = sorted(registry.ops)[:400]
    client = redis.Redis(db=6)
    client.flushdb()
    index = ModelIndex(client, NoReports(), [], "r/")

    t = time.perf_counter()
    models = []
    for n in range(args.models):
        artifact = vary(rng.choice(bases), rng, extra_ops, n)
        models.append(
            IndexedModel(
                "models",
                f"m{n}/saved_model.pb",
                None,
                "models",
                f"r/m{n}.json",
                "compatible",
                (artifact,),
                {},
                {},
            )
        )
    print(
        f"setup: {args.models} models from {len(bases)} real fixtures "
        f"({time.perf_counter() - t:.1f}s)",
        file=sys.stderr,
    )
    t = time.perf_counter()
    baseline = assess(models, fleet, history=catalog)
    digests = {c.name: consumer_digest(c) for c in fleet}
    for m in baseline.models:
        index.put(
            replace(
                m.model, verdicts=m.verdicts_after, consumer_digests=digests, status=m.status_after
            )
        )
    client.set("tfcompat:index:v1:built", "1")
    print(
        f"baseline: {baseline.checks} checks, index stored ({time.perf_counter() - t:.1f}s)",
        file=sys.stderr,
    )

    upgraded = list(fleet)
    upgraded[3] = catalog.consumer("2.21", upgraded[3].loader, name=upgraded[3].name)
    scenarios = {
        "add one consumer": fleet + [catalog.consumer("2.16", name="new-edge")],
        "upgrade one consumer": upgraded,
        "replace all 20": [replace(c, name=f"{c.name}-next") for c in fleet],
    }
    rows = [("scenario", "models", "checks", "load s", "check s", "total s", "models/s")]
    for name, consumers in scenarios.items():
        cold()
        t0 = time.perf_counter()
        loaded = list(index.models())
        t1 = time.perf_counter()
        impact = assess(loaded, consumers, history=catalog)
        t2 = time.perf_counter()
        rows.append(
            (
                name,
                str(impact.examined),
                str(impact.checks),
                f"{t1 - t0:.2f}",
                f"{t2 - t1:.2f}",
                f"{t2 - t0:.2f}",
                f"{impact.examined / (t2 - t0):.0f}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
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
