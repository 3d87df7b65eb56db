"""Bench: a fleet change fanned out over 1, 2 and 4 worker processes.

Sets up N indexed models (default 300, a few minutes in all; `--models 10000` for a
larger run) made from the metadata of real TensorFlow-written fixtures (varied as
bench/fleet_impact.py varies them), each with an object in moto's S3 server to tag,
checked at upload against fleet BEFORE (three releases). The change adds a consumer of
another release (fleet AFTER): every model's verdicts change, so every model is
re-checked from its metadata, its report written and its tags put (the catalog
releases' verdicts are taken from each model's record, the fleet's consumers judged).

For each worker size (1, 2, 4 processes: `tfcompat worker --concurrency K`, a real
Celery worker on a throwaway Redis) the index is restored to BEFORE, the worker starts
on AFTER, claims the change, plans it and fans it out; the time is from the worker's
"ready" line to the run's digest recorded as applied (`tfcompat fleet status`). Peak
RSS is each process's VmHWM (the main process and every pool process).

Reference, measured in the same run: the same change applied as one task applied it
before the fan-out (`pipeline.reevaluate.reevaluate`, one process, in this process).
Each worker time is printed beside it as a ratio; speed-up per worker is the 1-process
fan-out time over the K-process time, divided by K.

Where a model's time goes (`split`): the first --split models (default 200) re-checked
chunk by chunk in this process (`pipeline.fanout.retag_chunk`, what a chunk task runs),
once with an in-memory object store (our own code alone: the check, the report, the
index entry) and once with moto's S3 server (plus the report PUT and the tag GET and
PUT, moto's own CPU on the same cores included); per model, and the share the S3
requests take.

At scale (`--models 100000 --consumers 20 --distinct 1000 --no-reference`): the fleet
BEFORE is --consumers consumers (releases and loaders in turn, as bench/fleet_impact.py
makes them) and AFTER adds one of another release; beyond --distinct models, entries
are copies under other keys (each re-checked on its own, as costly as a distinct one),
so setting up 100,000 models does not check 100,000 at upload; `--no-reference` skips
the one-task reference (a one-process pass as long as the 1-process fan-out);
`--sizes 1,2,4` picks the worker sizes.

Run: .venv/bin/python bench/fleet_fanout.py [--models 300] [--chunk 25] [--split 200] [--s3 s3rver]
     [--consumers N] [--distinct N] [--sizes 1,2,4] [--no-reference]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet_impact import (  # noqa: E402
    RELEASES,
    base_artifacts,
    checked_at_upload,
    varied_ops,
    vary,
)
from local_s3 import client, redis_server, s3_server, table  # noqa: E402
from rows import row  # noqa: E402

from worker.catalog.catalog import load_catalog  # noqa: E402
from worker.fleet.checker import Checker  # noqa: E402
from worker.fleet.fleet import load_fleet  # noqa: E402
from worker.model.events import ObjectEvent  # noqa: E402
from worker.model.index import IndexedModel  # noqa: E402
from worker.pipeline.fanout import retag_chunk  # noqa: E402
from worker.pipeline.process import ReportLocation  # noqa: E402
from worker.pipeline.reevaluate import reevaluate  # noqa: E402
from worker.sinks import matrix  # noqa: E402
from worker.sinks.fleet_runs import FleetRuns  # noqa: E402
from worker.sinks.index import BUILT, FLEET_APPLIED, ModelIndex  # noqa: E402
from worker.sinks.memory import MemoryObjectStore  # noqa: E402
from worker.sinks.ports import ObjectStore  # noqa: E402

BEFORE = (
    "consumers:\n"
    "  - {name: serving, tensorflow: '2.15'}\n"
    "  - {name: batch, tensorflow: '2.12'}\n"
    "  - {name: canary, tensorflow: '2.21'}\n"
)
AFTER = BEFORE + "  - {name: edge, tensorflow: '2.8'}\n"


def checker_of(path: Path, catalog: object) -> Checker:
    fleet = load_fleet(path, catalog)  # type: ignore[arg-type]
    return Checker(fleet.consumers, fleet.policy, catalog, fleet.source)  # type: ignore[arg-type]


def fleet_yaml(consumers: int) -> tuple[str, str]:
    """(BEFORE, AFTER): the default three consumers and a fourth, or `consumers` of
    releases and loaders in turn and one more of another release."""
    if consumers <= 0:
        return BEFORE, AFTER
    loaders = ("saved-model-v1", "saved-model-v2", "graph-import")
    lines = [
        f"  - {{name: c{i}, tensorflow: '{RELEASES[i % len(RELEASES)]}', "
        f"loader: {loaders[i % 3]}}}\n"
        for i in range(consumers)
    ]
    before = "consumers:\n" + "".join(lines)
    return before, before + "  - {name: edge, tensorflow: '2.16', loader: graph-import}\n"


def indexed_models(n: int, before: Checker, distinct: int | None = None) -> list[IndexedModel]:
    """n models checked at upload under `before`; beyond `distinct`, copies of those
    under other keys."""
    catalog = before.catalog
    bases = base_artifacts()
    ops = varied_ops(catalog)
    rng = random.Random(7)
    models = []
    for i in range(min(n, distinct or n)):
        artifact = vary(bases[i % len(bases)], rng, ops, i)
        models.append(
            IndexedModel(
                "models",
                f"m{i}/saved_model.pb",
                None,
                "reports",
                f"r/m{i}.json",
                "compatible",
                (artifact,),
                {},
                {},
            )
        )
    done: list[IndexedModel] = []
    for start in range(0, len(models), 500):
        checked, _ = checked_at_upload(models[start : start + 500], list(before.consumers), catalog)
        done += checked
    base = len(done)
    done += [
        replace(done[i % base], key=f"m{i}/saved_model.pb", report_key=f"r/m{i}.json")
        for i in range(base, n)
    ]
    return [replace(m, report_bucket="reports") for m in done]


def restore(
    client_: redis.Redis, index: ModelIndex, models: list[IndexedModel], digest: str
) -> None:
    """The index as it was under BEFORE, built, with BEFORE applied."""
    client_.flushdb()
    index.put_many(models)
    client_.set(BUILT, "1")
    client_.set(matrix.BUILT, "1")
    client_.set(FLEET_APPLIED, digest)


def reset_store(s3: Any, n: int, location: ReportLocation) -> None:
    """The object store as before any run: no report, no tags on the n objects (a run that
    found its tags already written would skip their PUT and look faster). The reports are
    deleted by their keys, not listed: s3rver failed to list 100,000 of them."""
    keys = [
        location.of(ObjectEvent("models", f"m{i}/saved_model.pb", "ObjectCreated:Put"))[1]
        for i in range(n)
    ]
    batches = [keys[start : start + 200] for start in range(0, n, 200)]
    with ThreadPoolExecutor(2) as pool:
        list(
            pool.map(
                lambda batch: s3.delete_objects(
                    Bucket="reports",
                    Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
                ),
                batches,
            )
        )
    left = s3.list_objects_v2(Bucket="reports", MaxKeys=1).get("KeyCount", 0)
    assert left == 0, "reports left after the reset: their keys are not where the bench looked"
    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda i: s3.put_object_tagging(
                    Bucket="models", Key=f"m{i}/saved_model.pb", Tagging={"TagSet": []}
                ),
                range(n),
            )
        )


def children(pid: int) -> list[int]:
    """The processes `pid` started (a worker's pool processes)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def status_mb(pids: list[int], field: str) -> list[float]:
    """A /proc/<pid>/status memory figure (VmHWM, VmRSS) of each of `pids`, in MB."""
    found = []
    for each in pids:
        try:
            text = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        match = re.search(rf"{field}:\s+(\d+) kB", text)
        if match:
            found.append(int(match.group(1)) / 1024)
    return found


def peak_rss_mb(pid: int) -> list[float]:
    """VmHWM (MB) of `pid` and of each of its children."""
    return status_mb([pid, *children(pid)], "VmHWM")


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds of `pids` so far (processes gone since count 0)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def listening_pid(endpoint: str) -> int:
    """The process serving `endpoint` (its command line names the port)."""
    port = endpoint.rsplit(":", 1)[1]
    found = subprocess.run(
        ["pgrep", "-f", "--", f"-p {port}( |$)"], capture_output=True, text=True, check=True
    ).stdout.split()
    return int(found[0])


def run_worker(
    concurrency: int,
    env: dict[str, str],
    runs: FleetRuns,
    after: str,
    log: Path,
    server: int,
) -> tuple[float, list[float], float, float]:
    """Seconds from ready to applied, peak RSS per process, and the CPU seconds the
    worker (main and pool processes) and the S3 server spent in that time."""
    args = [sys.executable, "-m", "worker.cli", "worker", "--concurrency", str(concurrency)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        while not re.search(r"@\S+ ready\.", log.read_text()):
            if proc.poll() is not None:
                raise SystemExit(f"the worker exited: see {log}")
            time.sleep(0.05)
        started = time.perf_counter()
        worker_cpu = cpu_seconds([proc.pid, *children(proc.pid)])
        server_cpu = cpu_seconds([server])
        while True:
            progress = runs.progress()
            if progress.digest == after and progress.state in ("applied", "failed"):
                break
            time.sleep(0.1)
        elapsed = time.perf_counter() - started
        if progress.state != "applied":
            raise SystemExit(f"the change ended {progress.state}: see {log}")
        worker_cpu = cpu_seconds([proc.pid, *children(proc.pid)]) - worker_cpu
        server_cpu = cpu_seconds([server]) - server_cpu
        return elapsed, peak_rss_mb(proc.pid), worker_cpu, server_cpu
    finally:
        proc.terminate()
        proc.wait(60)


def per_model_ms(
    fields: list[str],
    index: ModelIndex,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    chunk: int,
) -> float:
    """Milliseconds per model of re-checking `fields` chunk by chunk in this process."""
    started = time.perf_counter()
    for start in range(0, len(fields), chunk):
        result = retag_chunk(fields[start : start + chunk], index, store, checker, location)
        assert result.rewritten == len(fields[start : start + chunk]), result
    return (time.perf_counter() - started) * 1000 / max(1, len(fields))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--chunk", type=int, default=25, help="TFCOMPAT_FLEET_CHUNK_SIZE")
    parser.add_argument("--split", type=int, default=200, help="models in the split")
    parser.add_argument(
        "--consumers", type=int, default=0, help="fleet size (default: the three-consumer fleet)"
    )
    parser.add_argument("--distinct", type=int, default=None, help="distinct models (default: all)")
    parser.add_argument("--sizes", default="1,2,4", help="worker processes, comma-separated")
    parser.add_argument("--no-reference", action="store_true", help="skip the one-task reference")
    parser.add_argument(
        "--s3",
        choices=("moto", "s3rver"),
        default="moto",
        help="the local S3 server (s3rver: objects on disk, needs npm; for 100,000 models)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with TemporaryDirectory() as tmp, TemporaryDirectory() as data, redis_server() as redis_url:
        return fan_out(args, sizes, Path(tmp), Path(data), redis_url)


def fan_out(
    args: argparse.Namespace, sizes: list[int], root: Path, data: Path, redis_url: str
) -> int:
    before_yaml, after_yaml = fleet_yaml(args.consumers)
    catalog = load_catalog()
    server = "moto's S3 server" if args.s3 == "moto" else "s3rver (S3 on disk)"
    with s3_server(args.s3, data) as (endpoint, aws_env):
        (root / "before.yaml").write_text(before_yaml)
        (root / "after.yaml").write_text(after_yaml)
        before = checker_of(root / "before.yaml", catalog)
        after = checker_of(root / "after.yaml", catalog)
        s3 = client(endpoint, aws_env)
        s3.create_bucket(Bucket="models")
        s3.create_bucket(Bucket="reports")
        print(f"uploading {args.models} objects and indexing them under BEFORE...", flush=True)
        with ThreadPoolExecutor(16) as pool:
            list(
                pool.map(
                    lambda i: s3.put_object(Bucket="models", Key=f"m{i}/saved_model.pb", Body=b"x"),
                    range(args.models),
                )
            )
        models = indexed_models(args.models, before, args.distinct)
        os.environ.update(aws_env)
        from worker.settings import Settings
        from worker.sinks.s3 import S3ObjectStore, s3_client

        settings = Settings(
            broker_url=f"{redis_url}/0", s3_endpoint_url=endpoint, report_bucket="reports"
        )
        store = S3ObjectStore(s3_client(settings), settings)
        state = redis.Redis.from_url(f"{redis_url}/0")
        index = ModelIndex(state, store, ["reports"], "tfcompat-reports/")
        location = ReportLocation("reports", "tfcompat-reports/")

        split = [ModelIndex.field(m.bucket, m.key) for m in models[: args.split]]
        memory = MemoryObjectStore()
        for field in split:
            memory.put(*field.split("/", 1), b"x")
        restore(state, index, models, before.fleet_digest)
        ours_ms = per_model_ms(split, index, memory, after, location, args.chunk)
        restore(state, index, models, before.fleet_digest)
        s3_ms = per_model_ms(split, index, store, after, location, args.chunk)
        share = max(0.0, s3_ms - ours_ms) / s3_ms
        print(
            f"split ({len(split)} models, in process): {ours_ms:.1f} ms/model with an "
            f"in-memory store, {s3_ms:.1f} ms/model with {server} ({share:.0%} in S3)",
            flush=True,
        )

        reference = None
        if not args.no_reference:
            restore(state, index, models, before.fleet_digest)
            reset_store(s3, args.models, location)
            t0 = time.perf_counter()
            result = reevaluate(index, store, after, location)
            reference = time.perf_counter() - t0
            assert result.rewritten == args.models, result.rewritten

        env = {
            **os.environ,
            **aws_env,
            "TFCOMPAT_BROKER_URL": f"{redis_url}/0",
            "TFCOMPAT_S3_ENDPOINT_URL": endpoint,
            "TFCOMPAT_REPORT_BUCKET": "reports",
            "TFCOMPAT_FLEET": str(root / "after.yaml"),
            "TFCOMPAT_FLEET_CHUNK_SIZE": str(args.chunk),
            "TFCOMPAT_OWNERS": str(root / "no-owners.yaml"),
            "TFCOMPAT_LOG_FORMAT": "json",
        }
        rows = [
            (
                "processes",
                "time s",
                "/ reference",
                "speed-up",
                "per worker",
                "peak RSS MB",
                "CPU s: worker, S3",
            )
        ]
        if reference is not None:
            rows.append(("reference (one task)", f"{reference:.1f}", "1.00", "-", "-", "-", "-"))
        server_pid = listening_pid(endpoint)
        one = None
        for size in sizes:
            restore(state, index, models, before.fleet_digest)
            reset_store(s3, args.models, location)
            elapsed, rss, worker_cpu, server_cpu = run_worker(
                size,
                env,
                FleetRuns(state),
                after.fleet_digest,
                root / f"worker-{size}.log",
                server_pid,
            )
            one = one or elapsed * sizes[0]  # one process's time, or the first size's x size
            rows.append(
                (
                    f"fan-out, {size}",
                    f"{elapsed:.1f}",
                    f"{elapsed / reference:.2f}" if reference else "-",
                    f"{one / elapsed:.2f}",
                    f"{one / elapsed / size:.2f}",
                    " ".join(f"{r:.0f}" for r in rss),
                    f"{worker_cpu:.1f}, {server_cpu:.1f}",
                )
            )
            print(  # each size as it ends: a later failure loses none of it
                f"  {size} process(es): {elapsed:.1f} s; peak RSS MB "
                f"{' '.join(f'{r:.0f}' for r in rss)}; CPU s worker {worker_cpu:.1f}, "
                f"S3 server {server_cpu:.1f}",
                flush=True,
            )
    consumers = args.consumers or 3
    print(
        f"\n{args.models} models ({args.distinct or args.models} distinct), {consumers} "
        f"consumers and one added, chunks of {args.chunk}; CPUs: {os.cpu_count()}"
    )
    print(table(rows))
    row(
        f"fleet change re-check per model, in process ({len(split)} models)",
        f"{ours_ms:.1f} ms our code alone; {s3_ms:.1f} ms with S3 ({share:.0%} in S3)",
        f"{server} on the same cores; {s3_ms / ours_ms:.2f}x our code alone",
    )
    for line in rows[1:]:
        if not line[0].startswith("fan-out"):
            continue
        row(
            f"fleet change fanned out, {args.models:,} models x {consumers} consumers, "
            f"{line[0]} process(es)",
            f"{line[1]} s, {line[2]} x reference; speed-up {line[3]} ({line[4]} per worker); "
            f"peak RSS MB {line[5]}; CPU s worker, S3 server {line[6]}",
            f"one task, one process: {reference:.1f} s" if reference else "(reference skipped)",
        )
    print("peak RSS: the worker's main process first, then each pool process")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
