"""Report documents made the way the pipeline makes them: real TensorFlow-written
models, the example fleet, `process_event` over an in-memory object store."""

from __future__ import annotations

import functools
from pathlib import Path

from tests.truth import ROOT, SHARED
from worker.fleet.checker import Checker
from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.model.outcome import Outcome
from worker.pipeline.process import ReportLocation, process_event
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.tags import Tag

NEW_OP = SHARED / "artifacts/tf2.21/new_op"  # DecodeWebP: registered from 2.20.0
UNSTRIPPED = SHARED / "artifacts/tf2.21/new_attr_default_unstripped"
NONDEFAULT = SHARED / "artifacts/tf2.21/new_attr_nondefault"
STRIPPED = SHARED / "artifacts/tf2.12/savedmodel_v1_stripped"
LOCATION = ReportLocation(None, "tfcompat-reports/")


@functools.cache
def checker() -> Checker:
    return build_checker(Settings(fleet=str(ROOT / "config" / "fleet.yaml")))


def upload(
    store: MemoryObjectStore, model: Path, bucket: str, prefix: str, tags: list[Tag] | None = None
) -> str:
    for path in sorted(model.rglob("*")):
        if path.is_file():
            store.put(
                bucket, f"{prefix}/{path.relative_to(model).as_posix()}", path.read_bytes(), tags
            )
    return f"{prefix}/saved_model.pb"


def checked(
    model: Path,
    bucket: str = "models",
    prefix: str = "ranking/m/1",
    store: MemoryObjectStore | None = None,
    tags: list[Tag] | None = None,
    version_id: str | None = "v1",
) -> tuple[ObjectEvent, Outcome, MemoryObjectStore]:
    store = store or MemoryObjectStore()
    key = upload(store, model, bucket, prefix, tags)
    etag = store.head(bucket, key, version_id).etag
    event = ObjectEvent(bucket, key, "ObjectCreated:Put", version_id=version_id, etag=etag)
    return event, process_event(event, store, checker(), LOCATION, ReadPolicy()), store
