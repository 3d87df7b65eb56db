"""The reconciler's registry and stalled-run parts over a real Redis: SageMaker packages
(moto's SageMaker lists them) tagged under another fleet are found a window at a time;
a run whose unit was dropped on purpose is found stalled, its pending units are sent
again from the stored plan, and the run records its digest when they report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import redis
from moto import mock_aws

from tests.redis_server import REDIS_PORT
from worker.pipeline.app import TASK_FLEET_CHUNK, TASK_FLEET_VERSION
from worker.pipeline.fanout import object_units, version_unit
from worker.pipeline.reconciler import resend_stalled, stale_registered
from worker.registries.tags import FLEET, STATUS
from worker.sinks.fleet_runs import RUN, FleetRuns, Unit
from worker.sinks.index import FLEET_APPLIED
from worker.sinks.sagemaker import SageMakerRegistry

REDIS_DB = 6
STALL = 600.0
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/tensorflow-inference:2.13.0-cpu"


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
    client.flushdb()
    yield client
    client.flushdb()


class PackageTags(SageMakerRegistry):
    """moto lists and describes the packages; their tags (moto cannot tag a model
    package) are kept here, one dict per ARN, and each read is counted."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.package_tags: dict[str, dict[str, str]] = {}
        self.reads: list[str] = []

    def tags(self, arn: str) -> dict[str, str]:
        self.reads.append(arn)
        return dict(self.package_tags.get(arn, {}))


@pytest.fixture
def packages() -> Iterator[tuple[PackageTags, list[str]]]:
    with mock_aws():
        sm = boto3.client("sagemaker", region_name="us-east-1")
        sm.create_model_package_group(ModelPackageGroupName="ranking")
        spec = {
            "Containers": [{"Image": IMAGE, "ModelDataUrl": "s3://models/r/model.tar.gz"}],
            "SupportedContentTypes": ["application/json"],
            "SupportedResponseMIMETypes": ["application/json"],
        }
        arns = [
            str(
                sm.create_model_package(
                    ModelPackageGroupName="ranking", InferenceSpecification=spec
                )["ModelPackageArn"]
            )
            for _ in range(5)
        ]
        yield PackageTags(sm), arns


# SageMaker packages: another fleet's digest is stale; ours, or none of our tags, is not.
def test_packages_tagged_under_another_fleet_are_found_a_window_at_a_time(
    client: redis.Redis, packages: tuple[PackageTags, list[str]]
) -> None:
    registry, arns = packages
    assert sorted(registry.package_arns()) == sorted(arns)
    registry.package_tags = {
        arns[0]: {STATUS: "compatible", FLEET: "old"},
        arns[1]: {STATUS: "compatible", FLEET: "new"},
        arns[2]: {"team": "ranking"},  # never checked by us
        arns[3]: {STATUS: "incompatible", FLEET: "old"},
        arns[4]: {STATUS: "compatible"},  # checked before digests were tagged
    }
    found: list[tuple[str, str, str]] = []
    for _ in range(3):  # a batch of 2: three runs make one pass
        found += stale_registered(client, "new", 2, sagemaker=registry)
    assert sorted(found) == sorted(("sagemaker", "", a) for a in (arns[0], arns[3], arns[4]))
    assert sorted(registry.reads) == sorted(arns)  # each package's tags read once a pass
    assert stale_registered(client, "new", 2, sagemaker=registry)  # the next pass begins


def test_a_stale_package_is_sent_as_its_planned_unit() -> None:
    arn = "arn:aws:sagemaker:us-east-1:123456789012:model-package/ranking/1"
    unit = version_unit("sagemaker", "", arn)
    assert unit.kind == "sagemaker" and unit.items == ("", arn)


# A run with a dropped unit: stalled after the stated time, its pending units sent again.
def plan() -> list[Unit]:
    chunks = object_units([f"models/m{i}" for i in range(6)], 3)
    return [*chunks, version_unit("mlflow", "churn", "3")]


def test_a_stalled_run_gets_its_pending_units_sent_again_and_finishes(
    client: redis.Redis,
) -> None:
    runs = FleetRuns(client)
    units = plan()
    runs.start("d1", "fleet.yaml", units)
    runs.complete("d1", units[0], ok=True)  # the other chunk and the version are dropped
    sent: list[tuple[str, dict[str, Any]]] = []

    def send(task: str, payload: dict[str, Any]) -> None:
        sent.append((task, payload))

    now = time.time()
    assert resend_stalled(runs, "d1", STALL, send, now=now + 60) == 0  # not stalled yet
    assert not runs.progress().stalled(now + 60, STALL)
    assert runs.progress().stalled(now + STALL + 60, STALL)
    assert resend_stalled(runs, "d2", STALL, send, now=now + STALL + 60) == 0  # another fleet
    assert resend_stalled(runs, "d1", STALL, send, now=now + STALL + 60) == 2
    assert sorted(task for task, _ in sent) == [TASK_FLEET_CHUNK, TASK_FLEET_VERSION]
    assert {Unit.from_json(p["unit"]) for _, p in sent} == {units[1], units[2]}
    assert all(p["digest"] == "d1" and p["fleet"] == "fleet.yaml" for _, p in sent)
    assert resend_stalled(runs, "d1", STALL, send, now=now + STALL + 120) == 0  # once a period
    progress = runs.progress()
    assert (progress.resent, progress.state) == (2, "running")
    for _, payload in sent:  # what the workers do with what was sent again
        runs.complete("d1", Unit.from_json(payload["unit"]), ok=True)
    runs.complete("d1", units[1], ok=True)  # the dropped original, late after all
    progress = runs.progress()
    assert (progress.state, progress.done, progress.planned) == ("applied", 7, 7)
    assert client.get(FLEET_APPLIED) == b"d1"
    assert resend_stalled(runs, "d1", STALL, send, now=now + 10 * STALL) == 0


def test_a_failed_unit_is_left_to_the_dead_letters(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    units = plan()
    runs.start("d1", "fleet.yaml", units)
    runs.complete("d1", units[0], ok=True)
    runs.complete("d1", units[2], ok=False)
    assert runs.outstanding("d1") == [units[1]]


def fleet_status(stall_after: int, *args: str) -> str:
    """`tfcompat fleet status` in its own process, as an operator runs it."""
    env = {
        **os.environ,
        "TFCOMPAT_REDIS_URL": f"redis://127.0.0.1:{REDIS_PORT}/{REDIS_DB}",
        "TFCOMPAT_FLEET_STALL_AFTER": str(stall_after),
    }
    command = [sys.executable, "-m", "worker.cli", "fleet", "status", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout


def test_fleet_status_shows_a_stalled_run_with_its_age(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    runs.start("d1", "fleet.yaml", plan())
    long_ago = time.time() - 2 * 3600 - 5 * 60
    client.hset(RUN, mapping={"started": long_ago, "progressed": long_ago})
    assert "stalled: running, no unit reported for 2h 5m" in fleet_status(3600)
    shown = json.loads(fleet_status(3600, "--json"))
    assert shown["stalled"] is True and shown["state"] == "running"
    assert 2 * 3600 < shown["idle_s"] < 3 * 3600
    assert json.loads(fleet_status(86400, "--json"))["stalled"] is False
