"""Bench: the fleet page's matrix at 10,000 and 100,000 indexed models.

Fills a model index per size (Redis database 5 of --redis-url for the first size,
6 for the next, ..., each emptied) through `ModelIndex.put_many`, the path
workers write by, with N entries and their matrix rows: a fleet of 20 consumers,
each model's status and cells drawn at random (most serve; a tenth fail, with a
finding's code and message), keys spread over 20 teams. Then, for each size,
times one page of 50 rows of the matrix as a reader gets it: the whole GET /ui
answered by the fleet page's Starlette routes in this process (auth, the page's
Redis reads, the template), for several pages a person asks for:

  first page | a page deep in the index (from a cursor) | one consumer's failing
  cells | a status, worst first | a key prefix | a search for one model (a
  rare match near the end of the key order: found from the trigram postings of
  `worker.sinks.matrix`, where a walk stopped at `NAME_BUDGET` fields without it)

The first size also writes its models twice, entries alone and then with their rows,
to show what the rows cost the index's writers.

The reference, measured in the same run against the same index: reading the
same page's 50 index entries (one HMGET, each entry's header decoded), the
least a page drawn from the index must do. Each figure is the median of
--repeat runs, the sizes' requests interleaved (one at each size in turn) so that
load moving on a shared machine weighs on every size alike, and printed as a
ratio to that reference; the last rows compare each page at the largest size
with the same page at the smallest: a page whose time does not grow with the
index stays near 1x.

Run: .venv/bin/python bench/ui_matrix.py [--sizes 10000 100000] [--repeat 15]
     [--redis-url redis://127.0.0.1:6379/5] (or TFCOMPAT_BENCH_REDIS_URL)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pydantic import SecretStr  # noqa: E402
from rows import row  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from worker.catalog.catalog import load_catalog  # noqa: E402
from worker.fleet.fleet import Fleet  # noqa: E402
from worker.model.index import IndexedModel  # noqa: E402
from worker.settings import Settings  # noqa: E402
from worker.sinks import matrix  # noqa: E402
from worker.sinks.index import BUILT, HASH, ModelIndex  # noqa: E402
from worker.ui.routes import Sources, ui_routes  # noqa: E402

CONSUMERS = [f"consumer-{i:02d}" for i in range(20)]
TOKEN = "bench-token"
PAGE = 50
GOAL_GROWTH = 2.0  # a page at the largest size within 2x of the same page at the smallest


class NoStore:
    def versions(self, bucket: str, key: str, limit: int) -> list[tuple[str, bool, str]]:
        return []

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        return None


class Consumers(Fleet):
    """A fleet of names only: the matrix shows no more of a consumer."""

    def names(self) -> list[str]:
        return CONSUMERS


def models(n: int, seed: int = 7) -> list[IndexedModel]:
    rng = random.Random(seed)
    found = []
    for i in range(n):
        cells = []
        verdicts = {}
        for name in CONSUMERS:
            draw = rng.random()
            if draw < 0.08:
                cells.append(
                    (name, "fails", "op.not-registered", f"Op type not registered 'Op{i % 97}'")
                )
                verdicts[name] = "incompatible"
            elif draw < 0.10:
                cells.append((name, "at-risk", "attr.ignored", "an attr this release ignores"))
                verdicts[name] = "at-risk"
            else:
                cells.append((name, "serves", None, None))
                verdicts[name] = "compatible"
        states = set(verdicts.values())
        status = (
            "incompatible"
            if "incompatible" in states
            else "at-risk"
            if "at-risk" in states
            else "compatible"
        )
        key = f"team{i % 20:02d}/model-{i:07d}/saved_model.pb"
        found.append(
            IndexedModel(
                "models",
                key,
                f"v{i}",
                "models",
                f"tfcompat-reports/models/{key}/v{i}.json",
                status,
                (),
                verdicts,
                {},
                cells=tuple(cells),
            )
        )
    return found


def fill(client: Any, n: int, rows: bool = True) -> tuple[ModelIndex, float]:
    """The index of `n` models, and the seconds `put_many` took (without `rows`: the
    entries alone, as the index wrote them before the matrix rows existed)."""
    client.flushdb()
    index = ModelIndex(client, NoStore(), [], "tfcompat-reports/")  # type: ignore[arg-type]
    client.set(BUILT, "1")
    client.set(matrix.BUILT, "1")
    made = models(n)
    write_rows = matrix.write_rows
    if not rows:
        matrix.write_rows = lambda pipe, rows, previous: None  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        index.put_many(made)
        took = time.perf_counter() - start
    finally:
        matrix.write_rows = write_rows
    what = "entries and rows" if rows else "entries alone"
    print(f"  wrote {n:,} {what} in {took:.1f}s", flush=True)
    return index, took


def pages(index: ModelIndex, n: int) -> dict[str, str]:
    """The page URLs measured: name -> path and query."""
    middle = f"models/team{(n // 2) % 20:02d}/model-{n // 2:07d}/saved_model.pb"
    rare = f"model-{n - 3:07d}/"  # near the end of the key order
    return {
        "first page": "/ui",
        "deep page": f"/ui?after=0:{middle}",
        "one consumer's failing cells": "/ui?consumer=consumer-07&cell=fails",
        "worst first": "/ui?sort=status",
        "key prefix": "/ui?prefix=models/team03/",
        "search, rare match": f"/ui?q={rare}",
    }


def entries_of(client: Any, path: str) -> list[str]:
    """The fields of the rows the page shows, which the reference reads; for a page that
    shows none (a rare match not met within the read budget), the first page's 50."""
    from starlette.requests import Request

    from worker.ui.routes import _query_from

    query = path.split("?", 1)[1] if "?" in path else ""
    scope = {"type": "http", "query_string": query.encode(), "headers": []}
    shown = matrix.Matrix(client).page(_query_from(Request(scope))).rows
    if not shown:
        shown = matrix.Matrix(client).page(matrix.Query(limit=PAGE)).rows
    return [r.field for r in shown]


