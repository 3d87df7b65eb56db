"""Session-wide real services for the pipeline tests."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.pipeline.services import (
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
from tests.redis_server import REDIS_PORT

REDIS_DB = 11
_names = itertools.count()


@dataclass
class Stack:
    endpoint: str
    env: dict[str, str]
    receiver: str
    s3: Any
    logs: Path
    worker_metrics: str  # the worker's Prometheus exporter (tfcompat worker --metrics-port)
    receiver_metrics: str  # the receiver's exporter (tfcompat serve --metrics-port)

    def bucket(self, versioned: bool = False) -> str:
        name = f"models-{next(_names)}"
        self.s3.create_bucket(Bucket=name)
        if versioned:
            self.s3.put_bucket_versioning(
                Bucket=name, VersioningConfiguration={"Status": "Enabled"}
            )
        return name

    def post(self, path: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        sent = {**AUTH, **(headers or {})}
        return httpx.post(f"{self.receiver}{path}", json=body, headers=sent, timeout=30)


def _redis_ready(db: int) -> redis.Redis:
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=db, socket_timeout=5)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail(f"Redis is not answering on 127.0.0.1:{REDIS_PORT} (make test starts it)")
    client.flushdb()
    return client


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("logs")


@pytest.fixture(scope="session")
def endpoint(logs: Path) -> Iterator[str]:
    with moto_server(logs / "moto.log") as url:
        yield url


@pytest.fixture(scope="session")
def stack(endpoint: str, logs: Path) -> Iterator[Stack]:
    """moto + Redis + one Celery worker process + the receiver over a socket."""
    _redis_ready(REDIS_DB)
    env = worker_env(endpoint, REDIS_DB)
    port, metrics_port, receiver_metrics = free_port(), free_port(), free_port()
    worker = cli("worker", "--concurrency", "2", "--hostname", "main@%h")
    serve = cli("serve", "--port", str(port), "--metrics-port", str(receiver_metrics))
    with (
        process([*worker, "--metrics-port", str(metrics_port)], env, logs / "worker.log"),
        process(serve, env, logs / "receiver.log"),
    ):
        receiver = f"http://127.0.0.1:{port}"
        wait_until(
            lambda: httpx.get(f"{receiver}/healthz", timeout=5).status_code == 200,
            60,
            "the receiver's /healthz",
        )
        wait_until(lambda: worker_ready(logs / "worker.log"), 60, "the worker")
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        served = f"http://127.0.0.1:{receiver_metrics}/metrics"
        yield Stack(endpoint, env, receiver, s3(endpoint), logs, metrics, served)
