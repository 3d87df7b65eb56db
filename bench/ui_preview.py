"""How the event listener answers while fleet-change previews run in the worker.

Starts a Redis of its own, moto's S3, a Celery worker and `tfcompat serve` with the
fleet page, fills the index with N models (copies of three real checked models under
N keys), then times POST /events/s3 (an empty delivery: authenticated, parsed,
answered 202) and GET /healthz on the event listener, idle and while two previews
(`tf==2.10` added, every model assessed) run in the worker, and how long a preview
takes from the form's POST to its result on the page. Medians of the requests, in
milliseconds, with their ratio to the same request idle (measured in this run). On
one machine the worker's CPU competes with the receiver's; apart, it does not.

    .venv/bin/python bench/ui_preview.py [N] [--requests R]
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import httpx
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rows import row  # noqa: E402
from tests.pipeline.brokers import RedisServer  # noqa: E402
from tests.pipeline.services import (  # noqa: E402
    AUTH,
    cli,
    free_port,
    moto_server,
    process,
    s3,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.sinks.documents import NEW_OP, NONDEFAULT, STRIPPED, checked  # noqa: E402
from worker.sinks import matrix  # noqa: E402
from worker.sinks.index import BUILT, ModelIndex, model_from_report  # noqa: E402
from worker.sinks.memory import MemoryObjectStore  # noqa: E402

TOKEN = "bench-ui-token"
HTML = {"Accept": "text/html"}


def fill(url: str, n: int) -> None:
    client = redis.Redis.from_url(url)
    store = MemoryObjectStore()
    index = ModelIndex(client, store, ["models"], "tfcompat-reports/")
    found = []
    for model, prefix in ((NEW_OP, "vision/7"), (NONDEFAULT, "nlp/3"), (STRIPPED, "ranking/v1")):
        _, outcome, _ = checked(model, prefix=prefix, store=store)
        assert outcome.document is not None
        one = model_from_report(outcome.document, "models", str(outcome.report))
        assert one is not None
        found.append(one)
    copies = [replace(found[i % 3], key=f"team-{i % 20}/{i}/saved_model.pb") for i in range(n)]
    for start in range(0, n, 1000):
        index.put_many(copies[start : start + 1000])
    client.set(BUILT, "1")
    client.set(matrix.BUILT, "1")


def timed(call: object, n: int) -> tuple[float, list[int]]:
    took, statuses = [], []
    for _ in range(n):
        start = time.perf_counter()
        statuses.append(call().status_code)  # type: ignore[operator]
        took.append((time.perf_counter() - start) * 1000)
    return statistics.median(took), sorted(set(statuses))


def preview(page: str) -> float:
    """Seconds from the form's POST to the result on the page."""
    browser = httpx.Client(base_url=page, headers=HTML, timeout=60)
    form = browser.get("/ui/login").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', form)
    assert csrf
    browser.post("/ui/login", data={"token": TOKEN, "csrf": csrf.group(1)})
    started = time.perf_counter()
    sent = {"action": "add", "spec": "tf==2.10", "csrf": csrf.group(1)}
    location = browser.post("/ui/preview", data=sent).headers["location"]
    wait_until(lambda: "preview-summary" in browser.get(location).text, 900, "a preview", 0.2)
    return time.perf_counter() - started


def main(n: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        logs = Path(directory)
        server = RedisServer(logs)
        server.start()
        try:
            run(n, requests, server.url, logs)
        finally:
            server.stop()


def run(n: int, requests: int, broker: str, logs: Path) -> None:
    state = broker.rsplit("/", 1)[0] + "/1"
    fill(state, n)
    with moto_server(logs / "moto.log") as endpoint:
        s3(endpoint).create_bucket(Bucket="models")
        env = worker_env(
            endpoint,
            0,
            TFCOMPAT_BROKER_URL=broker,
            TFCOMPAT_REDIS_URL=state,
            TFCOMPAT_INDEX_BUCKETS='["models"]',
            TFCOMPAT_UI_ENABLED="true",
            TFCOMPAT_UI_TOKEN=TOKEN,
        )
        port, ui_port = free_port(), free_port()
        serve = cli("serve", "--port", str(port), "--ui-port", str(ui_port))
        worker = cli("worker", "--concurrency", "2", "--hostname", "bench-ui@%h")
        with process(worker, env, logs / "worker.log"), process(serve, env, logs / "serve.log"):
            events, page = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}"
            wait_until(lambda: httpx.get(f"{events}/healthz").status_code == 200, 60, "serve")
            wait_until(lambda: worker_ready(logs / "worker.log"), 60, "the worker")
            client = httpx.Client(timeout=60, headers=AUTH)
            calls = {
                "POST /events/s3": lambda: client.post(f"{events}/events/s3", json={"Records": []}),
                "GET /healthz": lambda: client.get(f"{events}/healthz"),
            }
            idle = {name: timed(call, requests) for name, call in calls.items()}
            alone = preview(page)
            took: list[float] = []
            runners = [threading.Thread(target=lambda: took.append(preview(page))) for _ in "ab"]
            for runner in runners:
                runner.start()
            time.sleep(1)  # both submitted and in the worker
            busy = {name: timed(call, requests) for name, call in calls.items()}
            for runner in runners:
                runner.join()
    print(f"{n} models; one preview alone {alone:.1f} s; two at once {max(took):.1f} s")
    print(f"{'request':18} {'idle ms':>8} {'previews ms':>12} {'x idle':>7}  statuses")
    for name in calls:
        (quiet, ok), (loaded, during) = idle[name], busy[name]
        print(f"{name:18} {quiet:8.1f} {loaded:12.1f} {loaded / quiet:7.1f}  {ok} {during}")
    statuses = {s for _, during in busy.values() for s in during}
    row(
        f"event listener while 2 previews of {n} models run",
        ", ".join(f"{k} {busy[k][0]:.0f} ms" for k in calls),
        ", ".join(f"idle {idle[k][0]:.0f} ms" for k in calls),
        "every request answered (202/200)",
        statuses == {200, 202},
    )
    row(f"a preview of {n} models, POST to result", f"{alone:.1f} s", "", "", None)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("n", nargs="?", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    main(args.n, args.requests)
