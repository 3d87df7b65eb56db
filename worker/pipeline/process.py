"""What one object event does, as a plain function over ports.

`process_event` reads the object version named by the event, checks it against
the fleet and the catalog, writes the report, then merges our tags into the
object's. It is safe to repeat: the report's bytes and the tags depend only on
the object version, fleet and catalog, and tags are written only when they
change. An event that is older than what was already recorded for the key
(unversioned buckets: an older sequencer, or an ETag that is no longer the
object's) does nothing.

Errors: a malformed model is not an error here (status `invalid`, recorded);
`TransientError` propagates for the task to retry; `NotFound` means the object
went away and there is nothing to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from worker.compat.ranges import compress, tag_value
from worker.compat.report import artifact_report, invalid_report, release_outcomes
from worker.errors import InvalidArtifact, NotFound
from worker.fleet.checker import Checker
from worker.fleet.impact import consumer_digest
from worker.formats.summary import inspect_json
from worker.model.artifact import Artifact
from worker.model.events import ObjectEvent
from worker.model.outcome import Outcome
from worker.model.verdict import Status, consumer_status_json
from worker.sinks import tags as T
from worker.sinks.ports import ObjectStore, etag_equal
from worker.sinks.reports import REPORT_FORMAT, encode, report_key

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ReportLocation:
    bucket: str | None  # None: the model's own bucket
    prefix: str

    def of(self, event: ObjectEvent) -> tuple[str, str]:
        return self.bucket or event.bucket, report_key(self.prefix, event)


def sequencer_newer(a: str, b: str) -> bool:
    """S3 sequencers are hex strings of varying length: compare them padded."""
    width = max(len(a), len(b))
    return a.upper().rjust(width, "0") > b.upper().rjust(width, "0")


def combined_ranges(
    artifacts: Sequence[Artifact], checker: Checker
) -> tuple[list[str], str | None]:
    """Releases that load every artifact in the object (an archive may hold several)."""
    releases = checker.catalog.range_consumers()
    combined: list[tuple[str, bool]] | None = None
    for artifact in artifacts:
        outcomes = release_outcomes(artifact, releases, checker.catalog)
        combined = (
            outcomes
            if combined is None
            else [(v, a and b) for (v, a), (_, b) in zip(combined, outcomes, strict=True)]
        )
    combined = combined or []
    loading = [v for v, ok in combined if ok]
    return compress(combined), loading[0] if loading else None


def graph_def_tag(artifacts: Sequence[Artifact]) -> str | None:
    for artifact in artifacts:
        for graph in artifact.graphs():
            if graph.versions is not None:
                return (
                    f"producer {graph.versions.producer} min-consumer {graph.versions.min_consumer}"
                )
        if artifact.checkpoint is not None:
            v = artifact.checkpoint.versions
            return f"checkpoint producer {v.producer} min-consumer {v.min_consumer}"
    return None


def _is_stale(event: ObjectEvent, store: ObjectStore, location: ReportLocation) -> bool:
    if event.version_id is not None:
        return False  # each version has its own tags and report
    if event.etag:
        head = store.head(event.bucket, event.key, None)
        if not etag_equal(head.etag, event.etag):
            return True  # overwritten since: the newer write's event will follow
    if event.sequencer:
        bucket, key = location.of(event)
        previous = store.get_json(bucket, key)
        seen = ((previous or {}).get("event") or {}).get("sequencer")
        if isinstance(seen, str) and sequencer_newer(seen, event.sequencer):
            return True
    return False


def build_document(
    event: ObjectEvent,
    artifacts: Sequence[Artifact],
    reports: list[dict[str, Any]],
    checker: Checker,
    ranges: list[str],
    min_release: str | None,
) -> dict[str, Any]:
    metadata = {a.path: inspect_json(a) for a in artifacts}
    for report in reports:
        report["metadata"] = metadata.get(report["path"])
    return {
        "format": REPORT_FORMAT,
        "object": {"bucket": event.bucket, "key": event.key, "version_id": event.version_id},
        "event": event.to_json(),
        "status": str(Status.worst(r["status"] for r in reports)),
        "compatible_releases": ranges,
        "min_release": min_release,
        "artifacts": reports,
        "fleet": {
            "source": checker.fleet_source,
            "digest": checker.fleet_digest,
            "consumers": [c.name for c in checker.consumers],
            "consumer_digests": {c.name: consumer_digest(c) for c in checker.consumers},
            "verdicts": consumer_states(reports),
        },
    }


def consumer_states(reports: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Per consumer over all artifacts: its worst status (`Status`)."""
    states: dict[str, str] = {}
    for report in reports:
        for consumer in report["consumers"]:
            previous = states.get(consumer["name"], Status.COMPATIBLE)
            states[consumer["name"]] = Status.worst([previous, consumer_status_json(consumer)])
    return states


def check_and_record(
    event: ObjectEvent,
    artifacts: Sequence[Artifact],
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    error: str | None = None,
) -> Outcome:
    """Check artifacts (read now, or taken from the index) and record the result:
    the report first, so a tag never points at a missing report, then our tags."""
    bucket, key = location.of(event)
    if error is None:
        reports = [
            artifact_report(
                a,
                checker.consumers,
                checker.catalog.range_consumers(),
                checker.catalog,
                checker.policy,
            )
            for a in artifacts
        ]
        ranges, min_release = combined_ranges(artifacts, checker)
    else:
        reports = [invalid_report(f"s3://{event.bucket}/{event.key}", error)]
        ranges, min_release = [], None
    document = build_document(event, artifacts, reports, checker, ranges, min_release)
    ours = {T.STATUS: document["status"], T.RELEASES: tag_value(ranges), T.REPORT: key}
    graph_def = graph_def_tag(artifacts)
    if graph_def:
        ours[T.GRAPH_DEF] = graph_def
    existing = store.get_tags(event.bucket, event.key, event.version_id)
    merge = T.merge_tags(existing, ours)
    document["tags"] = merge.written
    document["dropped_tags"] = {k: ours[k] for k in merge.dropped}
    store.put_json(bucket, key, encode(document))
    changed = merge.changes(existing)
    if changed:
        store.put_tags(event.bucket, event.key, event.version_id, merge.tags)
    return Outcome(
        "checked", document["status"], key, merge.written, tuple(merge.dropped), document, changed
    )


def is_current(event: ObjectEvent, store: ObjectStore) -> bool:
    """Whether the event's version is the object's current one (what the index keeps)."""
    if event.version_id is None:
        return True
    try:
        return store.head(event.bucket, event.key, None).version_id == event.version_id
    except NotFound:
        return False


def process_event(
    event: ObjectEvent, store: ObjectStore, checker: Checker, location: ReportLocation
) -> Outcome:
    """Check one object version and record the result (report, then tags)."""
    bucket, key = location.of(event)
    if event.removed:
        if event.version_id is None:
            store.delete(bucket, key)
        return Outcome("removed", report=key)
    try:
        if _is_stale(event, store, location):
            log.info("event.stale", reason="a newer write of this key was recorded")
            return Outcome("stale")
        try:
            artifacts = store.read_artifacts(event.bucket, event.key, event.version_id)
        except InvalidArtifact as exc:
            return check_and_record(event, [], store, checker, location, error=str(exc))
        return check_and_record(event, artifacts, store, checker, location)
    except NotFound as exc:
        log.info("object.gone", error=str(exc))
        return Outcome("gone")
