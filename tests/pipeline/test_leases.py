"""Visibility leases on the Redis broker, against a real Redis: held tasks are renewed,
released ones are not, and the sweep hands lapsed ones out again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from kombu import Connection

from tests.redis_server import REDIS_PORT, redis_url
from worker.pipeline.leases import Leases, Sweeper

pytestmark = pytest.mark.services
DB = 2


@dataclass
class Channel:
    closed: bool = False


@dataclass
class Message:
    acknowledged: bool = False
    channel: Channel | None = field(default_factory=Channel)


@pytest.fixture
def client() -> redis.Redis:
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=DB)
    client.flushdb()
    return client


def test_held_tasks_are_renewed_and_released_ones_are_not(client: redis.Redis) -> None:
    client.zadd("unacked_index", {"held": 1.0, "acked": 1.0, "orphan": 1.0, "gone": 1.0})
    leases = Leases(client, "unacked_index", period=60, clock=lambda: 500.0)
    acked, orphan = Message(acknowledged=True), Message(channel=Channel(closed=True))
    for tag, message in (("held", Message()), ("acked", acked), ("orphan", orphan)):
        leases.hold(tag, message)
    leases.hold("restored", Message())  # no longer in the index: never brought back
    assert leases.renew() == 1
    scores = dict(client.zrange("unacked_index", 0, -1, withscores=True))
    assert scores == {b"held": 500.0, b"acked": 1.0, b"orphan": 1.0, b"gone": 1.0}
    assert sorted(leases.held()) == ["held", "restored"]
    leases.stop()


def test_the_sweep_requeues_a_lapsed_task(client: redis.Redis) -> None:
    options = {"visibility_timeout": 1}
    with Connection(redis_url(DB), transport_options=options) as connection:
        queue = connection.SimpleQueue("tfcompat-sweep")
        queue.put({"n": 1})
        message = queue.get(timeout=5)  # taken and never acknowledged: a lost worker's
        (tag,) = client.zrange("unacked_index", 0, -1)
        client.zadd("unacked_index", {tag: 0})  # taken long ago
        Sweeper(redis_url(DB), options)()
        assert client.zcard("unacked_index") == 0
        again: Any = queue.get(timeout=5)
        assert again.payload == message.payload == {"n": 1}


def test_tasks_held_before_a_reconnect_are_no_longer_renewed(client: redis.Redis) -> None:
    """A delivery tag belongs to its connection: after the consumer reconnects, the
    tasks it held on the lost one cannot be acknowledged and must lapse."""
    client.zadd("unacked_index", {"before": 1.0})
    leases = Leases(client, "unacked_index", period=60, clock=lambda: 500.0)
    leases.hold("before", Message())
    assert leases.forget_all() == 1
    leases.hold("after", Message())
    client.zadd("unacked_index", {"after": 1.0})
    assert leases.renew() == 1
    scores = dict(client.zrange("unacked_index", 0, -1, withscores=True))
    assert scores == {b"before": 1.0, b"after": 500.0}
    leases.stop()
