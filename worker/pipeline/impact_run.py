"""Running an impact assessment over the whole index, on every core.

`fleet.impact.assess` is pure and sequential. Here the index is split into
chunks that forked processes read from Redis, decode and assess on their own;
only the models whose verdicts change travel back. Forked children inherit the
parsed catalog and consumers, so nothing is parsed twice. Celery's pool
processes cannot fork (they are daemonic): there, and for small indexes, the
assessment runs in-process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any

from worker.compat.check import History
from worker.compat.consumer import Consumer
from worker.compat.policy import Policy
from worker.fleet.impact import Impact, assess
from worker.sinks.index import ModelIndex

PARALLEL_FROM = 2000  # models; below this a process pool costs more than it saves
_STATE: dict[str, Any] = {}


def _assess_chunk(fields: list[str]) -> Impact:
    index: ModelIndex = _STATE["index"]
    return assess(
        index.models_of(fields),
        _STATE["consumers"],
        history=_STATE["history"],
        policy=_STATE["policy"],
    )


def assess_index(
    index: ModelIndex,
    consumers: Sequence[Consumer],
    *,
    history: History | None = None,
    policy: Policy | None = None,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> Impact:
    """`assess` over every indexed model, in `workers` processes when it pays."""
    workers = workers or os.cpu_count() or 1
    fields = index.fields()
    daemonic = multiprocessing.current_process().daemon
    if workers <= 1 or len(fields) < PARALLEL_FROM or daemonic:
        return assess(index.models(), consumers, history=history, policy=policy, progress=progress)
    _STATE.update(index=index, consumers=list(consumers), history=history, policy=policy)
    size = max(200, len(fields) // (workers * 8))
    chunks = [fields[i : i + size] for i in range(0, len(fields), size)]
    total = Impact()
    rechecked: set[str] = set()
    removed: set[str] = set()
    context = multiprocessing.get_context("fork")
    try:
        with context.Pool(workers) as pool:
            for part in pool.imap_unordered(_assess_chunk, chunks):
                total.models += part.models
                total.examined += part.examined
                total.checks += part.checks
                rechecked.update(part.rechecked)
                removed.update(part.removed)
                if progress:
                    progress(part.examined)
    finally:
        _STATE.clear()
    total.models.sort(key=lambda m: (m.model.bucket, m.model.key))
    total.rechecked, total.removed = tuple(sorted(rechecked)), tuple(sorted(removed))
    return total
