"""A whole worker lost (its main process and its pool, SIGKILL at once, as when its
machine dies) gives its tasks back within a minute, while a live worker's long task is
never handed to a second one:
- Redis: the lost worker stops renewing its tasks' visibility, so they lapse after
  TFCOMPAT_VISIBILITY_TIMEOUT and the next sweep of a live worker requeues them; a
  live worker keeps renewing, however long its check runs.
- RabbitMQ: the broker requeues a consumer's unacknowledged tasks when its connection
  drops, at once.
- SQS (moto's): nothing renews a message's visibility; it comes back when its
  visibility timeout ends.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pipeline.brokers import rabbitmq_vhost
from tests.pipeline.conftest import _redis_ready
from tests.pipeline.proxy import FaultyProxy
from tests.pipeline.services import (
    cli,
    process,
    s3,
    upload_tree,
    wait_for_tags,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.redis_server import redis_url
from tests.truth import SHARED
from worker.model.events import ObjectEvent
from worker.pipeline.app import RESTORE_INTERVAL, TASK_CHECK_OBJECT, create_app
from worker.settings import Settings

pytestmark = pytest.mark.services
MODEL = SHARED / "artifacts/tf2.21/new_op"
DB = 3
LEASE = "4"  # TFCOMPAT_VISIBILITY_TIMEOUT here: seconds


@pytest.fixture
def proxy(endpoint: str) -> Iterator[FaultyProxy]:
    with FaultyProxy(endpoint) as p:
        yield p


def received(log: Path) -> int:
    return len(re.findall(r"tfcompat\.check_object\[[^]]+\] received", log.read_text()))


def enqueue(env: dict[str, str], bucket: str, key: str) -> None:
    options = json.loads(env.get("TFCOMPAT_BROKER_TRANSPORT_OPTIONS", "{}"))
    settings = Settings(
        broker_url=env["TFCOMPAT_BROKER_URL"],
        broker_transport_options=options,
        visibility_timeout=int(env.get("TFCOMPAT_VISIBILITY_TIMEOUT", "45")),
        task_time_limit=int(env.get("TFCOMPAT_TASK_TIME_LIMIT", "1200")),
    )
    event = ObjectEvent(bucket, key, "ObjectCreated:Put")
    create_app(settings).send_task(TASK_CHECK_OBJECT, args=[event.to_json()])


def worker(name: str) -> list[str]:
    return cli("worker", "--concurrency", "1", "--hostname", f"{name}@%h")


def sqs_broker(endpoint: str) -> dict[str, str]:
    host = endpoint.removeprefix("http://")
    return {
        "TFCOMPAT_BROKER_URL": f"sqs://test:test@{host}",
        "TFCOMPAT_BROKER_TRANSPORT_OPTIONS": '{"is_secure": false, "queue_name_prefix": "lost-"}',
        "TFCOMPAT_REDIS_URL": redis_url(DB),
        # Nothing renews an SQS message: a task may run only for less than its visibility.
        "TFCOMPAT_VISIBILITY_TIMEOUT": "6",
        "TFCOMPAT_TASK_TIME_LIMIT": "5",
    }


@pytest.mark.parametrize("broker", ["redis", "rabbitmq", "sqs"])
def test_a_lost_worker_s_task_is_done_by_a_live_worker_within_a_minute(
    broker: str, endpoint: str, proxy: FaultyProxy, logs: Path
) -> None:
    _redis_ready(DB)
    client = s3(endpoint)
    bucket = f"lost-{broker}"
    client.create_bucket(Bucket=bucket)
    upload_tree(client, bucket, "m/1", MODEL)
    extra = {"TFCOMPAT_VISIBILITY_TIMEOUT": LEASE}
    if broker == "rabbitmq":
        extra = {"TFCOMPAT_BROKER_URL": rabbitmq_vhost(), "TFCOMPAT_REDIS_URL": redis_url(DB)}
    if broker == "sqs":
        extra = sqs_broker(endpoint)
    env = worker_env(proxy.url, DB, **extra)
    logs_of = {name: logs / f"lost-{broker}-{name}.log" for name in ("a", "b")}
    proxy.delay = 1.0  # every object read is slow: the task is surely running when killed
    with (
        process(worker(f"a-{broker}"), env, logs_of["a"]) as a,
        process(worker(f"b-{broker}"), env, logs_of["b"]) as b,
    ):
        for log in logs_of.values():
            wait_until(lambda log=log: worker_ready(log), 60, f"worker {log.name}")
        enqueue(env, bucket, "m/1/saved_model.pb")
        doomed = wait_until(
            lambda: next((n for n, log in logs_of.items() if received(log)), None),
            30,
            "a worker to take the task",
        )
        live = "b" if doomed == "a" else "a"
        victim = a if doomed == "a" else b
        os.killpg(victim.pid, signal.SIGKILL)  # the main process and its pool, at once
        victim.wait(10)
        killed = time.monotonic()
        proxy.delay = 0.0
        wait_until(lambda: received(logs_of[live]) == 1, 60, "the live worker to get the task")
        back = time.monotonic() - killed
        tags = wait_for_tags(client, bucket, "m/1/saved_model.pb", timeout=60)
    doomed_log = logs_of[doomed]
    print(f"\n{broker}: a lost worker's task was taken by a live worker {back:.1f}s later")
    assert "task.done" not in doomed_log.read_text()
    assert tags["tfcompat:status"] == "incompatible"


def test_a_live_worker_s_long_task_is_never_handed_to_another(
    endpoint: str, proxy: FaultyProxy, logs: Path
) -> None:
    """The check runs several times the visibility timeout while both workers sweep for
    lapsed tasks every 10 s: renewal keeps it with the first worker, taken once."""
    _redis_ready(DB)
    client = s3(endpoint)
    client.create_bucket(Bucket="long-check")
    upload_tree(client, "long-check", "m/1", MODEL)
    env = worker_env(proxy.url, DB, TFCOMPAT_VISIBILITY_TIMEOUT=LEASE)
    first_log, second_log = logs / "long-first.log", logs / "long-second.log"
    proxy.delay = 10.0  # two delayed S3 requests: well past LEASE + RESTORE_INTERVAL
    with process(worker("first"), env, first_log):
        wait_until(lambda: worker_ready(first_log), 60, "the first worker")
        enqueue(env, "long-check", "m/1/saved_model.pb")
        wait_until(lambda: received(first_log) == 1, 30, "the first worker to take the task")
        started = time.monotonic()
        with process(worker("second"), env, second_log):
            wait_until(lambda: worker_ready(second_log), 60, "the second worker")
            wait_until(lambda: "task.done" in first_log.read_text(), 120, "the long check")
            took = time.monotonic() - started
            time.sleep(2)
    print(f"\nlong check: {took:.0f}s with a {LEASE}s visibility timeout, taken once")
    # Long enough that an unrenewed task would have lapsed and been swept.
    assert took > int(LEASE) + RESTORE_INTERVAL
    assert received(first_log) + received(second_log) == 1
    assert first_log.read_text().count('"task.done"') == 1
