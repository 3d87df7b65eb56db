"""The pipeline survives what production does to it: a worker process killed
mid-task, and an object store that fails for a while."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

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
from tests.redis_server import REDIS_PORT
from tests.truth import SHARED
from worker.model.events import ObjectEvent
from worker.pipeline.app import TASK_CHECK_OBJECT, create_app
from worker.settings import Settings

pytestmark = pytest.mark.services
MODEL = SHARED / "artifacts/tf2.21/new_op"


@pytest.fixture
def proxy(endpoint: str) -> Iterator[FaultyProxy]:
    with FaultyProxy(endpoint) as p:
        yield p


def enqueue(redis_db: int, bucket: str, key: str) -> None:
    settings = Settings(broker_url=f"redis://127.0.0.1:{REDIS_PORT}/{redis_db}")
    create_app(settings).send_task(
        TASK_CHECK_OBJECT, args=[ObjectEvent(bucket, key, "ObjectCreated:Put").to_json()]
    )


def check_started(log: Path) -> bool:
    """The worker took the check task (not another task, such as a startup fleet check)."""
    return any(
        "tfcompat.check_object[" in line and "received" in line
        for line in log.read_text().splitlines()
    )


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_worker_process_killed_mid_task_is_redelivered_and_completes(
    endpoint: str, proxy: FaultyProxy, logs: Path
) -> None:
    _redis_ready(12)
    client = s3(endpoint)
    client.create_bucket(Bucket="crash")
    upload_tree(client, "crash", "m/1", MODEL)
    proxy.delay = 0.5  # every object read is slow: the task is surely running when killed
    env = worker_env(proxy.url, 12)
    log = logs / "crash-worker.log"
    with process(cli("worker", "--concurrency", "1", "--hostname", "crash@%h"), env, log) as main:
        wait_until(lambda: worker_ready(log), 60, "the worker")
        enqueue(12, "crash", "m/1/saved_model.pb")
        wait_until(lambda: check_started(log), 30, "the check task to start")
        (child,) = wait_until(lambda: children(main.pid), 10, "the pool process")
        os.kill(child, signal.SIGKILL)
        proxy.delay = 0.0
        tags = wait_for_tags(client, "crash", "m/1/saved_model.pb", timeout=120)
    assert tags["tfcompat:status"] == "incompatible"
    text = log.read_text()
    assert "signal 9" in text or "WorkerLostError" in text


def test_object_store_failing_for_a_while_is_retried_until_it_works(
    endpoint: str, proxy: FaultyProxy, logs: Path
) -> None:
    _redis_ready(13)
    client = s3(endpoint)
    client.create_bucket(Bucket="flaky")
    upload_tree(client, "flaky", "m/1", MODEL)
    proxy.fail_next = 7  # more than boto3's own three attempts: the task itself must retry
    log = logs / "flaky-worker.log"
    with process(
        cli("worker", "--concurrency", "1", "--hostname", "flaky@%h"),
        worker_env(proxy.url, 13),
        log,
    ):
        wait_until(lambda: worker_ready(log), 60, "the worker")
        enqueue(13, "flaky", "m/1/saved_model.pb")
        tags = wait_for_tags(client, "flaky", "m/1/saved_model.pb", timeout=120)
    assert tags["tfcompat:status"] == "incompatible"
    assert proxy.failed == 7
    assert '"task.retry"' in log.read_text()


def test_a_whole_worker_killed_mid_task_leaves_the_task_to_the_next_worker(
    endpoint: str, proxy: FaultyProxy, logs: Path
) -> None:
    """No process of the first worker survives to requeue it: the broker's visibility
    timeout (20 s here) gives the unacknowledged task to the worker started next."""
    _redis_ready(12)
    client = s3(endpoint)
    client.create_bucket(Bucket="crash-all")
    upload_tree(client, "crash-all", "m/1", MODEL)
    proxy.delay = 0.5
    env = worker_env(proxy.url, 12)
    first_log, second_log = logs / "killed-worker.log", logs / "next-worker.log"
    with process(
        cli("worker", "--concurrency", "1", "--hostname", "doomed@%h"), env, first_log
    ) as main:
        wait_until(lambda: worker_ready(first_log), 60, "the first worker")
        enqueue(12, "crash-all", "m/1/saved_model.pb")
        wait_until(lambda: check_started(first_log), 30, "the check task to start")
        os.killpg(main.pid, signal.SIGKILL)  # the main process and its pool, at once
        main.wait(10)
    assert "task.done" not in first_log.read_text()
    proxy.delay = 0.0
    with process(cli("worker", "--concurrency", "1", "--hostname", "next@%h"), env, second_log):
        tags = wait_for_tags(client, "crash-all", "m/1/saved_model.pb", timeout=120)
    assert tags["tfcompat:status"] == "incompatible"
    assert "task.done" in second_log.read_text()
