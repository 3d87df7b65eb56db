"""Broker calls off the event loop: bounded in time and in number."""

from __future__ import annotations

import asyncio
import threading

import pytest

from worker.errors import BrokerUnavailable, MalformedEvent, TransientError
from worker.ingest.handoff import Handoff


def test_a_call_returns_its_result() -> None:
    assert asyncio.run(Handoff(timeout=5).call(lambda: 42)) == 42


def test_a_call_that_hangs_is_refused_after_the_timeout_and_so_is_the_next_one() -> None:
    handoff, release = Handoff(timeout=0.2, threads=1), threading.Event()
    with pytest.raises(BrokerUnavailable, match="no answer within"):
        asyncio.run(handoff.call(release.wait))
    with pytest.raises(BrokerUnavailable, match="every publishing thread"):
        asyncio.run(handoff.call(lambda: 1))  # the one thread is still stuck: no queueing
    release.set()


@pytest.mark.parametrize(
    "error", [ConnectionError("refused"), TransientError("redis: timeout"), OSError("reset")]
)
def test_broker_failures_become_broker_unavailable(error: Exception) -> None:
    def fail() -> None:
        raise error

    with pytest.raises(BrokerUnavailable):
        asyncio.run(Handoff(timeout=5).call(fail))


def test_our_own_permanent_errors_pass_through() -> None:
    def malformed() -> None:
        raise MalformedEvent("bad")

    with pytest.raises(MalformedEvent):
        asyncio.run(Handoff(timeout=5).call(malformed))
