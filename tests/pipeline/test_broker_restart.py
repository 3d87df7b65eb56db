"""What the receiver acknowledged survives a broker restart in the middle of a burst,
for every broker we support: Redis as we ship it (AOF, `appendfsync always`), killed
with SIGKILL and started again on its data, and RabbitMQ (durable queue, persistent
messages, publisher confirms) with its application stopped and started.

The sender behaves as S3, MinIO and GitHub do: it retries a delivery answered 503
or not answered at all, so every event ends up acknowledged once (202). Required:
every acknowledged event's object is tagged.

The restart always catches a check in flight: the worker's read of one object is
held at the S3 endpoint (a proxy) until the broker has gone down, so that task was
taken on the connection the restart breaks and can never be acknowledged on it
(with Redis, it must lapse and be handed out again; a worker that kept renewing
its lease never did it, and only the timing of a busy CI machine showed that).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.pipeline.brokers import rabbitmq_stopped, rabbitmq_vhost, redis_server
from tests.pipeline.conftest import _redis_ready
from tests.pipeline.proxy import FaultyProxy
from tests.pipeline.services import (
    AUTH,
    cli,
    free_port,
    process,
    s3,
    s3_event,
    tags_of,
    upload_tree,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.redis_server import redis_url
from tests.truth import SHARED

pytestmark = pytest.mark.services
MODEL = SHARED / "artifacts/tf2.21/new_op"
EVENTS = 30
SQS_EVENTS = 12
PACE = 0.5  # seconds between events: the restart falls in the middle of the burst
IN_FLIGHT = EVENTS // 3  # the upload whose check is running when the broker goes down
STATE_DB = 5  # claims and the index, when the broker is not Redis


@dataclass
class Burst:
    """Delivers each event until it is acknowledged (202), as a retrying sender does."""

    receiver: str
    accepted: list[str] = field(default_factory=list)
    refused: int = 0  # 503s and timeouts along the way
    lock: threading.Lock = field(default_factory=threading.Lock)

    def deliver(self, key: str, body: dict[str, Any], at: float, deadline: float) -> None:
        time.sleep(max(0.0, at - time.monotonic()))
        while time.monotonic() < deadline:
            try:
                answer = httpx.post(
                    f"{self.receiver}/events/s3", json=body, headers=AUTH, timeout=5
                )
            except httpx.HTTPError:
                answer = None
            if answer is not None and answer.status_code == 202:
                assert answer.json()["accepted"] == 1
                with self.lock:
                    self.accepted.append(key)
                return
            with self.lock:
                self.refused += 1
            time.sleep(0.2)
        raise TimeoutError(f"{key} was never acknowledged")


@dataclass
class Broker:
    env: dict[str, str]
    restart: Callable[[], None]


@pytest.fixture(params=["redis", "rabbitmq"])
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Broker]:
    if request.param == "redis":
        with redis_server(tmp_path) as server:

            def restart_redis() -> None:
                server.kill()
                time.sleep(2)
                server.start()

            yield Broker({"TFCOMPAT_BROKER_URL": server.url}, restart_redis)
        return
    url = rabbitmq_vhost()
    _redis_ready(STATE_DB)

    def restart_rabbitmq() -> None:
        with rabbitmq_stopped():
            time.sleep(2)

    yield Broker(
        {"TFCOMPAT_BROKER_URL": url, "TFCOMPAT_REDIS_URL": redis_url(STATE_DB)},
        restart_rabbitmq,
    )


def run_burst(
    events: int,
    name: str,
    broker_env: dict[str, str],
    restart: Callable[[], None] | None,
    endpoint: str,
    logs: Path,
) -> tuple[Burst, list[str]]:
    """`events` uploads announced to the receiver; with `restart`, the broker restarts
    while the check of upload `IN_FLIGHT` is reading its object. Returns the burst and
    the keys tagged."""
    client = s3(endpoint)
    bucket = f"restart-{name}"
    client.create_bucket(Bucket=bucket)
    keys = []
    for n in range(events):
        upload_tree(client, bucket, f"m/{n}", MODEL)
        keys.append(f"m/{n}/saved_model.pb")
    bodies = {key: s3_event(client, bucket, key) for key in keys}
    with FaultyProxy(endpoint) as proxy:
        held_once = threading.Lock()

        def hold(method: str, path: str) -> bool:
            """The first object read of the in-flight upload waits for the restart."""
            return (
                restart is not None
                and method == "GET"
                and f"/m/{IN_FLIGHT}/saved_model.pb" in path
                and held_once.acquire(blocking=False)
            )

        proxy.hold = hold
        env = worker_env(proxy.url, 0, **broker_env)
        port = free_port()
        burst = Burst(f"http://127.0.0.1:{port}")
        worker_log = logs / f"restart-{name}-worker.log"
        with (
            process(cli("serve", "--port", str(port)), env, logs / f"restart-{name}-receiver.log"),
            process(
                cli("worker", "--concurrency", "2", "--hostname", f"{name}@%h"), env, worker_log
            ),
        ):
            wait_until(lambda: worker_ready(worker_log), 60, "the worker")
            start = time.monotonic()
            deadline = start + 180
            with ThreadPoolExecutor(events) as senders:  # one event every PACE seconds
                futures = [
                    senders.submit(burst.deliver, k, bodies[k], start + n * PACE, deadline)
                    for n, k in enumerate(keys)
                ]
                if restart is not None:
                    assert proxy.held.wait(60), "the in-flight check never read its object"
                    restart()
                    proxy.release.set()
                for future in futures:
                    future.result()
            tagged = wait_until(
                lambda: (done := [k for k in keys if tags_of(client, bucket, k)]) == keys and done,
                180,
                "every acknowledged object tagged",
            )
    print(
        f"\n{name}: {events} events, {len(burst.accepted)} acknowledged "
        f"({burst.refused} refusals retried), {len(tagged)} tagged"
    )
    assert sorted(burst.accepted) == sorted(keys)
    return burst, tagged


def test_a_broker_restart_mid_burst_loses_no_acknowledged_event(
    broker: Broker, endpoint: str, logs: Path, request: pytest.FixtureRequest
) -> None:
    name = f"{request.node.callspec.id}-restart"
    _, tagged = run_burst(EVENTS, name, broker.env, broker.restart, endpoint, logs)
    assert len(tagged) == EVENTS


def test_a_burst_through_the_sqs_broker_is_all_tagged(endpoint: str, logs: Path) -> None:
    """SQS is AWS's to keep (moto keeps nothing across a restart, so none is tried here):
    the receiver's 202 waits for SendMessage, the worker deletes a message only when done."""
    _redis_ready(STATE_DB)
    env = {
        "TFCOMPAT_BROKER_URL": f"sqs://test:test@{endpoint.removeprefix('http://')}",
        "TFCOMPAT_BROKER_TRANSPORT_OPTIONS": '{"is_secure": false, "queue_name_prefix": "burst-"}',
        "TFCOMPAT_REDIS_URL": redis_url(STATE_DB),
        # Nothing renews an SQS message: a task may run only for less than its visibility.
        "TFCOMPAT_VISIBILITY_TIMEOUT": "300",
        "TFCOMPAT_TASK_TIME_LIMIT": "240",
    }
    _, tagged = run_burst(SQS_EVENTS, "sqs", env, None, endpoint, logs)
    assert len(tagged) == SQS_EVENTS
