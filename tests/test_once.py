"""At-most-once claims: the same contract in a real Redis (tests/redis_server.py) and in memory."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis

from tests.redis_server import REDIS_PORT
from tests.standins.http import free_port
from worker.errors import TransientError
from worker.once import Claims, MemoryClaims, RedisClaims, leased, take

REDIS_DB = 9


@pytest.fixture(params=["memory", "redis"])
def claims(request: pytest.FixtureRequest) -> Iterator[Claims]:
    if request.param == "memory":
        yield MemoryClaims()
        return
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
    client.flushdb()
    yield RedisClaims(client, prefix="test:")
    client.flushdb()


def test_a_key_is_claimed_once(claims: Claims) -> None:
    token = claims.claim("k", 60)
    assert token is not None
    assert claims.claim("k", 60) is None


def test_a_released_claim_can_be_taken_again(claims: Claims) -> None:
    token = claims.claim("k", 60)
    assert token is not None
    claims.release("k", token)
    assert claims.claim("k", 60) is not None


def test_only_the_holder_releases(claims: Claims) -> None:
    assert claims.claim("k", 60) is not None
    claims.release("k", "someone-elses-token")
    assert claims.claim("k", 60) is None


def test_a_claim_expires_and_a_confirmed_one_lives_on(claims: Claims) -> None:
    short = claims.claim("short", 1)
    kept = claims.claim("kept", 1)
    assert short is not None and kept is not None
    claims.confirm("kept", kept, 60)
    time.sleep(1.1)
    assert claims.claim("short", 60) is not None
    assert claims.claim("kept", 60) is None


def test_redis_down_is_transient() -> None:
    claims = RedisClaims.from_url(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(TransientError, match="redis"):
        claims.claim("k", 60)


def test_a_confirmed_claim_is_held_as_done_and_a_pending_one_as_pending(claims: Claims) -> None:
    pending, done = claims.claim("pending", 30), claims.claim("done", 30)
    assert pending is not None and done is not None
    claims.confirm("done", done, 600)
    held_pending = claims.hold("pending")
    assert held_pending is not None and not held_pending.done
    held = claims.hold("done")
    assert held is not None and held.done and held.ttl > 30
    assert claims.hold("free") is None


def test_only_the_holder_renews(claims: Claims) -> None:
    token = claims.claim("k", 1)
    assert token is not None
    assert claims.renew("k", "someone-elses-token", 60) is False
    assert claims.renew("k", token, 60) is True
    time.sleep(1.1)
    assert claims.claim("k", 60) is None  # renewed past its first second


def test_take_waits_for_a_dead_holder_s_lease_to_lapse(claims: Claims) -> None:
    assert claims.claim("k", 1) is not None  # a sender that died: never renewed
    assert take(claims, "k", lease=1) is not None


def test_take_gives_none_once_the_holder_confirmed(claims: Claims) -> None:
    token = claims.claim("k", 2)
    assert token is not None
    threading.Timer(0.3, lambda: claims.confirm("k", token, 600)).start()
    assert take(claims, "k", lease=2) is None


def test_a_lease_held_while_a_slow_send_runs_does_not_lapse(claims: Claims) -> None:
    token = claims.claim("k", 1)
    assert token is not None
    with leased(claims, [("k", token)], lease=1):
        time.sleep(1.5)
        assert claims.claim("k", 1) is None
    claims.confirm("k", token, 600)
    assert take(claims, "k", lease=1) is None
