"""What one upload costs the worker's pool process: instructions, Redis round trips, log lines.

`bench/pipeline_throughput.py` times `tfcompat worker -c 2` beside a floor task doing
only the four S3 calls; on a shared 2-core machine its CPU figures move with the load.
This runs what a pool process runs for each upload, in one process, on distinct small
frozen graphs (the bench's 519-byte graph, each with a Const of its own shape added):
Celery's tracer around `tfcompat.check_object` (the task_prerun/postrun signals, the
task's body, its hooks: the index's write to Redis and the metrics, the log lines), as
`tfcompat worker` configures it (JSON logs at INFO, the example fleet, notifications
off), and counts:

  instructions   under `valgrind --tool=callgrind`, twice: once stopping just before
                 the measured uploads (after as many warm-up uploads, which load the op
                 registries the graphs use), once after them; the difference per upload
                 (the same count whatever the machine's load)
  CPU            process CPU ms per upload, without valgrind (moves with the load)
  Redis          round trips and commands per upload (the index's writes)
  log lines      lines written per upload

`--store memory` (default) keeps the objects in memory: the worker's own work, no
S3 client. `--store s3` reads and writes them on moto's S3 server, as the bench does,
and also runs the bench's floor task the same way in a process of its own: the S3
client's work is in both, so the difference is what the check adds.
Celery's main process (receiving, acknowledging, the `received` log line) is not here.

Redis: database 7 of --redis-url's server (emptied before each run), or
TFCOMPAT_BENCH_REDIS_URL. Compare two commits by running this on each.

Run: .venv/bin/python tools/upload_instructions.py [--uploads 200] [--store memory|s3]
     [--no-valgrind]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WARMUP = 20
BUCKET = "bench"


def default_redis_url() -> str:
    port = os.environ.get("TFCOMPAT_TEST_REDIS_PORT", "6379")
    return os.environ.get("TFCOMPAT_BENCH_REDIS_URL", f"redis://127.0.0.1:{port}/7")


class Counted:
    """Redis round trips (one write to the socket each) and commands (one reply each),
    counted on redis-py's connections."""

    def __init__(self) -> None:
        from redis.connection import AbstractConnection

        self.trips = self.replies = 0
        send, read = AbstractConnection.send_packed_command, AbstractConnection.read_response

        def send_packed_command(conn: Any, *args: Any, **kwargs: Any) -> Any:
            self.trips += 1
            return send(conn, *args, **kwargs)

        def read_response(conn: Any, *args: Any, **kwargs: Any) -> Any:
            self.replies += 1
            return read(conn, *args, **kwargs)

        AbstractConnection.send_packed_command = send_packed_command  # type: ignore[method-assign]
        AbstractConnection.read_response = read_response  # type: ignore[method-assign]


class Lines(io.TextIOBase):
    """A log stream that counts lines and keeps nothing."""

    def __init__(self) -> None:
        self.lines = 0
        self.sink = open(os.devnull, "w")  # noqa: SIM115 - the process's lifetime

    def write(self, text: str) -> int:
        self.lines += text.count("\n")
        return self.sink.write(text)

    def flush(self) -> None:
        self.sink.flush()


def graphs(count: int) -> list[bytes]:
    from bench.pipeline_throughput import MODEL, variant

    data = MODEL.read_bytes()
    return [variant(data, index) for index in range(count)]


def events(bodies: list[bytes], put: Any) -> list[dict[str, Any]]:
    from worker.model.events import ObjectEvent

    out = []
    for i, body in enumerate(bodies):
        key = f"models/m{i:04d}/frozen.pb"
        etag = put(key, body)
        event = ObjectEvent(
            BUCKET,
            key,
            "ObjectCreated:Put",
            etag=etag,
            size=len(body),
            event_time=datetime.now(UTC).isoformat(),
            sequencer=f"{i:016X}",
        )
        out.append(event.to_json())
    return out


def ours(uploads: int, stop_before: bool, store_kind: str) -> dict[str, Any]:
    """`tfcompat.check_object` as a pool process runs it, on `uploads` distinct graphs."""
    import hashlib

    import redis

    lines = Lines()
    sys.stderr = lines  # type: ignore[assignment]
    from worker.logs import configure_logging

    configure_logging("INFO", "json")  # as `tfcompat worker` logs
    from celery.app.trace import build_tracer

    from worker.pipeline import services
    from worker.pipeline.app import TASK_CHECK_OBJECT, create_app
    from worker.settings import load_settings

    settings = load_settings()
    redis.Redis.from_url(settings.redis_url or "").flushdb()
    app = create_app(settings)
    built = services.services_for(settings)
    if store_kind == "memory":
        from worker.pipeline.observe import metrics_hook
        from worker.sinks.memory import MemoryObjectStore

        store = MemoryObjectStore()
        built.store = store
        built.hooks = [services.index_hook(built.index, store, built.location), metrics_hook(store)]

        def put(key: str, body: bytes) -> str:
            store.put(BUCKET, key, body)
            return hashlib.md5(body).hexdigest()
    else:
        from worker.sinks.s3_client import shared_client

        client = shared_client(settings)
        client.create_bucket(Bucket=BUCKET)

        def put(key: str, body: bytes) -> str:
            return str(client.put_object(Bucket=BUCKET, Key=key, Body=body)["ETag"]).strip('"')

    todo = events(graphs(WARMUP + uploads), put)
    app.loader.import_default_modules()  # the tasks, as a worker imports them
    task = app.tasks[TASK_CHECK_OBJECT]  # this app's (the bench's module made another current)
    trace = build_tracer(task.name, task, app=app, eager=False)
    return measured(todo, stop_before, lines, lambda i, e: trace(f"t{i}", [e], {}, {}))


