"""How long the receiver takes to answer while its broker is up, dead or hung.

Starts a Redis of its own (AOF, as shipped) on a free port and `tfcompat serve`
against it, then times POST /events/s3, GET /healthz and GET /metrics (the
process's metrics exporter, on a port of its own) with the
broker up, killed (connection refused) and stopped with SIGSTOP (accepts, never
answers), and once more after it is back. Figures are medians of N requests, in
milliseconds, with their ratio to the same request while the broker is up (the
reference measured in this run); the publish timeout (TFCOMPAT_PUBLISH_TIMEOUT,
0.8 s) bounds the delivery, and the health probe's 1 s /healthz, in both outages.

    .venv/bin/python bench/receiver_outage.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rows import row  # noqa: E402
from tests.pipeline.brokers import RedisServer  # noqa: E402
from tests.pipeline.services import AUTH, RECEIVER_ENV, free_port, wait_until  # noqa: E402

EVENT = {
    "Records": [
        {
            "eventName": "ObjectCreated:Put",
            "s3": {"bucket": {"name": "models"}, "object": {"key": "m/1/saved_model.pb"}},
        }
    ]
}


def timed(call: object, n: int) -> tuple[float, list[int]]:
    took, statuses = [], []
    for _ in range(n):
        start = time.perf_counter()
        try:
            statuses.append(call().status_code)  # type: ignore[operator]
        except httpx.HTTPError:
            statuses.append(0)
        took.append((time.perf_counter() - start) * 1000)
    return statuses and statistics.median(took), sorted(set(statuses))  # type: ignore[return-value]


def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        broker = RedisServer(Path(directory))
        broker.start()
        port, metrics_port = free_port(), free_port()
        env = {
            **os.environ,
            **RECEIVER_ENV,  # the receiver starts only with every route authenticated
            "TFCOMPAT_BROKER_URL": broker.url,
            "TFCOMPAT_LOG_LEVEL": "ERROR",
        }
        log = open(Path(directory) / "receiver.log", "wb")  # noqa: SIM115
        receiver = subprocess.Popen(
            [
                *(sys.executable, "-m", "worker.cli", "serve", "--port", str(port)),
                *("--metrics-port", str(metrics_port)),
            ],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        client = httpx.Client(timeout=60, headers=AUTH)
        try:
            metrics = f"http://127.0.0.1:{metrics_port}/metrics"
            wait_until(lambda: client.get(f"{url}/healthz"), 60, "the receiver")
            calls = {
                "POST /events/s3": lambda: client.post(f"{url}/events/s3", json=EVENT),
                "GET /healthz": lambda: client.get(f"{url}/healthz"),
                "GET /metrics": lambda: client.get(metrics),
            }
            reference = {name: timed(call, n)[0] for name, call in calls.items()}
            rows = []
            for state, enter, leave in (
                ("up", None, None),
                ("killed", broker.kill, broker.start),
                ("hung (SIGSTOP)", broker.pause, broker.resume),
                ("back", None, None),
            ):
                if enter:
                    enter()
                for name, call in calls.items():
                    median, statuses = timed(call, n)
                    rows.append((state, name, median, median / reference[name], statuses))
                if leave:
                    leave()
                    wait_until(
                        lambda: client.post(f"{url}/events/s3", json=EVENT).status_code == 202,
                        30,
                        "recovery",
                    )
        finally:
            receiver.terminate()
            receiver.wait(10)
            broker.stop()
    print(f"{'broker':16} {'request':18} {'median ms':>10} {'x up':>8}  statuses   (n={n})")
    for state, name, median, ratio, statuses in rows:
        print(f"{state:16} {name:18} {median:10.1f} {ratio:8.1f}  {statuses}")
    by = {(state, name): (median, statuses) for state, name, median, _, statuses in rows}
    for state in ("killed", "hung (SIGSTOP)"):
        post, post_statuses = by[(state, "POST /events/s3")]
        health, _ = by[(state, "GET /healthz")]
        metrics, _ = by[(state, "GET /metrics")]
        row(
            f"receiver, broker {state}",
            f"POST 503 in {post:.0f} ms, /healthz {health:.0f} ms, /metrics {metrics:.0f} ms",
            f"broker up: POST {by[('up', 'POST /events/s3')][0]:.0f} ms",
            "503 within 1 s, probes fast",
            post_statuses == [503] and post <= 1000 and health <= 1100 and metrics <= 100,
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
