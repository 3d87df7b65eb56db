"""Prometheus metrics of the receiver, the bridge and the workers.

The receiver and the bridge serve their own process's values (`/metrics`); the
worker's processes write theirs to files that `tfcompat worker --metrics-port`
serves merged (`worker.exporter`). What each worker metric counts is set in
`worker.pipeline.observe`.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

EVENTS_RECEIVED = Counter("tfcompat_events_received_total", "Object events received", ["source"])
EVENTS_REJECTED = Counter(
    "tfcompat_events_rejected_total", "Event deliveries rejected", ["source", "reason"]
)
EVENTS_IGNORED = Counter(
    "tfcompat_events_ignored_total",
    "Events that start no work (not a model, our own write, test event)",
    ["source"],
)
TASKS = Counter(
    "tfcompat_tasks_total",
    "Task runs, by task and outcome (checked, stale, gone, removed, rejected, retry, failure)",
    ["task", "outcome"],
)
VERDICTS = Counter("tfcompat_verdicts_total", "Artifacts checked, by status", ["status"])
LATENCY = Histogram(
    "tfcompat_event_to_tags_seconds",
    "From the event's time to tags written",
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800),
)
BYTES_READ = Counter(
    "tfcompat_object_bytes_read_total", "Bytes of model objects read from the object store"
)
NOTIFY_FAILURES = Counter(
    "tfcompat_notification_failures_total", "Notifications that failed", ["sink"]
)
READ_DECISIONS = Counter(
    "tfcompat_read_decisions_total",
    "Model sources decided by the read rule, by entry point, kind and decision",
    ["entry", "kind", "decision"],
)
FLEET_MODELS = Counter(
    "tfcompat_fleet_change_models_total",
    "Models and registry versions of fleet changes, by outcome (planned, done, failed; "
    "changed: indexed models re-tagged)",
    ["outcome"],
)
DEAD_LETTERS = Counter(
    "tfcompat_dead_letters_total",
    "Work that failed for good and went to the dead-letter list, by task",
    ["task"],
)
RECONCILED = Counter(
    "tfcompat_reconciler_stale_total",
    "Objects and registry versions the reconciler found tagged under another fleet "
    "(kind object, version), and units of a stalled fleet change it sent again "
    "(kind stalled-unit)",
    ["kind"],
)
