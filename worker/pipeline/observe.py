"""What the workers tell Prometheus: task outcomes, verdicts, latency, bytes read.

Two feeds, so the tasks stay free of metrics code: `count_task` runs after every
task run (a Celery signal wired in `pipeline.app`), so a crash or a retry is
counted as surely as a success; `metrics_hook` is a `Services.hooks` entry, run
after a result is recorded, when the tags are on the object.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from worker import metrics
from worker.model.events import ObjectEvent
from worker.model.outcome import Outcome
from worker.sinks.ports import ObjectStore

AfterHook = Callable[[ObjectEvent, Outcome], None]


def task_outcome(state: str | None, retval: Any) -> str:
    """A finished task run as one label: its result's `action` when it returned one,
    else `retry`, `failure` (an exception) or the Celery state in lower case."""
    if state == "SUCCESS":
        action = retval.get("action") if isinstance(retval, dict) else None
        return action if isinstance(action, str) and action else "done"
    if state == "RETRY":
        return "retry"
    if state == "FAILURE":
        return "failure"
    return (state or "unknown").lower()


def count_task(task: Any = None, state: str | None = None, retval: Any = None, **_: Any) -> None:
    """Celery `task_postrun` receiver."""
    name = str(getattr(task, "name", None) or "unknown").removeprefix("tfcompat.")
    metrics.TASKS.labels(name, task_outcome(state, retval)).inc()


def seconds_since(event_time: str | None, now: float) -> float | None:
    """Seconds from an event's ISO-8601 time to `now` (epoch seconds); None when the
    event carries no readable time. A clock ahead of ours counts as 0, never negative."""
    if not event_time:
        return None
    try:
        stamp = datetime.fromisoformat(event_time)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return None
    return max(0.0, now - stamp.timestamp())


def metrics_hook(store: ObjectStore, clock: Callable[[], float] = time.time) -> AfterHook:
    """Count each recorded result: its verdict, the event-to-tags latency, and the bytes
    the store read since the last result in this process (retried attempts included)."""
    seen = [int(getattr(store, "bytes_read", 0))]

    def observe(event: ObjectEvent, outcome: Outcome) -> None:
        total = int(getattr(store, "bytes_read", 0))
        if total > seen[0]:
            metrics.BYTES_READ.inc(total - seen[0])
        seen[0] = total
        if outcome.action != "checked":
            return
        metrics.VERDICTS.labels(outcome.status or "unknown").inc()
        latency = seconds_since(event.event_time, clock())
        if latency is not None:
            metrics.LATENCY.observe(latency)

    return observe
