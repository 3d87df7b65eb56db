"""A fleet change's counters in a real Redis: each unit counted once, the digest recorded
as applied exactly once and only with no unit failing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.redis_server import REDIS_PORT
from worker.sinks.fleet_runs import FleetRuns, Unit
from worker.sinks.index import FLEET_APPLIED

REDIS_DB = 3
CHUNK = Unit("objects:a", "objects", ("b/one", "b/two", "b/three"))
VERSION = Unit("mlflow:x", "mlflow", ("churn", "3"))


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
    client.flushdb()
    yield client
    client.flushdb()


def test_the_last_unit_records_the_digest_as_applied_once(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    runs.start("d1", "fleet.yaml", [CHUNK, VERSION])
    assert not runs.complete("d1", CHUNK, ok=True).applied
    assert client.get(FLEET_APPLIED) is None
    assert runs.complete("d1", VERSION, ok=True).applied
    assert client.get(FLEET_APPLIED) == b"d1"
    assert not runs.complete("d1", VERSION, ok=True).applied  # redelivered: nothing new
    progress = runs.progress()
    assert (progress.state, progress.planned, progress.done, progress.failed) == (
        "applied",
        4,
        4,
        0,
    )


def test_a_unit_reported_twice_is_counted_once(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    runs.start("d1", "fleet.yaml", [CHUNK, VERSION])
    runs.complete("d1", CHUNK, ok=True)
    runs.complete("d1", CHUNK, ok=True)
    progress = runs.progress()
    assert (progress.done, progress.remaining) == (3, 1)


def test_a_failed_unit_keeps_the_digest_unapplied_until_it_succeeds(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    runs.start("d1", "fleet.yaml", [CHUNK, VERSION])
    runs.complete("d1", CHUNK, ok=True)
    done = runs.complete("d1", VERSION, ok=False)
    assert (done.remaining, done.failing, done.applied) == (0, 1, False)
    assert runs.progress().state == "failed" and client.get(FLEET_APPLIED) is None
    assert runs.complete("d1", VERSION, ok=True).applied  # the dead letter re-driven
    progress = runs.progress()
    assert (progress.done, progress.failed, progress.state) == (4, 0, "applied")


def test_a_unit_of_no_current_run_changes_nothing(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    runs.start("d2", "fleet.yaml", [CHUNK])
    assert runs.complete("d1", CHUNK, ok=True).remaining == -1  # an older change's
    stray = Unit("reconcile:z", "objects", ("b/four",))
    assert runs.complete("d2", stray, ok=True).remaining == -1  # the reconciler's
    assert runs.progress().done == 0


def test_a_redelivered_plan_finds_the_stored_units(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    runs.start("d1", "fleet.yaml", [CHUNK, VERSION])
    assert runs.planned("d1") == [CHUNK, VERSION]
    assert runs.planned("d0") is None


def test_a_change_with_nothing_to_do_is_applied_at_once(client: redis.Redis) -> None:
    FleetRuns(client).start("d1", "fleet.yaml", [])
    assert client.get(FLEET_APPLIED) == b"d1"


def test_changed_models_count_once_per_unit_whatever_its_reports(client: redis.Redis) -> None:
    runs = FleetRuns(client)
    other = Unit("objects:b", "objects", ("b/four", "b/five"))
    runs.start("d1", "fleet.yaml", [CHUNK, other, VERSION])
    runs.complete("d1", CHUNK, ok=True, changed=2)
    runs.complete("d1", CHUNK, ok=True, changed=0)  # redelivered: found nothing left to do
    runs.complete("d1", other, ok=False)
    assert (runs.progress().done, runs.progress().changed) == (3, 2)
    runs.complete("d1", other, ok=True, changed=1)  # the dead letter re-driven
    runs.complete("d1", VERSION, ok=True)
    progress = runs.progress()
    assert (progress.state, progress.done, progress.changed, progress.failed) == (
        "applied",
        6,
        3,
        0,
    )
    runs.start("d2", "fleet.yaml", [CHUNK])  # a new run starts from nothing
    assert runs.progress().changed == 0
    runs.complete("d2", CHUNK, ok=True, changed=3)
    assert runs.progress().changed == 3
