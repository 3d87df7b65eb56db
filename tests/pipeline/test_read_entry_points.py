"""The read rule at each entry point that is a plain function: an upload's check, a
fixed copy, a pull request's `.tfmodel` pointer. (MLflow versions and re-checks:
tests/pipeline/test_mlflow_sources.py, against a real server.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.test_fixes import CHECKER as FIX_CHECKER
from tests.pipeline.test_fixes import EVENT as FIXABLE_EVENT
from tests.pipeline.test_fixes import MODEL as FIXABLE
from tests.truth import SHARED
from worker.errors import SourceRefused
from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.pipeline.fixes import write_fixed_copies
from worker.pipeline.github_tasks import pointer_reader
from worker.pipeline.process import ReportLocation, process_event
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.memory import MemoryObjectStore

CHECKER = build_checker(Settings(fleet="config/fleet.yaml"))
LOCATION = ReportLocation(None, "reports/")
MODEL = SHARED / "artifacts" / "tf2.21" / "new_op"


def store_with(root: Path, bucket: str, prefix: str) -> MemoryObjectStore:
    store = MemoryObjectStore()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            store.put(bucket, f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())
    return store


def test_an_upload_outside_the_bucket_list_is_never_read_nor_reported() -> None:
    store = store_with(MODEL, "secrets", "m")
    event = ObjectEvent("secrets", "m/saved_model.pb", "ObjectCreated:Put")
    outcome = process_event(event, store, CHECKER, LOCATION, ReadPolicy(("models",)))
    assert outcome.action == "refused"
    assert (store.tag_writes, store.report_writes) == (0, 0)


def test_no_fixed_copy_is_written_outside_the_bucket_list() -> None:
    # The model and fleet of tests/pipeline/test_fixes.py: legacy-edge gets a copy there.
    store = store_with(FIXABLE, "b", "m/1")
    outcome = process_event(FIXABLE_EVENT, store, FIX_CHECKER, LOCATION, ReadPolicy())
    assert outcome.status == "incompatible"
    # Copies would go under fixed/, which the list leaves out: none is written.
    policy = ReadPolicy(("b/m/*",))
    assert (
        write_fixed_copies(FIXABLE_EVENT, outcome, store, FIX_CHECKER, LOCATION, "fixed/", policy)
        == []
    )
    assert not any(key.startswith("fixed/") for _, key in store.objects)


@pytest.mark.parametrize("url", ["s3://secrets/model.tfmodel", "file:///etc/passwd", "gs://b/m"])
def test_a_pull_request_pointer_outside_the_rule_is_refused(url: str) -> None:
    read = pointer_reader(Settings(buckets=["models"]))
    with pytest.raises(SourceRefused):
        read(url)
