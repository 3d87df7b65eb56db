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

Rounds alternate floor and tfcompat; every figure is shown beside the floor of
its own round, as a ratio. Everything runs locally (moto, a throwaway
redis-server) and stops within `--timeout` seconds per phase.

Run: .venv/bin/python bench/pipeline_throughput.py [--uploads 200] [--rounds 2] [--latency 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
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

MODEL = ROOT.parent.parent / "shared/fixtures/tf-real/artifacts/tf2.21/frozen_graph/frozen_graph.pb"
FLOOR_TASK = "floor.check"
CHECK_TASK = "tfcompat.check_object"

floor_app = Celery("floor")
_S3: dict[int, Any] = {}


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
    if s3 is None:
        s3 = _S3[os.getpid()] = client(os.environ["BENCH_S3_ENDPOINT"])
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
        self._ready = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        with self._app.connection() as connection:
            receiver = self._app.events.Receiver(
                connection,
                handlers={"task-succeeded": self._succeeded, "task-failed": self._failed},
            )
            self._ready.set()
            while not self._stop:
                try:
                    receiver.capture(limit=None, timeout=0.5, wakeup=False)
                except (TimeoutError, OSError):
                    continue

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
        self._stop = True
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
    with running(args, env):
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
    with running(args, env):
        from worker.pipeline.app import create_app
        from worker.settings import Settings

        yield create_app(Settings(broker_url=broker))


def report_size(data: bytes) -> int:
    """The size of the report tfcompat writes for the bench's model."""
    from worker.model.events import ObjectEvent
    from worker.pipeline.process import ReportLocation, process_event
    from worker.pipeline.services import build_checker
    from worker.settings import Settings
    from worker.sinks.memory import MemoryObjectStore

    store = MemoryObjectStore()
    store.put("bench", "m/frozen.pb", data)
    checker = build_checker(Settings(fleet=str(ROOT / "config/fleet.yaml")))
    event = ObjectEvent("bench", "m/frozen.pb", "ObjectCreated:Put")
    outcome = process_event(event, store, checker, ReportLocation(None, "tfcompat-reports/"))
    return len(store.objects[("bench", outcome.report or "")])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency", type=int, default=30, help="sequential uploads per round")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=240, help="seconds per phase")
    parser.add_argument("--floor-worker", metavar="BROKER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_worker:
        configure(floor_app, args.floor_worker)
        floor_app.worker_main(["worker", "-c", "2", "-P", "prefork", "-l", "WARNING"])
        return 0
    os.environ.update(AWS_ENV)
    data = MODEL.read_bytes()
    report_bytes = report_size(data)
    results: dict[str, list[tuple[float, list[float]]]] = {"floor": [], "tfcompat": []}
    with moto_s3() as endpoint, redis_server() as redis_url:
        s3 = client(endpoint)
        brokers = {"floor": f"{redis_url}/1", "tfcompat": f"{redis_url}/2"}
        workers = {"floor": floor_worker, "tfcompat": tfcompat_worker}
        for round_ in range(args.rounds):
            for name in ("floor", "tfcompat"):
                with workers[name](brokers[name], endpoint) as app:
                    send = sender(name, app, report_bytes, len(data))
                    done = Done(app)
                    try:
                        warm = upload(s3, f"{name}-warm-{round_}", args.warmup, data)
                        latencies(send, done, f"{name}-warm-{round_}", warm[:1], args.timeout)
                        throughput(send, done, f"{name}-warm-{round_}", warm, args.timeout)
                        bucket = f"{name}-{round_}"
                        keys = upload(s3, bucket, args.uploads, data)
                        rate = throughput(send, done, bucket, keys, args.timeout)
                        bucket = f"{name}-lat-{round_}"
                        keys = upload(s3, bucket, args.latency, data)
                        lat = latencies(send, done, bucket, keys, args.timeout)
                    finally:
                        done.close()
                results[name].append((rate, lat))
                print(f"round {round_ + 1} {name}: {rate:.1f} uploads/s", file=sys.stderr)
    rows = [("round", "work", "uploads/s", "ratio", "latency p50 ms", "ratio", "p99 ms")]
    for round_ in range(args.rounds):
        floor_rate, floor_lat = results["floor"][round_]
        floor_p50 = statistics.median(floor_lat)
        for name in ("floor", "tfcompat"):
            rate, lat = results[name][round_]
            p50 = statistics.median(lat)
            p99 = sorted(lat)[max(0, round(len(lat) * 0.99) - 1)]
            label = "bare task, 4 S3 calls [floor]" if name == "floor" else "tfcompat worker -c 2"
            rows.append(
                (
                    str(round_ + 1),
                    label,
                    f"{rate:.1f}",
                    f"{rate / floor_rate:.2f}x",
                    f"{p50 * 1000:.0f}",
                    f"{p50 / floor_p50:.2f}x",
                    f"{p99 * 1000:.0f}",
                )
            )
    print(f"{args.uploads} uploads of ~{len(data)}-byte frozen graphs; report {report_bytes} bytes")
    print(table(rows))
    return 0


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