def floor(uploads: int, stop_before: bool) -> dict[str, Any]:
    """The bench's floor task (its four S3 calls), as its pool process runs it."""
    lines = Lines()
    sys.stderr = lines  # type: ignore[assignment]
    from celery.app.trace import build_tracer

    import bench.pipeline_throughput as bench
    from worker.settings import Settings
    from worker.sinks.s3_client import shared_client

    bench.configure(bench.floor_app, "memory://")
    client = shared_client(Settings(s3_endpoint_url=os.environ["BENCH_S3_ENDPOINT"]))
    client.create_bucket(Bucket=BUCKET)
    report = report_bytes()

    def put(key: str, body: bytes) -> str:
        return str(client.put_object(Bucket=BUCKET, Key=key, Body=body)["ETag"]).strip('"')

    todo = events(graphs(WARMUP + uploads), put)
    task = bench.floor_check
    trace = build_tracer(task.name, task, app=bench.floor_app, eager=False)
    return measured(
        todo, stop_before, lines, lambda i, e: trace(f"t{i}", [BUCKET, e["key"], report], {}, {})
    )


def report_bytes() -> int:
    from bench.pipeline_throughput import MODEL, report_size

    return report_size(MODEL.read_bytes())


def measured(
    todo: list[dict[str, Any]], stop_before: bool, lines: Lines, run: Any
) -> dict[str, Any]:
    import gc

    counted = Counted()
    for i, event in enumerate(todo[:WARMUP]):
        check(run(i, event))
    gc.collect()
    if stop_before:
        return {}
    trips, replies, logged = counted.trips, counted.replies, lines.lines
    started = time.process_time()
    for i, event in enumerate(todo[WARMUP:], WARMUP):
        check(run(i, event))
    cpu = time.process_time() - started
    n = len(todo) - WARMUP
    return {
        "cpu_ms": cpu / n * 1000,
        "redis_trips": (counted.trips - trips) / n,
        "redis_commands": (counted.replies - replies) / n,
        "log_lines": (lines.lines - logged) / n,
    }


def check(result: Any) -> None:
    retval = getattr(result, "retval", result)
    if getattr(result, "info", None) is not None or (
        isinstance(retval, dict) and retval.get("action") not in (None, "checked")
    ):
        raise SystemExit(f"an upload failed: {result}")


def child(args: argparse.Namespace) -> None:
    try:
        if args.side == "floor":
            found = floor(args.uploads, args.stop_before)
        else:
            found = ours(args.uploads, args.stop_before, args.store)
    except BaseException:
        import traceback

        traceback.print_exc(file=sys.__stderr__)
        raise
    print(json.dumps(found), file=sys.__stdout__)


def collected(
    command: list[str], env: dict[str, str], valgrind: bool
) -> tuple[int, dict[str, Any]]:
    """(instructions or 0, the child's figures)."""
    if valgrind:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    if not valgrind:
        return 0, figures
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found, done.stderr[-2000:]
    return int(found.group(1)), figures


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--uploads", type=int, default=200)
    parser.add_argument("--store", choices=["memory", "s3"], default="memory")
    parser.add_argument("--redis-url", default=default_redis_url())
    parser.add_argument(
        "--no-valgrind", action="store_true", help="CPU, Redis and log figures only"
    )
    parser.add_argument("--side", choices=["ours", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--stop-before", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        child(args)
        return 0
    valgrind = not args.no_valgrind
    if valgrind and shutil.which("valgrind") is None:
        print(
            "valgrind is not installed (apt install valgrind); try --no-valgrind", file=sys.stderr
        )
        return 2
    from bench.local_s3 import AWS_ENV, moto_s3

    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="upload-cost-") as scratch:
        env = {
            **os.environ,
            **AWS_ENV,
            "PYTHONHASHSEED": "0",  # set and dict orders repeat too
            "TFCOMPAT_FLEET": str(ROOT / "config/fleet.yaml"),
            "TFCOMPAT_OWNERS": str(Path(scratch) / "no-owners.yaml"),  # notifications off
            "TFCOMPAT_REDIS_URL": args.redis_url,
            "TFCOMPAT_BROKER_URL": args.redis_url,
            "TFCOMPAT_LOG_FORMAT": "json",
        }
        sides = ["ours"]
        if args.store == "s3":
            endpoint = stack.enter_context(moto_s3())
            env.update(BENCH_S3_ENDPOINT=endpoint, TFCOMPAT_S3_ENDPOINT_URL=endpoint)
            sides.append("floor")
        me = [sys.executable, __file__, "--uploads", str(args.uploads), "--store", args.store]
        for side in sides:
            run = [*me, "--side", side]
            before = collected([*run, "--stop-before"], env, valgrind)[0] if valgrind else 0
            total, figures = collected(run, env, valgrind)
            per = (total - before) / args.uploads / 1e6 if valgrind else None
            shown = f"{per:.2f} M instructions, " if per is not None else ""
            print(
                f"{side} ({args.store} store, {args.uploads} uploads): per upload {shown}"
                f"{figures['cpu_ms']:.2f} ms CPU{' under valgrind' if valgrind else ''}, "
                f"{figures['redis_trips']:.2f} Redis round trips "
                f"({figures['redis_commands']:.2f} replies), "
                f"{figures['log_lines']:.2f} log lines",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
