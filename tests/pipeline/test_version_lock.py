"""One check per model version at a time, in a real Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from tests.redis_server import REDIS_PORT
from worker.errors import TransientError, VersionBusy
from worker.once import RedisClaims
from worker.pipeline.version_lock import lock_key, version_lock

REDIS_DB = 3


@pytest.fixture
def claims() -> Iterator[RedisClaims]:
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
    client.flushdb()
    yield RedisClaims(client, prefix="test:")
    client.flushdb()


def test_a_second_check_of_the_same_version_waits_its_turn(claims: RedisClaims) -> None:
    with (
        version_lock(claims, "mlflow", "churn", "3", 30),
        pytest.raises(VersionBusy),
        version_lock(claims, "mlflow", "churn", "3", 30),
    ):
        pass
    assert issubclass(VersionBusy, TransientError)  # the task retries with backoff


def test_other_versions_are_not_held_up(claims: RedisClaims) -> None:
    with (
        version_lock(claims, "mlflow", "churn", "3", 30),
        version_lock(claims, "mlflow", "churn", "4", 30),
    ):
        pass


def test_the_lock_is_free_once_the_check_ends(claims: RedisClaims) -> None:
    with version_lock(claims, "mlflow", "churn", "3", 30):
        pass
    with version_lock(claims, "mlflow", "churn", "3", 30):
        pass


def test_a_killed_checks_lock_lapses_after_its_lease(claims: RedisClaims) -> None:
    # a check killed mid-way never releases: its claim was taken and nothing renews it
    assert claims.claim(lock_key("mlflow", "churn", "3"), 1) is not None
    with pytest.raises(VersionBusy), version_lock(claims, "mlflow", "churn", "3", 1):
        pass
    time.sleep(1.2)
    with version_lock(claims, "mlflow", "churn", "3", 1):
        pass


def test_a_long_check_keeps_its_lock_past_one_lease(claims: RedisClaims) -> None:
    with version_lock(claims, "mlflow", "churn", "3", 1):
        time.sleep(1.6)  # renewed every third of the lease
        with pytest.raises(VersionBusy), version_lock(claims, "mlflow", "churn", "3", 1):
            pass
