"""A fleet change fanned out over a real worker, with nothing lost.

A durable Redis (append-only file, `appendfsync always`: the settings the docs give),
moto's S3 server, a real `mlflow server` and one `tfcompat worker` with two processes.
30 uploaded objects and 30 registered MLflow versions are checked under fleet BEFORE;
the worker is restarted with fleet AFTER (which drops the `batch-scoring` consumer and
adds `edge`), and while the change runs, pool processes are SIGKILLed several times and
the MLflow server is down for a minute. Every object and version must end with AFTER's tags
(digest, consumer tags, a dropped consumer's tag removed), each tag value written once,
and the one version the worker may not read (its model is in a bucket outside
TFCOMPAT_BUCKETS) in the dead-letter list with its cause.
"""

from __future__ import annotations

import collections
import contextlib
import http.client
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import redis

from tests.pipeline.mlflow_server import (
    MlflowServer,
    model_directory,
    register,
    tensorflow_mlmodel,
    version_tags,
)
from tests.pipeline.proxy import FaultyProxy
from tests.pipeline.services import (
    ROOT,
    cli,
    free_port,
    process,
    s3,
    upload_tree,
    wait_until,
    worker_env,
    worker_ready,
)
from worker.model.events import ObjectEvent
from worker.model.registry import RegistryJob
from worker.pipeline.app import TASK_CHECK_OBJECT, TASK_MLFLOW_VERSION, create_app
from worker.settings import Settings

pytestmark = [pytest.mark.services, pytest.mark.slow]

TF221 = ROOT / "tests" / "fixtures" / "tf-real" / "artifacts" / "tf2.21"
OBJECTS = 30
VERSIONS = 30  # three models of ten versions
OUTAGE_S = 60.0  # how long the MLflow server is down during the fleet change
BEFORE = (
    "consumers:\n"
    "  - {name: canary, tensorflow: '2.21'}\n"
    "  - {name: batch-scoring, tensorflow: '2.12'}\n"
)
AFTER = "consumers:\n  - {name: canary, tensorflow: '2.21'}\n  - {name: edge, tensorflow: '2.15'}\n"


class TagRecorder:
    """A loopback proxy in front of the MLflow server that records every tag write it
    forwards (name, version, key, value) and answers 503 while the server is down."""

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.upstream = (target.hostname or "127.0.0.1", target.port or 80)
        self.writes: list[tuple[str, str, str, str]] = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                try:
                    conn = http.client.HTTPConnection(*recorder.upstream, timeout=60)
                    conn.request(self.command, self.path, body=body, headers=headers)
                    response = conn.getresponse()
                    status, data = response.status, response.read()
                    answer = response.getheaders()
                    conn.close()
                except OSError:
                    status, data, answer = 503, b"{}", []
                if status == 200 and self.path.endswith("/model-versions/set-tag"):
                    sent = json.loads(body)
                    with recorder.lock:
                        recorder.writes.append(
                            (sent["name"], sent["version"], sent["key"], sent["value"])
                        )
                self.send_response(status)
                for key, value in answer:
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PATCH = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def durable_redis(directory: Path) -> Iterator[int]:
    """A Redis of our own with the durable settings the docs give: every write in the
    append-only file before Redis answers."""
    port = free_port()
    args = [
        "redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory),
        "--appendonly", "yes", "--appendfsync", "always", "--save", "",
    ]  # fmt: skip
    with process(args, dict(os.environ), directory / "redis.log"):
        client = redis.Redis(port=port, socket_timeout=5)
        wait_until(client.ping, 30, "the durable Redis")
        yield port


