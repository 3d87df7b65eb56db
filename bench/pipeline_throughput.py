"""Bench: the worker's throughput and event-to-tags latency, beside the S3 floor.

The floor is a bare Celery task doing only the S3 work an upload needs (GET the
object, GET its tags, PUT its tags, PUT a report of the size ours has) against
the same local S3 endpoint (moto's server), with the same Celery settings and
`-c 2`. In the same run, `tfcompat worker --concurrency 2` (the example fleet,
the model index on Redis, notifications off) checks the same uploads: small
frozen graphs (a real 519-byte one, each with a Const of its own shape added, so
no two are the same graph) under distinct keys, enqueued as S3 events would be.

  throughput: N uploads enqueued at once, uploads/s until the last task is done
  latency:    uploads one at a time, enqueue -> task done (after its tags are written)
  CPU:        the worker's CPU seconds (its main process and pool children, from
              /proc) over the throughput batches, per upload: steadier than times on a
              shared machine, and what a check adds beyond the S3 calls

Both workers run side by side, idle in turn: batches of uploads alternate
between them (and single uploads, for latency), so a change in the machine's
load hits both alike; every figure is shown beside the floor's, as a ratio.
Everything runs locally (moto, a throwaway redis-server) and stops within
`--timeout` seconds per batch.

With `--requests`, moto also writes down every request it answers
(`bench/moto_requests.py`) and the run prints each side's S3 requests per upload
and their sizes: what the check adds to the object store's work. Counting costs
moto a little CPU on both sides; time a run without it.

Run: .venv/bin/python bench/pipeline_throughput.py [--uploads 200] [--batch 50] [--latency 30]
     [--requests]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from celery import Celery  # noqa: E402

from bench.local_s3 import AWS_ENV, client, moto_s3, redis_server, running, table  # noqa: E402
from bench.moto_requests import answered  # noqa: E402
from bench.rows import row  # noqa: E402

MODEL = ROOT / "tests/fixtures/tf-base/artifacts/tf2.21/frozen_graph/frozen_graph.pb"
FLOOR_TASK = "floor.check"
CHECK_TASK = "tfcompat.check_object"

floor_app = Celery("floor")
_S3: dict[int, Any] = {}
PIDS: dict[str, int] = {}  # worker name -> its main process id
GOAL = 0.9  # the worker's throughput at least 0.9x the floor's (issue #35)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its live descendants (Linux /proc;
    0.0 where /proc is absent)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = int(fields[11]) + int(fields[12])
    family, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in family} - family
        family |= more
        grew = bool(more)
    return sum(times.get(p, 0) for p in family) / tick


def configure(app: Celery, broker: str) -> None:
    """The settings `worker.pipeline.app.create_app` gives tfcompat's app."""
    app.conf.update(
        broker_url=broker,
        task_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        worker_send_task_events=True,
        task_send_sent_event=True,
        worker_hijack_root_logger=False,
    )


@floor_app.task(name=FLOOR_TASK)
def floor_check(bucket: str, key: str, report_bytes: int) -> None:
    """Only the S3 work of one upload, one client per process."""
    s3 = _S3.get(os.getpid())
    if s3 is None:  # the very client tfcompat builds (same retries and timeouts)
        from worker.settings import Settings
        from worker.sinks.s3_client import s3_client

        settings = Settings(s3_endpoint_url=os.environ["BENCH_S3_ENDPOINT"])
        s3 = _S3[os.getpid()] = s3_client(settings)
    s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    tags = s3.get_object_tagging(Bucket=bucket, Key=key)["TagSet"]
    tags = [t for t in tags if t["Key"] != "floor"] + [{"Key": "floor", "Value": "checked"}]
    s3.put_object_tagging(Bucket=bucket, Key=key, Tagging={"TagSet": tags})
    s3.put_object(Bucket=bucket, Key=f"floor-reports/{key}.json", Body=b" " * report_bytes)


