"""`gc_paused` moves what it allocated to the oldest generation; garbage cycles young
when it starts are collected first, not moved there to wait for a full collection."""

from __future__ import annotations

import gc
import weakref

from worker.sinks.index import gc_paused


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


def test_a_garbage_cycle_young_at_the_pause_is_collected_not_promoted() -> None:
    assert gc.isenabled()
    gc.collect()
    cycle = Node()
    ref = weakref.ref(cycle)
    del cycle  # garbage now, in the youngest generation
    with gc_paused():
        pass
    assert ref() is None, "a garbage cycle was moved to the oldest generation"
    assert gc.isenabled()


def test_what_the_pause_allocated_survives_and_collection_resumes() -> None:
    with gc_paused():
        kept = [Node() for _ in range(100)]
        assert not gc.isenabled()
    assert gc.isenabled()
    assert all(node.me is node for node in kept)
