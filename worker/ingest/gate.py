"""The read rule at the edges and in the tasks: decide, log, count.

`worker.formats.access.decide` is the rule (pure); this is the one place that
builds its policy from the settings and records each decision: a refusal is
logged with its reason and counted in `tfcompat_read_decisions_total` (so is
every allowed read), under the entry point that asked (`receiver`, `sqs-bridge`,
`task`, `mlflow` (a webhook's version and every fleet re-check), `sagemaker`,
`fix`, `github`).
"""

from __future__ import annotations

import structlog

from worker import metrics
from worker.errors import SourceRefused
from worker.formats.access import Decision, ReadPolicy, decide, decide_object
from worker.ingest.access import BucketAllowlist
from worker.model.events import ObjectEvent
from worker.redact import strip_userinfo
from worker.settings import Settings

log = structlog.get_logger(__name__)


def read_policy(settings: Settings) -> ReadPolicy:
    """`TFCOMPAT_BUCKETS`, `TFCOMPAT_LOCAL_ROOTS` and whether an MLflow server is set."""
    roots = tuple(r.strip() for r in settings.local_roots.split(",") if r.strip())
    return ReadPolicy(tuple(settings.buckets), roots, bool(settings.mlflow_tracking_uri))


def recorded(decision: Decision, entry: str) -> Decision:
    verdict = "allowed" if decision.allowed else "refused"
    metrics.READ_DECISIONS.labels(entry, decision.kind, verdict).inc()
    if not decision.allowed:
        log.warning(
            "read.refused",
            entry=entry,
            kind=decision.kind,
            uri=strip_userinfo(decision.uri),
            reason=decision.reason,
            setting=decision.setting,
        )
    return decision


def gate(policy: ReadPolicy, uri: str, entry: str) -> Decision:
    """The decision for a model source named by a URI, logged and counted."""
    return recorded(decide(policy, uri), entry)


def gate_object(policy: ReadPolicy, bucket: str, key: str, entry: str) -> Decision:
    """The decision for one object of the object store, logged and counted."""
    return recorded(decide_object(policy, bucket, key), entry)


def require(decision: Decision) -> Decision:
    """The decision when it allows the read; SourceRefused (naming the setting) if not."""
    if not decision.allowed:
        raise SourceRefused(decision.reason)
    return decision


def refused_events(
    allowlist: BucketAllowlist, events: list[ObjectEvent], entry: str
) -> list[ObjectEvent]:
    """The events naming an object the read rule refuses, each decision logged and
    counted (the receiver and the SQS bridge, before anything is enqueued)."""
    policy = ReadPolicy(allowlist.entries)
    return [e for e in events if not gate_object(policy, e.bucket, e.key, entry).allowed]