def database(url: str, offset: int) -> Any:
    """A client of the database `offset` places after the one `url` names."""
    client = redis.Redis.from_url(url)
    db = int(client.connection_pool.connection_kwargs.get("db", 0)) + offset
    return redis.Redis.from_url(url, db=db)


@dataclass
class Size:
    """One index size, filled into its own database, with the page client over it."""

    client: Any
    index: ModelIndex
    http: TestClient
    paths: dict[str, str]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("TFCOMPAT_BENCH_REDIS_URL", "redis://127.0.0.1:6379/5"),
    )
    args = parser.parse_args()
    catalog = load_catalog()
    settings = Settings(ui_enabled=True, ui_token=SecretStr(TOKEN), broker_url=args.redis_url)
    sizes: dict[int, Size] = {}
    try:
        for offset, n in enumerate(args.sizes):
            client = database(args.redis_url, offset)
            print(f"\n{n:,} indexed models", flush=True)
            if n == min(args.sizes):  # what writing the rows costs the upload path
                _, alone = fill(client, n, rows=False)
                index, both = fill(client, n)
                row(
                    f"index writes, {n:,} models and 20 consumers, with matrix rows",
                    f"{both:.1f} s = {both / alone:.1f}x the entries alone",
                    f"{alone:.1f} s (put_many without rows)",
                )
            else:
                index, _ = fill(client, n)
            sources = Sources(
                settings=settings,
                index=index,
                store=NoStore(),
                catalog=catalog,
                fleet=lambda: Consumers(()),
            )
            http = TestClient(
                Starlette(routes=ui_routes(sources)),
                headers={"Authorization": f"Bearer {TOKEN}"},
            )
            sizes[n] = Size(client, index, http, pages(index, n))
        results = measure(sizes, args.repeat)
        small, large = min(results), max(results)
        if small != large:
            for name, large_ms in results[large].items():
                growth = large_ms / results[small][name]
                row(
                    f"matrix page {large:,} vs {small:,} models: {name}",
                    f"{growth:.2f}x ({large_ms:.1f} vs {results[small][name]:.1f} ms)",
                    f"the same page at {small:,} models",
                    f"<= {GOAL_GROWTH:g}x",
                    growth <= GOAL_GROWTH,
                )
    finally:
        for size in sizes.values():
            size.client.flushdb()
    return 0


def measure(sizes: dict[int, Size], repeat: int) -> dict[int, dict[str, float]]:
    """Each page's median time at each size, the sizes' requests interleaved (one at
    each size in turn, `repeat` times) so that load moving on a shared machine weighs
    on every size alike; printed beside its reference."""
    results: dict[int, dict[str, float]] = {n: {} for n in sizes}
    names = list(next(iter(sizes.values())).paths)
    for name in names:
        works: dict[int, Callable[[], object]] = {}
        references: dict[int, Callable[[], object]] = {}
        fields_of: dict[int, list[str]] = {}
        shown: dict[int, int] = {}
        for n, size in sizes.items():
            path = size.paths[name]
            answer = size.http.get(path)
            assert answer.status_code == 200, (path, answer.status_code)
            shown[n] = answer.text.count('<th scope="row">')
            fields_of[n] = entries_of(size.client, path)
            works[n] = lambda size=size, path=path: size.http.get(path)
            decoder = size.index.decoder()

            def reference(
                fields: list[str] = fields_of[n],
                decoder: Any = decoder,
                client: Any = size.client,
            ) -> None:
                for blob in client.hmget(HASH, fields):
                    decoder.entry(blob)

            references[n] = reference
        page_ms = interleaved(works, repeat)
        ref_ms = interleaved(references, repeat)
        for n in sizes:
            results[n][name] = page_ms[n]
            count = len(fields_of[n])
            print(
                f"  {n:,} models: {name:30s} {page_ms[n]:7.1f} ms  ({shown[n]} rows; "
                f"reading those {count} entries: {ref_ms[n]:.2f} ms)",
                flush=True,
            )
            row(
                f"matrix page, {n:,} models: {name}",
                f"{page_ms[n]:.1f} ms = {page_ms[n] / max(ref_ms[n], 1e-3):.0f}x reading its "
                f"{count} entries",
                f"{ref_ms[n]:.2f} ms (HMGET + header decode)",
            )
    return results


def interleaved(works: dict[int, Callable[[], object]], repeat: int) -> dict[int, float]:
    """The median milliseconds of each work, run in turn `repeat` times."""
    times: dict[int, list[float]] = {n: [] for n in works}
    for _ in range(repeat):
        for n, work in works.items():
            start = time.perf_counter()
            work()
            times[n].append((time.perf_counter() - start) * 1000)
    return {n: statistics.median(found) for n, found in times.items()}


if __name__ == "__main__":
    sys.exit(main())
