"""The receiver while its broker is down or hangs: every delivery is answered 503 at
once (TFCOMPAT_PUBLISH_TIMEOUT, 0.8 s), /healthz and /metrics keep answering, and once the
broker is back deliveries are acknowledged again without restarting anything.

The client timeouts below are bounds against a receiver that blocks (before, one
POST took about 40 s and a hung broker held it for ever), not measurements: the
latencies are in bench/receiver_outage.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.pipeline.brokers import RedisServer, redis_server
from tests.pipeline.services import AUTH, Receiver, receiver_process, wait_until, worker_env

pytestmark = pytest.mark.services
BOUND = 5.0  # seconds: six times the publish timeout
EVENT = {
    "Records": [
        {
            "eventName": "ObjectCreated:Put",
            "eventTime": "2026-12-01T12:00:00.000Z",
            "s3": {"bucket": {"name": "models"}, "object": {"key": "m/1/saved_model.pb"}},
        }
    ]
}


@pytest.fixture
def receiver(tmp_path: Path, endpoint: str, logs: Path) -> Iterator[tuple[Receiver, RedisServer]]:
    with redis_server(tmp_path) as broker:
        env = worker_env(endpoint, 0, TFCOMPAT_BROKER_URL=broker.url)
        with receiver_process(env, logs / "outage-receiver.log") as url:
            yield url, broker


def deliver(url: str) -> int:
    return httpx.post(f"{url}/events/s3", json=EVENT, headers=AUTH, timeout=BOUND).status_code


def probes_answer(url: Receiver) -> tuple[int, int]:
    health = httpx.get(f"{url}/healthz", timeout=BOUND).status_code
    metrics = httpx.get(url.metrics, timeout=BOUND).status_code
    return health, metrics


def test_a_dead_broker_gets_503s_and_a_restarted_one_202s(
    receiver: tuple[Receiver, RedisServer],
) -> None:
    url, broker = receiver
    assert deliver(url) == 202
    broker.kill()
    assert [deliver(url) for _ in range(5)] == [503] * 5
    assert probes_answer(url) == (503, 200)
    broker.start()
    wait_until(lambda: deliver(url) == 202, 30, "a delivery acknowledged again")
    assert broker.client().llen("tfcompat") >= 2
    assert probes_answer(url) == (200, 200)


def test_a_hung_broker_holds_no_delivery_and_no_probe(
    receiver: tuple[Receiver, RedisServer],
) -> None:
    url, broker = receiver
    assert deliver(url) == 202
    broker.pause()  # accepts connections, answers nothing
    try:
        assert [deliver(url) for _ in range(12)] == [503] * 12  # more than the handoff threads
        assert probes_answer(url) == (503, 200)
    finally:
        broker.resume()
    wait_until(lambda: deliver(url) == 202, 30, "a delivery acknowledged again")
    assert probes_answer(url) == (200, 200)
