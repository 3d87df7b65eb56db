"""What the workers count: task outcomes, verdicts, event-to-tags latency, bytes read
(no network: the hook over a stand-in store, the default in-process registry)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from prometheus_client import REGISTRY

from worker.model.events import ObjectEvent
from worker.model.outcome import Outcome
from worker.pipeline.observe import count_task, metrics_hook, seconds_since, task_outcome

EVENT = ObjectEvent(
    "models", "m/saved_model.pb", "ObjectCreated:Put", event_time="2026-12-01T12:00:00.000Z"
)
NOW = 1_796_126_405.0  # 2026-12-01T12:00:05Z


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@dataclass
class Store:
    bytes_read: int = 0


# How a finished task run is labelled, from Celery's state and the task's result.
@pytest.mark.parametrize(
    ("state", "retval", "outcome"),
    [
        ("SUCCESS", {"action": "checked", "status": "compatible"}, "checked"),
        ("SUCCESS", {"action": "rejected", "error": "x"}, "rejected"),
        ("SUCCESS", {"examined": 3}, "done"),
        ("SUCCESS", None, "done"),
        ("RETRY", None, "retry"),
        ("FAILURE", RuntimeError("boom"), "failure"),
        ("REJECTED", None, "rejected"),
        (None, None, "unknown"),
    ],
)
def test_task_outcome(state: str | None, retval: object, outcome: str) -> None:
    assert task_outcome(state, retval) == outcome


def test_count_task_labels_by_short_task_name() -> None:
    class Task:
        name = "tfcompat.check_object"

    before = sample("tfcompat_tasks_total", task="check_object", outcome="retry")
    count_task(task=Task(), state="RETRY", retval=None, task_id="t1")
    assert sample("tfcompat_tasks_total", task="check_object", outcome="retry") == before + 1


# Event times as S3, MinIO and EventBridge write them; unreadable ones give no sample.
@pytest.mark.parametrize(
    ("event_time", "seconds"),
    [
        ("2026-12-01T12:00:00.000Z", 5.0),
        ("2026-12-01T12:00:00Z", 5.0),
        ("2026-12-01T11:59:00+00:00", 65.0),
        ("2026-12-01T12:00:10.000Z", 0.0),  # the sender's clock is ahead: never negative
        ("2026-12-01T12:00:00", None),  # no zone: cannot tell
        ("yesterday", None),
        ("", None),
        (None, None),
    ],
)
def test_seconds_since(event_time: str | None, seconds: float | None) -> None:
    assert seconds_since(event_time, NOW) == seconds


def test_hook_counts_a_checked_result() -> None:
    store = Store(bytes_read=100)
    hook = metrics_hook(store, clock=lambda: NOW)  # type: ignore[arg-type]
    verdicts = sample("tfcompat_verdicts_total", status="at-risk")
    latencies = sample("tfcompat_event_to_tags_seconds_count")
    within_5s = sample("tfcompat_event_to_tags_seconds_bucket", le="5.0")
    read = sample("tfcompat_object_bytes_read_total")
    store.bytes_read += 4096
    hook(EVENT, Outcome("checked", "at-risk", "r.json"))
    assert sample("tfcompat_verdicts_total", status="at-risk") == verdicts + 1
    assert sample("tfcompat_event_to_tags_seconds_count") == latencies + 1
    assert sample("tfcompat_event_to_tags_seconds_bucket", le="5.0") == within_5s + 1
    assert sample("tfcompat_object_bytes_read_total") == read + 4096  # not the 100 before


def test_hook_counts_bytes_but_no_verdict_for_other_outcomes() -> None:
    store = Store()
    hook = metrics_hook(store, clock=lambda: NOW)  # type: ignore[arg-type]
    verdicts = sum(sample("tfcompat_verdicts_total", status=s) for s in ("compatible", "invalid"))
    latencies = sample("tfcompat_event_to_tags_seconds_count")
    read = sample("tfcompat_object_bytes_read_total")
    store.bytes_read = 10
    for action in ("stale", "gone", "removed"):
        hook(EVENT, Outcome(action))
    assert sample("tfcompat_object_bytes_read_total") == read + 10
    assert sample("tfcompat_event_to_tags_seconds_count") == latencies
    assert (
        sum(sample("tfcompat_verdicts_total", status=s) for s in ("compatible", "invalid"))
        == verdicts
    )