def pool_children(pid: int) -> list[int]:
    """The worker's pool processes: the main process's children, from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


@dataclass
class Fanout:
    env: dict[str, str]
    logs: Path
    s3: Any
    mlflow: MlflowServer
    recorder: TagRecorder
    s3_writes: list[str]
    redis_port: int
    before: Path
    after: Path
    objects: list[str] = field(default_factory=list)
    versions: list[tuple[str, str]] = field(default_factory=list)


def digest_of(fleet: Path) -> str:
    from worker.catalog.catalog import load_catalog
    from worker.fleet.checker import Checker
    from worker.fleet.fleet import load_fleet

    catalog = load_catalog()
    loaded = load_fleet(fleet, catalog)
    return Checker(loaded.consumers, loaded.policy, catalog, loaded.source).fleet_digest


def object_tags(stack: Fanout, key: str) -> dict[str, str]:
    found = stack.s3.get_object_tagging(Bucket="fanout-models", Key=key)["TagSet"]
    return {t["Key"]: t["Value"] for t in found}


@pytest.fixture
def fanout(endpoint: str, tmp_path: Path) -> Iterator[Fanout]:
    logs = tmp_path / "logs"
    logs.mkdir()
    client = s3(endpoint)
    for bucket in ("fanout-models", "fanout-reports"):
        with contextlib.suppress(Exception):
            client.create_bucket(Bucket=bucket)
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(BEFORE)
    after.write_text(AFTER)
    s3_writes: list[str] = []
    with (
        durable_redis(tmp_path) as port,
        FaultyProxy(endpoint) as s3_proxy,
    ):
        # every PUT of an object's tags, as the worker sends it through the proxy
        def record(method: str, path: str) -> bool:
            if method == "PUT" and "tagging" in path and "/fanout-models/" in path:
                s3_writes.append(path.split("?")[0])
            return False

        s3_proxy.hold = record
        server = MlflowServer(tmp_path / "mlflow-root", worker_env(endpoint, 0))
        server.root.mkdir()
        server.start()
        recorder = TagRecorder(server.url)
        try:
            env = worker_env(
                endpoint,
                0,
                TFCOMPAT_BROKER_URL=f"redis://127.0.0.1:{port}/0",
                TFCOMPAT_S3_ENDPOINT_URL=s3_proxy.url,
                TFCOMPAT_MLFLOW_TRACKING_URI=recorder.url,
                TFCOMPAT_REPORT_BUCKET="fanout-reports",
                TFCOMPAT_BUCKETS=json.dumps(["fanout-models", "fanout-reports"]),
                TFCOMPAT_FLEET=str(before),
                TFCOMPAT_FLEET_CHUNK_SIZE="4",
                TFCOMPAT_VISIBILITY_TIMEOUT="10",
                TFCOMPAT_VERSION_LOCK_LEASE="10",
            )
            env["MLFLOW_TRACKING_URI"] = server.url
            yield Fanout(env, logs, client, server, recorder, s3_writes, port, before, after)
        finally:
            recorder.close()
            server.stop()


def check_everything(stack: Fanout, app: Any) -> None:
    """Upload and register the models, and have the worker check each under BEFORE."""
    for i in range(OBJECTS):
        prefix = f"team-{i % 3}/model-{i}/1"
        upload_tree(stack.s3, "fanout-models", prefix, TF221 / "new_op")
        key = f"{prefix}/saved_model.pb"
        stack.objects.append(key)
        app.send_task(
            TASK_CHECK_OBJECT,
            args=[ObjectEvent("fanout-models", key, "ObjectCreated:Put").to_json()],
        )
    directory = model_directory({"tf2model": TF221 / "new_op"}, tensorflow_mlmodel())
    for i in range(VERSIONS):
        name = f"fanout-{i % 3}"
        version = str(register(stack.mlflow.url, name, directory).version)
        stack.versions.append((name, version))
        job = RegistryJob("mlflow", name, version, f"setup-{i}")
        app.send_task(TASK_MLFLOW_VERSION, args=[job.to_json()])
    # the one version the worker may not read: its model sits outside TFCOMPAT_BUCKETS
    from mlflow import MlflowClient

    mlflow = MlflowClient(stack.mlflow.url)
    mlflow.create_registered_model("forbidden")
    mlflow.create_model_version("forbidden", "s3://somebody-elses-bucket/model")


@pytest.mark.timeout(900)  # 2-5 min on a loaded 2-core machine, MLflow's restart included
def test_a_fleet_change_survives_kills_and_an_mlflow_outage_and_writes_each_tag_once(
    fanout: Fanout,
) -> None:
    stack = fanout
    app = create_app(Settings(broker_url=stack.env["TFCOMPAT_BROKER_URL"]))
    before, after = digest_of(stack.before), digest_of(stack.after)
    worker = cli("worker", "--concurrency", "2", "--hostname", "fanout@%h")
    with process(worker, stack.env, stack.logs / "worker-before.log"):
        wait_until(lambda: worker_ready(stack.logs / "worker-before.log"), 90, "the worker")
        check_everything(stack, app)
        wait_until(
            lambda: (
                all(
                    object_tags(stack, k).get("tfcompat:graph-def", "").endswith(before)
                    for k in stack.objects
                )
                and all(
                    version_tags(stack.mlflow.url, n, v).get("tfcompat.fleet") == before
                    for n, v in stack.versions
                )
            ),
            600,
            "every object and version checked under BEFORE",
            interval=2,
        )
    assert all(
        version_tags(stack.mlflow.url, n, v)["tfcompat.consumer.batch-scoring"] == "incompatible"
        for n, v in stack.versions
    )

    # The fleet change: a worker starts on AFTER, claims it, plans and fans out.
    env = {**stack.env, "TFCOMPAT_FLEET": str(stack.after), "TFCOMPAT_WORKER_MAX_MEMORY_MB": "1"}
    log = stack.logs / "worker-after.log"
    with process(worker, env, log) as main:
        wait_until(lambda: worker_ready(log), 90, "the worker on AFTER")
        wait_until(lambda: "fleet.planned" in log.read_text(), 120, "the plan")
        # MLflow down for a minute, for real, while versions are being re-checked; in that
        # minute a busy pool process is SIGKILLed four times
        down = time.monotonic()
        stack.mlflow.stop()
        # Each kill waits for the pool to have a process again: a loaded machine may take
        # several seconds to start the replacement of the last one killed.
        kills = 0
        while kills < 4 and time.monotonic() - down < OUTAGE_S - 5:
            time.sleep(2)
            children = pool_children(main.pid)
            if children:
                os.kill(children[0], signal.SIGKILL)
                kills += 1
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down)))
        stack.mlflow.start()
        wait_until(stack.mlflow.healthy, 60, "MLflow back")
        assert kills >= 3

        def converged() -> bool:
            objects = all(
                object_tags(stack, k).get("tfcompat:graph-def", "").endswith(f"fleet={after}")
                for k in stack.objects
            )
            versions = [version_tags(stack.mlflow.url, n, v) for n, v in stack.versions]
            return objects and all(
                t.get("tfcompat.fleet") == after
                and "tfcompat.consumer.batch-scoring" not in t
                and t.get("tfcompat.consumer.edge") == "incompatible"
                for t in versions
            )

        wait_until(converged, 900, "every object and version tagged under AFTER", interval=3)

        def dead_letters() -> list[dict[str, Any]]:
            listed = subprocess.run(
                cli("dead-letters", "list", "--json"),
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            found: list[dict[str, Any]] = json.loads(listed.stdout)
            return found

        letters = wait_until(dead_letters, 300, "the forbidden version's dead letter", interval=2)
    (letter,) = letters
    assert letter["task"] == "tfcompat.fleet_version"
    assert letter["args"][0]["unit"]["items"] == ["forbidden", "1"]
    assert letter["cause"] == "Unrecheckable: mlflow forbidden v1: refused"

    # Each tag value written once: no (version, key, value) twice, no object's tags put
    # twice under AFTER (BEFORE's check and AFTER's are one PUT each).
    twice = [w for w, n in collections.Counter(stack.recorder.writes).items() if n > 1]
    assert twice == []
    puts = collections.Counter(stack.s3_writes)
    assert all(n <= 2 for n in puts.values()), puts.most_common(3)

    def settled() -> dict[str, Any] | None:
        """The run's status once every unit has reported: a unit killed after its tags
        were written and before it reported is redelivered, and reports, a visibility
        timeout later."""
        found: dict[str, Any] = json.loads(
            subprocess.run(
                cli("fleet", "status", "--json"), env=env, capture_output=True, text=True,
                check=True,
            ).stdout
        )  # fmt: skip
        return found if found["done"] + found["failed"] >= found["planned"] else None

    status = wait_until(settled, 120, "every unit reported", interval=2)
    assert status["digest"] == after and status["failed"] == 1 and status["dead_letters"] == 1
    assert status["done"] == status["planned"] - 1


@pytest.mark.timeout(600)
def test_the_reconciler_retags_objects_a_lost_unit_left_under_the_old_fleet(
    fanout: Fanout,
) -> None:
    """A unit killed by the time limit is never redelivered: its objects keep the old
    fleet's tags while the change is recorded as applied. The reconciler finds them by
    the digest in their tags and sends them again, here on a worker whose pool processes
    are each replaced after every task (TFCOMPAT_WORKER_MAX_MEMORY_MB below any
    process's size): nothing is lost, and each replacement is logged."""
    stack = fanout
    app = create_app(Settings(broker_url=stack.env["TFCOMPAT_BROKER_URL"]))
    keys = []
    worker = cli("worker", "--concurrency", "2", "--hostname", "reconcile@%h")
    with process(worker, stack.env, stack.logs / "worker-before.log"):
        wait_until(lambda: worker_ready(stack.logs / "worker-before.log"), 90, "the worker")
        for i in range(3):
            prefix = f"lost/model-{i}/1"
            upload_tree(stack.s3, "fanout-models", prefix, TF221 / "new_op")
            keys.append(f"{prefix}/saved_model.pb")
            event = ObjectEvent("fanout-models", keys[-1], "ObjectCreated:Put")
            app.send_task(TASK_CHECK_OBJECT, args=[event.to_json()])
        before = digest_of(stack.before)
        wait_until(
            lambda: all(
                object_tags(stack, k).get("tfcompat:graph-def", "").endswith(before) for k in keys
            ),
            120,
            "the objects checked under BEFORE",
        )
    # AFTER recorded as applied with none of its units run: what a lost unit leaves
    from worker.sinks.index import FLEET_APPLIED

    after = digest_of(stack.after)
    redis.Redis(port=stack.redis_port).set(FLEET_APPLIED, after)
    env = {**stack.env, "TFCOMPAT_FLEET": str(stack.after), "TFCOMPAT_WORKER_MAX_MEMORY_MB": "1"}
    log = stack.logs / "worker-after.log"
    with process(worker, env, log):
        wait_until(lambda: worker_ready(log), 90, "the worker on AFTER")
        assert all(object_tags(stack, k)["tfcompat:graph-def"].endswith(before) for k in keys)
        app.send_task("tfcompat.reconcile")  # what `tfcompat beat` sends
        wait_until(
            lambda: all(
                object_tags(stack, k).get("tfcompat:graph-def", "").endswith(f"fleet={after}")
                for k in keys
            ),
            180,
            "the reconciler's re-tagging under AFTER",
            interval=1,
        )
        assert "reconcile.done" in log.read_text()
        assert "worker.process_replaced" in log.read_text()
