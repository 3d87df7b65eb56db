"""Previews in Redis as the page submits them: at most so many queued or running at
once, a preview lost with its worker stops counting once its time is up, and the
upgrade plan is computed once for every reader while it is current."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.redis_server import redis_url
from worker.sinks.previews import LATEST, PREFIX, PreviewStore
from worker.ui.routes import Previews, TooManyPreviews

pytestmark = pytest.mark.services
CHANGE = {"add": [[None, "tf==2.10"]], "remove": []}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url(8))
    yield client
    for key in [*client.scan_iter(match=PREFIX + "*"), *client.scan_iter(match=LATEST + "*")]:
        client.delete(key)


def test_previews_past_the_limit_are_refused_until_one_finishes(client: redis.Redis) -> None:
    store = PreviewStore(client, ttl=60)
    enqueued: list[str] = []
    previews = Previews(store, lambda pid, change: enqueued.append(pid), in_flight=2)
    first, _ = previews.submit(CHANGE), previews.submit(CHANGE)
    with pytest.raises(TooManyPreviews):
        previews.submit(CHANGE)
    assert len(enqueued) == 2
    store.done(first, CHANGE, {"models_examined": 0})
    assert previews.submit(CHANGE) in enqueued


def test_a_preview_lost_with_its_worker_stops_counting(client: redis.Redis) -> None:
    clock = Clock()
    store = PreviewStore(client, ttl=3600, clock=clock)
    previews = Previews(store, lambda pid, change: None, in_flight=1, lasts=360)
    store.running(previews.submit(CHANGE), CHANGE)
    with pytest.raises(TooManyPreviews):
        previews.submit(CHANGE)
    clock.now += 361
    assert previews.submit(CHANGE)


def test_every_reader_is_shown_the_same_plan_while_it_is_fresh(client: redis.Redis) -> None:
    clock = Clock()
    store = PreviewStore(client, ttl=3600, clock=clock)
    enqueued: list[str] = []
    previews = Previews(store, lambda pid, change: enqueued.append(pid), in_flight=2)
    first = previews.plan("fleet-a", fresh=600)
    assert previews.plan("fleet-a", fresh=600) == first  # queued: the same one
    store.done(first, {"kind": "plan", "fleet": "fleet-a"}, {"plan": {}})
    clock.now += 599
    assert previews.plan("fleet-a", fresh=600) == first
    assert enqueued == [first]


def test_a_plan_is_computed_anew_once_stale_for_another_fleet_or_when_asked(
    client: redis.Redis,
) -> None:
    clock = Clock()
    store = PreviewStore(client, ttl=3600, clock=clock)
    enqueued: list[str] = []
    previews = Previews(store, lambda pid, change: enqueued.append(pid), in_flight=5)
    first = previews.plan("fleet-a", fresh=600)
    store.done(first, {"kind": "plan", "fleet": "fleet-a"}, {"plan": {}})
    clock.now += 601
    second = previews.plan("fleet-a", fresh=600)
    third = previews.plan("fleet-b", fresh=600)
    fourth = previews.plan("fleet-b", fresh=600, again=True)
    assert len({first, second, third, fourth}) == 4 and enqueued == [first, second, third, fourth]


def test_a_new_plan_counts_with_the_previews_in_flight(client: redis.Redis) -> None:
    store = PreviewStore(client, ttl=60)
    previews = Previews(store, lambda pid, change: None, in_flight=1)
    previews.submit(CHANGE)
    with pytest.raises(TooManyPreviews):
        previews.plan("fleet-a", fresh=600)
