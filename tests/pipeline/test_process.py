"""`process_event` over the in-memory store: identity, ordering and idempotency rules."""

from __future__ import annotations

import tarfile
from pathlib import Path

from tests.truth import SHARED
from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.pipeline.process import ReportLocation, process_event
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.memory import MemoryObjectStore

MODEL = SHARED / "artifacts/tf2.12/savedmodel_v1_stripped"
LOCATION = ReportLocation(None, "reports/")


def store_with(root: Path, prefix: str) -> MemoryObjectStore:
    store = MemoryObjectStore()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            store.put("b", f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())
    return store


def event(sequencer: str | None = None, etag: str | None = None) -> ObjectEvent:
    return ObjectEvent("b", "m/saved_model.pb", "ObjectCreated:Put", sequencer=sequencer, etag=etag)


CHECKER = build_checker(Settings(fleet="config/fleet.yaml"))


def test_an_older_event_after_a_newer_one_changes_nothing() -> None:
    store = store_with(MODEL, "m")
    assert process_event(event("0B"), store, CHECKER, LOCATION, ReadPolicy()).action == "checked"
    writes = (store.tag_writes, store.report_writes)
    late = process_event(event("0A"), store, CHECKER, LOCATION, ReadPolicy())
    assert (late.tags_changed, late.report_written) == (False, False)
    assert (store.tag_writes, store.report_writes) == writes


def test_an_event_for_content_since_overwritten_is_stale() -> None:
    store = store_with(MODEL, "m")
    assert (
        process_event(
            event(etag="not-the-current-etag"), store, CHECKER, LOCATION, ReadPolicy()
        ).action
        == "stale"
    )
    head = store.head("b", "m/saved_model.pb", None)
    assert (
        process_event(event(etag=head.etag), store, CHECKER, LOCATION, ReadPolicy()).action
        == "checked"
    )


def test_the_same_event_twice_writes_tags_once_and_the_report_once() -> None:
    store = store_with(MODEL, "m")
    first = process_event(event("0A"), store, CHECKER, LOCATION, ReadPolicy())
    report = store.objects[("b", first.report or "")]
    second = process_event(event("0A"), store, CHECKER, LOCATION, ReadPolicy())
    assert (first.tags, store.tag_writes, store.report_writes) == (second.tags, 1, 1)
    assert store.objects[("b", second.report or "")] == report


def test_the_report_does_not_depend_on_how_the_event_was_delivered() -> None:
    store = store_with(MODEL, "m")
    head = store.head("b", "m/saved_model.pb", None)
    deliveries = [
        ObjectEvent(
            "b",
            "m/saved_model.pb",
            name,
            sequencer=sequencer,
            etag=head.etag,
            event_time=time,
            source=source,
        )
        for name, sequencer, time, source in [
            ("ObjectCreated:Put", "0A", "2026-12-01T12:00:00Z", "s3"),
            ("ObjectCreated:Put", "0A", "2026-12-01T12:00:09Z", "sqs"),
            ("ObjectCreated:CompleteMultipartUpload", "0B", None, "eventbridge"),
        ]
    ]
    outcomes = [process_event(e, store, CHECKER, LOCATION, ReadPolicy()) for e in deliveries]
    assert [o.report_written for o in outcomes] == [True, False, False]
    assert store.report_writes == 1


def test_an_object_gone_before_its_task_ran_is_not_an_error() -> None:
    assert (
        process_event(event(), MemoryObjectStore(), CHECKER, LOCATION, ReadPolicy()).action
        == "gone"
    )


def test_a_deleted_object_loses_its_report() -> None:
    store = store_with(MODEL, "m")
    checked = process_event(event(), store, CHECKER, LOCATION, ReadPolicy())
    removed = ObjectEvent("b", "m/saved_model.pb", "ObjectRemoved:Delete")
    assert process_event(removed, store, CHECKER, LOCATION, ReadPolicy()).action == "removed"
    assert ("b", checked.report) not in store.objects


def test_an_archive_of_two_models_tags_the_releases_that_serve_both(tmp_path: Path) -> None:
    """2.12's SavedModel (tf.saved_model.save) serves 1.13 and 2.10 on; 2.21's frozen
    graph serves 2.5 on: the object, both, serves 2.10 on."""
    archive = tmp_path / "models.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(SHARED / "artifacts/tf2.12/savedmodel_v2", arcname="exported")
        tar.add(SHARED / "artifacts/tf2.21/frozen_graph", arcname="frozen")
    store = MemoryObjectStore()
    store.put("b", "m/models.tar.gz", archive.read_bytes())
    upload = ObjectEvent("b", "m/models.tar.gz", "ObjectCreated:Put")
    outcome = process_event(upload, store, CHECKER, LOCATION, ReadPolicy())
    assert outcome.document is not None
    ranges = [a["compatible_releases"] for a in outcome.document["artifacts"]]
    assert sorted(ranges) == [["1.13.1-1.13.2", "2.10.0-2.21.x"], ["2.5.0-2.21.x"]]
    assert outcome.document["compatible_releases"] == ["2.10.0-2.21.x"]
    assert outcome.document["min_release"] == "2.10.0"
