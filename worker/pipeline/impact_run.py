"""Running an impact assessment over the whole index.

One process, on purpose: bench/fleet_impact.py measured a fork-based pool on
this code (10,000 models, 20 consumers, 2 cores) at 1.6-3.5x slower than one
process, because every changed model has to travel back pickled and each
child starts with cold caches.

The cyclic garbage collector is paused for the pass: it decodes and checks
hundreds of thousands of acyclic objects, and the collector would walk every
model still held (the changed ones are) again and again, which cost more than
the decoding itself (bench/fleet_impact.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from worker.compat.check import History
from worker.compat.policy import Policy
from worker.fleet.impact import Impact, assess
from worker.model.consumer import Consumer
from worker.sinks.index import ModelIndex, gc_paused


def assess_index(
    index: ModelIndex,
    consumers: Sequence[Consumer],
    *,
    history: History | None = None,
    policy: Policy | None = None,
    progress: Callable[[int], None] | None = None,
    with_artifacts: bool = True,
) -> Impact:
    """`assess` over every indexed model, read from the index as it goes (a preview
    passes `with_artifacts=False`: see `assess`)."""
    with gc_paused():
        return assess(
            index.models(),
            consumers,
            history=history,
            policy=policy,
            progress=progress,
            with_artifacts=with_artifacts,
        )