class Done:
    """Task-succeeded events from a broker, by task id (Celery's own event stream)."""

    def __init__(self, app: Celery) -> None:
        self.times: dict[str, float] = {}
        self.failed: list[str] = []
        self._app = app
        self._receiver: Any = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)
        time.sleep(0.5)  # the subscription is made as capture starts

    def _run(self) -> None:
        """One capture for the whole phase: its subscription never lapses (Redis
        pub/sub keeps nothing for a subscriber that is away)."""
        with self._app.connection() as connection:
            self._receiver = self._app.events.Receiver(
                connection,
                handlers={"task-succeeded": self._succeeded, "task-failed": self._failed},
            )
            self._ready.set()
            self._receiver.capture(limit=None, timeout=None, wakeup=False)

    def _succeeded(self, event: dict[str, Any]) -> None:
        self.times[event["uuid"]] = float(event["timestamp"])

    def _failed(self, event: dict[str, Any]) -> None:
        self.failed.append(f"{event.get('uuid')}: {event.get('exception')}")

    def wait(self, ids: list[str], timeout: float) -> list[float]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.failed:
                raise RuntimeError(f"tasks failed: {self.failed[:3]}")
            if all(i in self.times for i in ids):
                return [self.times[i] for i in ids]
            time.sleep(0.005)
        missing = sum(i not in self.times for i in ids)
        raise TimeoutError(f"{missing} of {len(ids)} tasks not done in {timeout}s")

    def close(self) -> None:
        if self._receiver is not None:
            self._receiver.should_stop = True
        self._thread.join(5)


Send = Callable[[str, str, str], str]  # (bucket, key, etag) -> task id


def variant(data: bytes, index: int) -> bytes:
    """The model with one more Const of its own shape: no two uploads are the same graph."""
    from worker.proto import tensorflow_subset_pb2 as pb

    graph = pb.GraphDef.FromString(data)
    node = graph.node.add(name=f"bench/upload_{index}", op="Const")
    node.attr["dtype"].type = pb.DT_FLOAT
    node.attr["value"].tensor.dtype = pb.DT_FLOAT
    node.attr["value"].tensor.tensor_shape.dim.add(size=index + 1)
    return graph.SerializeToString()


def upload(s3: Any, bucket: str, count: int, data: bytes) -> list[tuple[str, str]]:
    s3.create_bucket(Bucket=bucket)
    keys = []
    for i in range(count):
        key = f"models/m{i:04d}/frozen.pb"
        body = variant(data, int(time.time_ns() % 1_000_000) + i)
        etag = s3.put_object(Bucket=bucket, Key=key, Body=body)["ETag"].strip('"')
        keys.append((key, etag))
    return keys


def throughput(send: Send, done: Done, bucket: str, keys: list[tuple[str, str]], t: float) -> float:
    start = time.time()
    ids = [send(bucket, key, etag) for key, etag in keys]
    finished = done.wait(ids, t)
    return len(ids) / (max(finished) - start)


def latencies(
    send: Send, done: Done, bucket: str, keys: list[tuple[str, str]], t: float
) -> list[float]:
    out = []
    for key, etag in keys:
        start = time.time()
        (finished,) = done.wait([send(bucket, key, etag)], t)
        out.append(finished - start)
    return out


@contextmanager
def floor_worker(broker: str, endpoint: str) -> Iterator[Celery]:
    env = {**AWS_ENV, "BENCH_S3_ENDPOINT": endpoint}
    args = [sys.executable, __file__, "--floor-worker", broker]
    with running(args, env) as proc:
        PIDS["floor"] = proc.pid
        app = Celery("floor-client")
        configure(app, broker)
        yield app


@contextmanager
def tfcompat_worker(broker: str, endpoint: str) -> Iterator[Celery]:
    env = {
        **AWS_ENV,
        "TFCOMPAT_BROKER_URL": broker,
        "TFCOMPAT_S3_ENDPOINT_URL": endpoint,
        "TFCOMPAT_FLEET": str(ROOT / "config/fleet.yaml"),
        "TFCOMPAT_OWNERS": str(ROOT / "bench/no-owners.yaml"),  # notifications off
        "TFCOMPAT_LOG_FORMAT": "json",
    }
    args = [sys.executable, "-m", "worker.cli", "worker", "--concurrency", "2"]
    with running(args, env) as proc:
        PIDS["tfcompat"] = proc.pid
        from worker.pipeline.app import create_app
        from worker.settings import Settings

        yield create_app(Settings(broker_url=broker))


