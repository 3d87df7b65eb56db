"""At-most-once claims: the same contract in a real Redis (tests/redis_server.py) and in memory."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis

from tests.redis_server import REDIS_PORT
from tests.standins.http import free_port
from worker.errors import TransientError
from worker.once import Claims, MemoryClaims, RedisClaims

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
