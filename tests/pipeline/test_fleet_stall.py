"""A fleet change's unit killed by Celery's hard time limit still ends applied.

`task_time_limit` SIGKILLs the pool process that runs a unit; Celery records the task
failed and never redelivers it (and the task's own `on_failure` never runs, so nothing
reaches the dead letters either). The run would stay `running` for good, its digest
never recorded. The reconciler's stalled-run re-send (`TFCOMPAT_FLEET_STALL_AFTER`) is
what finishes it: this test runs it for real.

moto's S3 server behind a loopback proxy, Redis, one `tfcompat worker` with two pool
processes and a short time limit, and `tfcompat beat` sending the reconciler every few
seconds. The proxy holds the first tag write of the change for longer than the limit,
once: the chunk that makes it is killed mid-way. The run must stall, have that unit
sent again by the reconciler, and end `applied` with every object tagged under the new
fleet.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.pipeline.proxy import FaultyProxy
from tests.pipeline.services import (
    ROOT,
    cli,
    process,
    s3,
    upload_tree,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.pipeline.test_fleet_fanout import AFTER, BEFORE, digest_of
from tests.redis_server import REDIS_PORT
from worker.model.events import ObjectEvent
from worker.pipeline.app import TASK_CHECK_OBJECT, create_app
from worker.settings import Settings

pytestmark = [pytest.mark.services, pytest.mark.slow]

REDIS_DB = 14
TF221 = ROOT / "tests" / "fixtures" / "tf-real" / "artifacts" / "tf2.21"
BUCKET = "stall-models"
OBJECTS = 12  # three chunks of four
TIME_LIMIT = 15  # seconds a task may run before its pool process is SIGKILLed
STALL_AFTER = 30  # above the time limit, as the docs ask


class HoldOnce:
    """The proxy's hold rule: the first PUT of an object's tags in BUCKET, once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: str | None = None

    def __call__(self, method: str, path: str) -> bool:
        if method != "PUT" or "tagging" not in path or f"/{BUCKET}/" not in path:
            return False
        with self.lock:
            if self.held is not None:
                return False
            self.held = path.split("?")[0]
            return True


@dataclass
class Stall:
    env: dict[str, str]
    logs: Path
    s3: Any
    proxy: FaultyProxy
    before: Path
    after: Path


@pytest.fixture
def stall(endpoint: str, tmp_path: Path) -> Iterator[Stall]:
    redis.Redis(port=REDIS_PORT, db=REDIS_DB, socket_timeout=5).flushdb()
    client = s3(endpoint)
    for bucket in (BUCKET, "stall-reports"):
        with contextlib.suppress(Exception):
            client.create_bucket(Bucket=bucket)
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(BEFORE)
    after.write_text(AFTER)
    with FaultyProxy(endpoint) as proxy:
        env = worker_env(
            endpoint,
            REDIS_DB,
            TFCOMPAT_S3_ENDPOINT_URL=proxy.url,
            TFCOMPAT_REPORT_BUCKET="stall-reports",
            TFCOMPAT_BUCKETS=json.dumps([BUCKET, "stall-reports"]),
            TFCOMPAT_FLEET=str(before),
            TFCOMPAT_FLEET_CHUNK_SIZE="4",
            TFCOMPAT_VISIBILITY_TIMEOUT="10",
            TFCOMPAT_RECONCILE_INTERVAL="3",
            TFCOMPAT_FLEET_STALL_AFTER=str(STALL_AFTER),
            TFCOMPAT_BEAT_SCHEDULE_FILE=str(tmp_path / "beat-schedule"),
        )
        yield Stall(env, tmp_path, client, proxy, before, after)
        proxy.release.set()


def graph_def_tag(stack: Stall, key: str) -> str:
    found = stack.s3.get_object_tagging(Bucket=BUCKET, Key=key)["TagSet"]
    return {t["Key"]: t["Value"] for t in found}.get("tfcompat:graph-def", "")


def fleet_status(env: dict[str, str]) -> dict[str, Any]:
    shown = subprocess.run(
        cli("fleet", "status", "--json"), env=env, capture_output=True, text=True, check=True
    )
    found: dict[str, Any] = json.loads(shown.stdout)
    return found


@pytest.mark.timeout(600)  # 1-3 min on a loaded 2-core machine
def test_a_unit_killed_by_the_time_limit_is_sent_again_and_the_change_ends_applied(
    stall: Stall,
) -> None:
    stack = stall
    app = create_app(Settings(broker_url=stack.env["TFCOMPAT_BROKER_URL"]))
    before, after = digest_of(stack.before), digest_of(stack.after)
    keys = []
    worker = cli("worker", "--concurrency", "2", "--hostname", "stall@%h")
    with process(worker, stack.env, stack.logs / "worker-before.log"):
        wait_until(lambda: worker_ready(stack.logs / "worker-before.log"), 90, "the worker")
        for i in range(OBJECTS):
            prefix = f"team-{i % 3}/model-{i}/1"
            upload_tree(stack.s3, BUCKET, prefix, TF221 / "new_op")
            keys.append(f"{prefix}/saved_model.pb")
            event = ObjectEvent(BUCKET, keys[-1], "ObjectCreated:Put")
            app.send_task(TASK_CHECK_OBJECT, args=[event.to_json()])
        wait_until(
            lambda: all(graph_def_tag(stack, k).endswith(f"fleet={before}") for k in keys),
            300,
            "every object checked under BEFORE",
            interval=1,
        )

    # The change, under a short time limit: the first tag write it makes hangs.
    hold = HoldOnce()
    stack.proxy.hold = hold
    env = {
        **stack.env,
        "TFCOMPAT_FLEET": str(stack.after),
        "TFCOMPAT_TASK_TIME_LIMIT": str(TIME_LIMIT),
    }
    log = stack.logs / "worker-after.log"
    with process(worker, env, log), process(cli("beat"), env, stack.logs / "beat.log"):
        wait_until(lambda: worker_ready(log), 90, "the worker on AFTER")
        wait_until(lambda: "fleet.planned" in log.read_text(), 120, "the plan")
        wait_until(stack.proxy.held.is_set, 120, "the held tag write")
        wait_until(
            lambda: "Hard time limit" in log.read_text(),
            TIME_LIMIT + 60,
            "the time limit's kill",
        )
        stack.proxy.release.set()  # the killed process's request may now go through

        status = wait_until(
            lambda: (lambda s: s if s["state"] != "running" else None)(fleet_status(env)),
            STALL_AFTER + 240,
            "the run to end",
            interval=2,
        )
        assert status["digest"] == after
        assert status["state"] == "applied", status
        assert status["failed"] == 0 and status["dead_letters"] == 0
        assert status["resent"] >= 1  # the reconciler sent the killed unit again
        assert "reconcile.stalled_run" in log.read_text()
    assert all(graph_def_tag(stack, k).endswith(f"fleet={after}") for k in keys)
