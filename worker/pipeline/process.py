"""What one object event does, as a plain function over ports.

`process_event` reads the object version named by the event, checks it against
the fleet and the catalog, writes the report, then merges our tags into the
object's. On an S3 store, an upload costs four requests: the object's GET
(streamed once; a SavedModel adds its folder's LIST and its variables index),
the report's PUT, the tags' GET and PUT.

It is safe to repeat: the report's bytes depend only on the object version and
the verdict, so a duplicate delivery finds the same report stored and writes
nothing; tags are written only when they change. An event for content that has
since been overwritten (unversioned buckets: its ETag no longer matches) does
nothing; the newer write's event follows.

Our tags are read immediately before they are written, after everything else:
S3 has no conditional tagging, so a tag a user writes between our GET and our
PUT of the tags (one round trip) is lost; nothing else is.

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
from worker.compat.report import (
    ReleaseOutcome,
    artifact_report,
    invalid_report,
    release_verdicts,
)
from worker.compat.unsafe import unsafe_tag
from worker.errors import InvalidArtifact, NotFound, SourceRefused, Superseded
from worker.fleet.checker import Checker
from worker.fleet.digests import consumer_digest
from worker.fleet.releases import (
    record_json,
    recorded_outcomes,
    release_lookup,
    release_record,
)
from worker.formats.access import ReadPolicy, decide_object
from worker.formats.layout import model_folder, read_object
from worker.formats.summary import inspect_json
from worker.model.artifact import Artifact
from worker.model.events import ObjectEvent
from worker.model.index import ReleaseVerdicts
from worker.model.outcome import Outcome
from worker.model.verdict import Status, consumer_status_json
from worker.sinks import tags as T
from worker.sinks.ports import ObjectStore, ObjectTree, Pin, Seen
from worker.sinks.reports import REPORT_FORMAT, encode, report_key, report_tag

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ReportLocation:
    bucket: str | None  # None: the model's own bucket
    prefix: str

    def of(self, event: ObjectEvent) -> tuple[str, str]:
        return self.bucket or event.bucket, report_key(self.prefix, event)


def combined_ranges(
    reports: Sequence[dict[str, Any]], outcomes: Sequence[Sequence[ReleaseOutcome]]
) -> tuple[list[str], str | None]:
    """Releases that serve every artifact in the object (an archive may hold several),
    from each artifact's release outcomes (one artifact: its report's own range)."""
    if len(reports) == 1:
        return list(reports[0]["compatible_releases"]), reports[0]["min_release"]
    combined = [
        (each[0].release, all(o.serves for o in each)) for each in zip(*outcomes, strict=True)
    ]
    serving = [release for release, ok in combined if ok]
    return compress(combined), serving[0] if serving else None


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


_FLEET_RECORDS: dict[int, tuple[Checker, dict[str, Any]]] = {}


def fleet_record(checker: Checker) -> dict[str, Any]:
    """The report's `fleet` member minus verdicts, computed once per checker (a worker
    builds one per process): consumer digests hash whole op registries."""
    cached = _FLEET_RECORDS.get(id(checker))
    if cached is None or cached[0] is not checker:
        record = {
            "source": checker.fleet_source,
            "digest": checker.fleet_digest,
            "consumers": [c.name for c in checker.consumers],
            "consumer_digests": {c.name: consumer_digest(c) for c in checker.consumers},
        }
        if len(_FLEET_RECORDS) > 16:
            _FLEET_RECORDS.clear()
        cached = _FLEET_RECORDS[id(checker)] = (checker, record)
    return dict(cached[1])


def build_document(
    event: ObjectEvent,
    artifacts: Sequence[Artifact],
    reports: list[dict[str, Any]],
    checker: Checker,
    ranges: list[str],
    min_release: str | None,
    etag: str | None = None,
) -> dict[str, Any]:
    """The report: what the object version is and what it was found to be, nothing
    about the delivery (source, sequencer, time), so every delivery makes the same bytes."""
    metadata = {a.path: inspect_json(a) for a in artifacts}
    for report in reports:
        report["metadata"] = metadata.get(report["path"])
    return {
        "format": REPORT_FORMAT,
        "object": {
            "bucket": event.bucket,
            "key": event.key,
            "version_id": event.version_id,
            "etag": (etag or "").strip('"') or None,
        },
        "status": str(Status.worst(r["status"] for r in reports)),
        "compatible_releases": ranges,
        "min_release": min_release,
        "artifacts": reports,
        "fleet": {**fleet_record(checker), "verdicts": consumer_states(reports)},
    }


def consumer_states(reports: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Per consumer over all artifacts: its worst status (`Status`)."""
    states: dict[str, str] = {}
    for report in reports:
        for consumer in report["consumers"]:
            previous = states.get(consumer["name"], Status.COMPATIBLE)
            states[consumer["name"]] = Status.worst([previous, consumer_status_json(consumer)])
    return states


