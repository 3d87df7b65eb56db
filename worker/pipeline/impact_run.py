"""Running an impact assessment over the whole index.

The cyclic garbage collector is paused for the pass: it decodes and checks
hundreds of thousands of acyclic objects, and the collector would walk every
model still held (the changed ones are) again and again, which cost more than
the decoding itself (bench/fleet_impact.py).

A preview (`with_artifacts=False`) may run in `jobs` forked processes, each
decoding and checking a share of the index, when the first models it assessed
needed checks (lookups alone cost less than sending their results back). What
travels back is each changed model's listing and verdicts as plain tuples
(`worker.fleet.impact.packed`: a quarter of the pickling the dataclasses cost),
not its metadata, and the children inherit what the parent built before the fork (the catalog, the
consumers' registries, the index's shared parts, the checks' memos of a first
batch checked here). An apply keeps one process: it writes back every changed
model with its metadata, which would cost more to send between processes than
to check (a fork-based pool that did measured 1.6-3.5x slower than one
process, bench/fleet_impact.py), and a Celery worker's child may not fork.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any

from worker.compat.check import History
from worker.compat.policy import Policy
from worker.fleet.impact import Impact, Packed, assess, merged, packed, unpacked
from worker.model.consumer import Consumer
from worker.sinks.index import ModelIndex, gc_paused

SHARE = 500  # models per share a child assesses (results come back a share at a time)
FIRST = 100  # models checked before the fork, so the children start warm


def default_jobs() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def assess_index(
    index: ModelIndex,
    consumers: Sequence[Consumer],
    *,
    history: History | None = None,
    policy: Policy | None = None,
    progress: Callable[[int], None] | None = None,
    with_artifacts: bool = True,
    jobs: int = 1,
) -> Impact:
    """`assess` over every indexed model, read from the index as it goes (a preview
    passes `with_artifacts=False`: see `assess`; with it, `jobs` processes may share
    the work)."""
    if jobs > 1 and not with_artifacts and _may_fork():
        return _assess_forked(index, consumers, history, policy, progress, jobs)
    with gc_paused():
        return assess(
            index.models(),
            consumers,
            history=history,
            policy=policy,
            progress=progress,
            with_artifacts=with_artifacts,
        )


def _may_fork() -> bool:
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and not multiprocessing.current_process().daemon
    )


# What the forked children read: set in the parent just before the fork.
_SHARED: dict[str, Any] = {}


def _assess_share(fields: list[bytes]) -> Impact:
    w = _SHARED
    with gc_paused():
        return assess(
            w["index"].models_of(fields, w["decoder"]),
            w["consumers"],
            history=w["history"],
            policy=w["policy"],
            with_artifacts=False,
        )


def _assess_packed(fields: list[bytes]) -> Packed:
    """`_assess_share` in a forked process: the result sent back as plain data."""
    return packed(_assess_share(fields))


def _assess_forked(
    index: ModelIndex,
    consumers: Sequence[Consumer],
    history: History | None,
    policy: Policy | None,
    progress: Callable[[int], None] | None,
    jobs: int,
) -> Impact:
    fields = index.fields()
    _SHARED.update(
        index=index, decoder=index.decoder(), consumers=consumers, history=history, policy=policy
    )
    try:
        first = _assess_share(fields[:FIRST])
        if progress:
            progress(first.examined)
        rest = [fields[i : i + SHARE] for i in range(FIRST, len(fields), SHARE)]
        parts = [first]
        if rest and not first.checks:
            # Nothing to check in the first models (a consumer removed, renamed, or taken
            # from the records): a lookup per model, cheaper here than sent back from a fork.
            for share in rest:
                parts.append(_assess_share(share))
                if progress:
                    progress(parts[-1].examined)
        elif rest:
            # paused here too: the results arrive as thousands of new objects
            with (
                gc_paused(),
                multiprocessing.get_context("fork").Pool(min(jobs, len(rest))) as pool,
            ):
                for part in pool.imap(_assess_packed, rest):
                    parts.append(unpacked(part))
                    if progress:
                        progress(parts[-1].examined)
        return merged(parts)
    finally:
        _SHARED.clear()