def report_size(data: bytes) -> int:
    """The size of the report tfcompat writes for the bench's model."""
    from worker.formats.access import ReadPolicy
    from worker.model.events import ObjectEvent
    from worker.pipeline.process import ReportLocation, process_event
    from worker.pipeline.services import build_checker
    from worker.settings import Settings
    from worker.sinks.memory import MemoryObjectStore

    store = MemoryObjectStore()
    store.put("bench", "m/frozen.pb", data)
    checker = build_checker(Settings(fleet=str(ROOT / "config/fleet.yaml")))
    event = ObjectEvent("bench", "m/frozen.pb", "ObjectCreated:Put")
    location = ReportLocation(None, "tfcompat-reports/")
    outcome = process_event(event, store, checker, location, ReadPolicy())
    return len(store.objects[("bench", outcome.report or "")])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=200, help="per worker, for throughput")
    parser.add_argument("--batch", type=int, default=50, help="uploads per alternating batch")
    parser.add_argument("--latency", type=int, default=30, help="one-at-a-time uploads per worker")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=240, help="seconds per batch")
    parser.add_argument("--requests", action="store_true", help="count S3 requests per upload")
    parser.add_argument("--floor-worker", metavar="BROKER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_worker:
        configure(floor_app, args.floor_worker)
        floor_app.worker_main(["worker", "-c", "2", "-P", "prefork", "-l", "WARNING"])
        return 0
    os.environ.update(AWS_ENV)
    data = MODEL.read_bytes()
    report_bytes = report_size(data)
    names = ("floor", "tfcompat")
    batches = max(1, args.uploads // args.batch)
    elapsed = dict.fromkeys(names, 0.0)
    cpu = dict.fromkeys(names, 0.0)
    pair_ratios: list[float] = []
    lat: dict[str, list[float]] = {name: [] for name in names}
    scratch = tempfile.TemporaryDirectory(prefix="bench-requests-")
    requests = Path(scratch.name) / "requests.jsonl" if args.requests else None
    with (
        scratch,
        moto_s3(requests) as endpoint,
        redis_server() as redis_url,
        floor_worker(f"{redis_url}/1", endpoint) as floor_client,
        tfcompat_worker(f"{redis_url}/2", endpoint) as tfcompat_client,
    ):
        s3 = client(endpoint)
        apps = {"floor": floor_client, "tfcompat": tfcompat_client}
        sends = {n: sender(n, apps[n], report_bytes, len(data)) for n in names}
        dones = {n: Done(apps[n]) for n in names}
        try:
            for n in names:  # every pool process has run a check (op registries loaded)
                warm = upload(s3, f"{n}-warm", args.warmup, data)
                latencies(sends[n], dones[n], f"{n}-warm", warm[:1], args.timeout)
                throughput(sends[n], dones[n], f"{n}-warm", warm, args.timeout)
            keys = {n: upload(s3, f"{n}-rate", batches * args.batch, data) for n in names}
            counted_from = answered(requests) if requests is not None else 0
            for b in range(batches):  # batches alternate, so load drifts hit both alike
                rates = {}
                for n in names if b % 2 == 0 else names[::-1]:
                    chunk = keys[n][b * args.batch : (b + 1) * args.batch]
                    used = cpu_seconds(PIDS[n])
                    rates[n] = throughput(sends[n], dones[n], f"{n}-rate", chunk, args.timeout)
                    cpu[n] += cpu_seconds(PIDS[n]) - used
                    elapsed[n] += len(chunk) / rates[n]
                pair_ratios.append(rates["tfcompat"] / rates["floor"])
                print(f"batch {b + 1}/{batches}: {rates}", file=sys.stderr)
            keys = {n: upload(s3, f"{n}-lat", args.latency, data) for n in names}
            for i in range(args.latency):  # one upload at a time, alternating
                for n in names if i % 2 == 0 else names[::-1]:
                    lat[n] += latencies(sends[n], dones[n], f"{n}-lat", keys[n][i : i + 1], 60)
        finally:
            for done in dones.values():
                done.close()
        if requests is not None:
            request_rows(requests, batches * args.batch, counted_from)
    rate = {n: batches * args.batch / elapsed[n] for n in names}
    p50 = {n: statistics.median(lat[n]) for n in names}
    rows = [("work", "uploads/s", "ratio", "batch ratios", "latency p50 ms", "ratio", "p99 ms")]
    for n in names:
        label = "bare task, 4 S3 calls [floor]" if n == "floor" else "tfcompat worker -c 2"
        spread = "-"
        if n == "tfcompat":
            spread = f"{min(pair_ratios):.2f}-{max(pair_ratios):.2f}x"
        rows.append(
            (
                label,
                f"{rate[n]:.1f}",
                f"{rate[n] / rate['floor']:.2f}x",
                spread,
                f"{p50[n] * 1000:.0f}",
                f"{p50[n] / p50['floor']:.2f}x",
                f"{sorted(lat[n])[max(0, round(len(lat[n]) * 0.99) - 1)] * 1000:.0f}",
            )
        )
    print(
        f"{batches * args.batch} uploads each in {batches} alternating batches, "
        f"{args.latency} one at a time; ~{len(data)}-byte frozen graphs, "
        f"report {report_bytes} bytes"
    )
    print(table(rows))
    ratio = rate["tfcompat"] / rate["floor"]
    row(
        f"pipeline throughput, {batches * args.batch} small uploads, `worker -c 2`",
        f"{rate['tfcompat']:.1f} uploads/s = {ratio:.2f}x the floor "
        f"(batches {min(pair_ratios):.2f}-{max(pair_ratios):.2f}x)",
        f"bare Celery task doing the 4 S3 calls: {rate['floor']:.1f}/s",
        f">= {GOAL:g}x the floor",
        ratio >= GOAL,
    )
    per = {n: cpu[n] / (batches * args.batch) * 1000 for n in names}
    if per["floor"] > 0:
        row(
            "worker CPU per upload (main process + pool, throughput batches)",
            f"{per['tfcompat']:.1f} ms = {per['tfcompat'] / per['floor']:.2f}x the floor's",
            f"floor {per['floor']:.1f} ms (the 4 S3 calls' client side)",
        )
    lat_ratio = p50["tfcompat"] / p50["floor"]
    row(
        "event -> tags latency, one upload at a time",
        f"p50 {p50['tfcompat'] * 1000:.0f} ms = {lat_ratio:.2f}x the floor's",
        f"floor p50 {p50['floor'] * 1000:.0f} ms",
        "p50 <= 1.5x the floor",
        lat_ratio <= 1.5,
    )
    return 0


def request_rows(log: Path, uploads: int, after: int) -> None:
    """Each side's S3 requests per upload over the throughput batches (the log's lines
    after the first `after`), by operation."""
    from bench.moto_requests import requests_per_upload

    counted = {
        n: requests_per_upload(log, f"{n}-rate", uploads, after) for n in ("floor", "tfcompat")
    }
    for n, operations in counted.items():
        for operation, (per_upload, size) in operations.items():
            print(f"{n}: {operation}: {per_upload:.2f} per upload, {size:.0f} bytes each")
    calls = {n: sum(per for per, _ in ops.values()) for n, ops in counted.items()}
    row(
        "S3 requests per upload (throughput batches, moto's own count)",
        f"{calls['tfcompat']:.2f}: "
        + ", ".join(f"{op} {per:.2f}" for op, (per, _) in counted["tfcompat"].items()),
        f"floor {calls['floor']:.2f}",
    )


def sender(name: str, app: Celery, report_bytes: int, size: int) -> Send:
    if name == "floor":

        def send_floor(bucket: str, key: str, etag: str) -> str:
            return str(app.send_task(FLOOR_TASK, args=[bucket, key, report_bytes]).id)

        return send_floor
    from worker.model.events import ObjectEvent

    def send_check(bucket: str, key: str, etag: str) -> str:
        event = ObjectEvent(
            bucket,
            key,
            "ObjectCreated:Put",
            etag=etag,
            size=size,
            event_time=datetime.now(UTC).isoformat(),
            sequencer=f"{time.time_ns():X}",
        )
        return str(app.send_task(CHECK_TASK, args=[event.to_json()]).id)

    return send_check


if __name__ == "__main__":
    sys.exit(main())
