"""Running an impact assessment over the whole index.

One process, on purpose: bench/fleet_impact.py measured a fork-based pool on
this code (10,000 models, 20 consumers, 2 cores) at 1.6-3.5x slower than one
process, because every changed model has to travel back pickled and each
child starts with cold caches. Decoding entries dominates; see the bench.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from worker.compat.check import History
from worker.compat.policy import Policy
from worker.fleet.impact import Impact, assess
from worker.model.consumer import Consumer
from worker.sinks.index import ModelIndex


def assess_index(
    index: ModelIndex,
    consumers: Sequence[Consumer],
    *,
    history: History | None = None,
    policy: Policy | None = None,
    progress: Callable[[int], None] | None = None,
) -> Impact:
    """`assess` over every indexed model, read from the index as it goes."""
    return assess(index.models(), consumers, history=history, policy=policy, progress=progress)
