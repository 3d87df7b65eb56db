"""The worker's long-lived services: built once per settings, and the index hook's entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.pipeline import services
from worker.pipeline.process import ReportLocation, process_event
from worker.pipeline.services import build_checker, services_for
from worker.settings import Settings
from worker.sinks.index import model_from_report
from worker.sinks.index_codec import Encoder
from worker.sinks.memory import MemoryObjectStore

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
LOCATION = ReportLocation(None, "tfcompat-reports/")

# Real files of each kind the index holds: a frozen graph, a SavedModel's graph (its
# folder read whole), a Keras file, a TFLite file, and bytes that are no model (invalid).
UPLOADS = [
    ("tf-base/artifacts/tf2.21/frozen_graph/frozen_graph.pb", "m/frozen_graph.pb"),
    ("tf-base/artifacts/tf2.21/savedmodel_v2", "sm/saved_model.pb"),
    ("keras/models/tf2.1/fn_multi.h5", "k/fn_multi.h5"),
    ("tflite/models/tf2.21/dense_int8.tflite", "t/dense_int8.tflite"),
    (None, "bad/frozen.pb"),
]


@pytest.fixture(scope="module")
def checker() -> object:
    return build_checker(Settings(fleet=str(ROOT / "config" / "fleet.yaml")))


def stored(fixture: str | None, key: str) -> MemoryObjectStore:
    store = MemoryObjectStore()
    if fixture is None:
        store.put("models", key, b"\x08\x96\x01 not a graph")
        return store
    path = FIXTURES / fixture
    if path.is_dir():
        folder = key.rsplit("/", 1)[0]
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            store.put("models", f"{folder}/{file.relative_to(path).as_posix()}", file.read_bytes())
    else:
        store.put("models", key, path.read_bytes())
    return store


@pytest.mark.parametrize(("fixture", "key"), UPLOADS)
def test_index_entry_of_checked_artifacts_is_the_one_decoded_from_the_report(
    checker: object, fixture: str | None, key: str
) -> None:
    # The index hook takes the artifacts the check read; a reader of the stored report
    # decodes them from its metadata. Both must make the same entry, byte for byte.
    if fixture is not None and not (FIXTURES / fixture).exists():
        pytest.fail(f"fixture {fixture} is missing")
    store = stored(fixture, key)
    event = ObjectEvent("models", key, "ObjectCreated:Put")
    outcome = process_event(event, store, checker, LOCATION, ReadPolicy())  # type: ignore[arg-type]
    assert outcome.action == "checked" and outcome.document is not None
    assert outcome.artifacts is not None
    report_bucket, report_key = LOCATION.of(event)
    held = model_from_report(outcome.document, report_bucket, report_key, outcome.artifacts)
    decoded = model_from_report(outcome.document, report_bucket, report_key)
    assert held is not None and decoded is not None
    assert held == decoded
    held_parts, decoded_parts = Encoder(), Encoder()
    assert held_parts.entry(held) == decoded_parts.entry(decoded)
    assert held_parts.parts == decoded_parts.parts


def test_services_are_built_once_for_the_same_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Settings] = []
    monkeypatch.setattr(services, "build_services", lambda s: built.append(s) or object())
    settings = Settings(broker_url="redis://127.0.0.1:1/0", fleet="one.yaml")
    first = services_for(settings)
    assert services_for(settings) is first
    assert services_for(settings) is first
    assert built == [settings]


def test_services_are_built_again_when_a_setting_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    monkeypatch.setattr(services, "build_services", lambda s: built.append(s.fleet) or object())
    settings = Settings(broker_url="redis://127.0.0.1:1/0", fleet="before.yaml")
    before = services_for(settings)
    settings.fleet = "after.yaml"
    after = services_for(settings)
    assert after is not before
    assert built == ["before.yaml", "after.yaml"]
    # equal settings in another object share the services built for the first
    same = Settings(broker_url="redis://127.0.0.1:1/0", fleet="after.yaml")
    assert services_for(same) is after
    assert built == ["before.yaml", "after.yaml"]


def test_index_hook_puts_the_artifacts_it_was_handed(checker: object) -> None:
    # no decoding of the report's metadata on the upload path: the entry holds the very
    # artifacts the check read
    fixture, key = UPLOADS[0]
    store = stored(fixture, key)
    event = ObjectEvent("models", key, "ObjectCreated:Put")
    outcome = process_event(event, store, checker, LOCATION, ReadPolicy())  # type: ignore[arg-type]

    class Index:
        put_models: list[object] = []

        def put(self, model: object) -> None:
            self.put_models.append(model)

    index = Index()
    services.index_hook(index, store, LOCATION)(event, outcome)  # type: ignore[arg-type]
    (model,) = index.put_models
    assert outcome.artifacts
    assert all(a is b for a, b in zip(model.artifacts, outcome.artifacts, strict=True))  # type: ignore[attr-defined]
