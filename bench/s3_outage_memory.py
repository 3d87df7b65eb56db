"""Bench: a worker's pool memory while S3 is down during a fleet change.

A real worker (`tfcompat worker --concurrency 1`, a throwaway Redis, moto's S3 server)
fans out a fleet change over N indexed models (`--models`, default 3,000, made as
bench/fleet_fanout.py makes them, 20 consumers and one added); once a third of them
are done, moto's server is stopped and the chunks that follow fail and retry (S3
unreachable) for `--down` seconds. The pool process's resident memory is sampled
every 5 seconds from /proc.

Reference, measured in the same run: the pool process's RSS just before S3 went away.
Figures: its RSS at the end of the outage and the growth per retry (the worker's log
counts the retries), and how many models' units ran out of retries meanwhile (dead
letters: none is expected while the outage is shorter than the retries wait). The
memory limit is off for the run (TFCOMPAT_WORKER_MAX_MEMORY_MB=0), so nothing is hidden
by a replaced process.

Run: .venv/bin/python bench/s3_outage_memory.py [--models 3000] [--down 120]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from tempfile import TemporaryDirectory

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet_fanout import (  # noqa: E402
    checker_of,
    children,
    fleet_yaml,
    indexed_models,
    restore,
    status_mb,
)
from local_s3 import AWS_ENV, client, free_port, redis_server, wait_for  # noqa: E402
from rows import row  # noqa: E402

from worker.catalog.catalog import load_catalog  # noqa: E402
from worker.sinks.fleet_runs import FleetRuns  # noqa: E402
from worker.sinks.index import ModelIndex  # noqa: E402
from worker.sinks.memory import MemoryObjectStore  # noqa: E402

GOAL_MB_PER_RETRY = 1.0


def pool_rss_mb(pid: int) -> list[float]:
    """VmRSS (MB) of each child of `pid` (the pool processes)."""
    return status_mb(children(pid), "VmRSS")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--models", type=int, default=3000)
    parser.add_argument("--down", type=float, default=120, help="seconds S3 stays down")
    parser.add_argument("--chunk", type=int, default=25)
    args = parser.parse_args()
    os.environ.update(AWS_ENV)
    catalog = load_catalog()
    before_yaml, after_yaml = fleet_yaml(20)
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    moto = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker: subprocess.Popen[bytes] | None = None
    try:
        s3 = client(endpoint)
        wait_for(lambda: s3.list_buckets() is not None, 30, "moto's S3 server")
        with TemporaryDirectory() as tmp, redis_server() as redis_url:
            root = Path(tmp)
            (root / "before.yaml").write_text(before_yaml)
            (root / "after.yaml").write_text(after_yaml)
            before = checker_of(root / "before.yaml", catalog)
            s3.create_bucket(Bucket="models")
            s3.create_bucket(Bucket="reports")
            with ThreadPoolExecutor(16) as pool:
                list(
                    pool.map(
                        lambda i: s3.put_object(
                            Bucket="models", Key=f"m{i}/saved_model.pb", Body=b"x"
                        ),
                        range(args.models),
                    )
                )
            models = indexed_models(args.models, before, 500)
            state = redis.Redis.from_url(f"{redis_url}/0")
            index = ModelIndex(state, MemoryObjectStore(), ["reports"], "tfcompat-reports/")
            restore(state, index, models, before.fleet_digest)
            env = {
                **os.environ,
                "TFCOMPAT_BROKER_URL": f"{redis_url}/0",
                "TFCOMPAT_S3_ENDPOINT_URL": endpoint,
                "TFCOMPAT_REPORT_BUCKET": "reports",
                "TFCOMPAT_FLEET": str(root / "after.yaml"),
                "TFCOMPAT_FLEET_CHUNK_SIZE": str(args.chunk),
                "TFCOMPAT_OWNERS": str(root / "no-owners.yaml"),
                "TFCOMPAT_LOG_FORMAT": "json",
                "TFCOMPAT_WORKER_MAX_MEMORY_MB": "0",
            }
            log = root / "worker.log"
            with log.open("wb") as out:
                worker = subprocess.Popen(
                    [sys.executable, "-m", "worker.cli", "worker", "--concurrency", "1"],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            runs = FleetRuns(state)
            wait_for(lambda: runs.progress().done > args.models // 3, 600, "a third done")
            rss_before = max(pool_rss_mb(worker.pid))
            retries_before = log.read_text().count('"task.retry"')
            moto.kill()
            moto.wait(30)
            print(f"S3 stopped at {runs.progress().done} models; pool RSS {rss_before:.0f} MB")
            started = time.monotonic()
            while time.monotonic() - started < args.down:
                time.sleep(5)
                print(
                    f"  {time.monotonic() - started:5.0f} s down: pool RSS "
                    f"{' '.join(f'{r:.0f}' for r in pool_rss_mb(worker.pid))} MB",
                    flush=True,
                )
            rss_after = max(pool_rss_mb(worker.pid))
            retries = log.read_text().count('"task.retry"') - retries_before
            dead = runs.progress().failed
    finally:
        if worker is not None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(30)
        if moto.poll() is None:
            moto.kill()
    per_retry = (rss_after - rss_before) / max(1, retries)
    row(
        f"pool process memory, S3 down {args.down:.0f} s during a fleet change "
        f"({args.models:,} models x 21 consumers, chunks of {args.chunk})",
        f"{rss_after:.0f} MB after {retries} retries = {rss_after / rss_before:.2f}x; "
        f"{per_retry:.2f} MB per retry; {dead} models' units dead-lettered",
        f"the same process before S3 went away: {rss_before:.0f} MB",
        f"<= {GOAL_MB_PER_RETRY:g} MB per retry",
        per_retry <= GOAL_MB_PER_RETRY,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