def verdict_reports(
    artifacts: Sequence[Artifact], checker: Checker, recorded: ReleaseVerdicts | None = None
) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """Each artifact's report against the fleet and the catalog, and the releases that
    serve every one of them (with the first such release). `recorded`: the catalog
    releases' verdicts an earlier check of this one-artifact object recorded (a fleet
    change's re-check), taken instead of judged when they still hold."""
    releases = checker.catalog.range_consumers()
    lookup = release_lookup(checker.catalog)
    reports = []
    every: list[list[ReleaseOutcome]] = []
    for a in artifacts:
        outcomes = None
        if recorded is not None and len(artifacts) == 1:
            outcomes = recorded_outcomes(a, recorded, releases, checker.catalog, lookup)
        if outcomes is None:
            outcomes = release_verdicts(a, releases, checker.catalog)
            record = release_record(outcomes, lookup)
        else:
            assert recorded is not None
            record = record_json(recorded)
        report = artifact_report(
            a, checker.consumers, releases, checker.catalog, checker.policy, outcomes
        )
        # for fleet changes: a consumer added as a catalog release takes its verdict
        report["release_verdicts"] = record
        reports.append(report)
        every.append(outcomes)
    ranges, min_release = combined_ranges(reports, every)
    return reports, ranges, min_release


def check_and_record(
    event: ObjectEvent,
    artifacts: Sequence[Artifact],
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    error: str | None = None,
    seen: Seen | None = None,
    recorded: ReleaseVerdicts | None = None,
) -> Outcome:
    """Check artifacts (read now, or taken from the index with the catalog releases'
    verdicts `recorded` for them) and record the result: the report first, so a tag
    never points at a missing report, then our tags, read and written back to back."""
    bucket, key = location.of(event)
    if error is None:
        reports, ranges, min_release = verdict_reports(artifacts, checker, recorded)
    else:
        reports = [invalid_report(f"s3://{event.bucket}/{event.key}", error)]
        ranges, min_release = [], None
    etag = event.etag or (seen.etag if seen else None)
    document = build_document(event, artifacts, reports, checker, ranges, min_release, etag)
    ours = {T.STATUS: document["status"], T.RELEASES: tag_value(ranges)}
    unsafe = unsafe_tag(artifacts)
    graph_def = graph_def_tag(artifacts)
    digest = str(document["fleet"]["digest"])
    if unsafe:  # in place of the graph-def tag: at most four of ours
        ours[T.UNSAFE] = T.with_fleet(unsafe, digest)
    else:
        ours[T.GRAPH_DEF] = T.with_fleet(graph_def, digest)
    pointer = report_tag(key)
    if pointer is not None:
        ours[T.REPORT] = pointer
    document["tags"] = {k: T.tag_safe(v) for k, v in ours.items()}
    written = store.put_report(bucket, key, encode(document))
    existing = store.get_tags(event.bucket, event.key, event.version_id)
    merge = T.merge_tags(existing, ours)
    changed = merge.changes(existing)
    if changed:
        store.put_tags(event.bucket, event.key, event.version_id, merge.tags)
    return Outcome(
        "checked",
        document["status"],
        key,
        merge.written,
        tuple(merge.dropped),
        document,
        changed,
        report_written=written,
        object_tags={t["Key"]: t["Value"] for t in merge.tags},
        current=seen.current if seen else None,
        object_metadata=dict(seen.metadata) if seen and seen.metadata is not None else None,
        artifacts=tuple(artifacts),
    )


def is_current(event: ObjectEvent, store: ObjectStore) -> bool:
    """Whether the event's version is the object's current one (what the index keeps)."""
    if event.version_id is None:
        return True
    try:
        return store.head(event.bucket, event.key, None).version_id == event.version_id
    except NotFound:
        return False


def event_tree(
    event: ObjectEvent, store: ObjectStore, policy: ReadPolicy
) -> tuple[ObjectTree, str, str]:
    """(tree, name in it, display) to read the object version the event names from:
    the tree is pinned to that version (or, unversioned, to its ETag). SourceRefused
    when the read rule refuses the object."""
    decided = decide_object(policy, event.bucket, event.key)
    if not decided.allowed:
        raise SourceRefused(decided.reason)
    folder = model_folder(event.key)
    name = event.key[len(folder) + 1 :] if folder else event.key
    pin = Pin(event.version_id, None if event.version_id else event.etag)
    tree = store.tree(event.bucket, folder, {name: pin})
    return tree, name, f"s3://{event.bucket}/{folder}".rstrip("/")


def process_event(
    event: ObjectEvent,
    store: ObjectStore,
    checker: Checker,
    location: ReportLocation,
    policy: ReadPolicy,
) -> Outcome:
    """Check one object version and record the result (report, then tags); an object the
    read rule (`policy`) refuses is never read (`refused`)."""
    bucket, key = location.of(event)
    if event.removed:
        if event.version_id is None:
            store.delete(bucket, key)
        return Outcome("removed", report=key)
    try:
        tree, name, display = event_tree(event, store, policy)
        try:
            artifacts = read_object(tree, name, display)
        except InvalidArtifact as exc:
            return check_and_record(
                event, [], store, checker, location, str(exc), seen=tree.seen(name)
            )
        return check_and_record(event, artifacts, store, checker, location, seen=tree.seen(name))
    except SourceRefused as exc:
        log.error("event.refused", reason=str(exc))
        return Outcome("refused")
    except Superseded as exc:
        log.info("event.stale", reason=str(exc))
        return Outcome("stale")
    except NotFound as exc:
        log.info("object.gone", error=str(exc))
        return Outcome("gone")
