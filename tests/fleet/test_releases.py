"""A consumer added as a catalog release takes the verdict recorded at upload for that
release: the same state and the same errors a check finds, on real TensorFlow-written
models, with no check; a stale, foreign or hostile record is never believed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.truth import FIXTURE_SETS, SHARED
from worker.catalog.catalog import load_catalog
from worker.compat.policy import Policy
from worker.compat.report import release_verdicts
from worker.fleet.digests import consumer_digest
from worker.fleet.impact import assess
from worker.fleet.releases import release_lookup, release_record, releases_of
from worker.formats.access import ReadPolicy
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.consumer import Loader
from worker.model.events import ObjectEvent
from worker.model.findings import Severity
from worker.model.index import IndexedModel
from worker.pipeline.process import ReportLocation, process_event
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.index import model_from_report
from worker.sinks.index_codec import Decoder, Encoder
from worker.sinks.memory import MemoryObjectStore

CATALOG = load_catalog()
# Every fourth TensorFlow-written SavedModel and frozen graph of the fixture sets.
PATHS = sorted(
    p.parent if p.name == "saved_model.pb" else p
    for s in FIXTURE_SETS
    for p in (s / "artifacts").glob("*/*/*.pb")
    if p.name not in ("fingerprint.pb", "keras_metadata.pb")  # SavedModel side files
)[::4]
OWN = Path(__file__).resolve().parents[1] / "fixtures"
PATHS += sorted(p.parent for p in (OWN / "unsafe").glob("tf*/*/saved_model.pb"))  # at-risk
PATHS += sorted((OWN / "unsafe").glob("tflite*/*.tflite"))
PATHS += sorted((OWN / "keras/models").glob("*/*.*"))[::6]
PATHS += sorted((OWN / "tflite/models").glob("*/*.tflite"))[::6]
ADDED = ["1.15", "2.4", "2.9", "2.12", "2.16", "2.21"]


def recorded(artifacts: tuple[Artifact, ...], key: str = "k") -> IndexedModel:
    """The index entry the upload path makes: each artifact judged by every release."""
    lookup = release_lookup(CATALOG)
    reports = [
        {
            "release_verdicts": release_record(
                release_verdicts(a, CATALOG.range_consumers(), CATALOG), lookup
            )
        }
        for a in artifacts
    ]
    return IndexedModel(
        "m",
        key,
        None,
        "m",
        "r.json",
        "compatible",
        artifacts,
        {},
        {},
        releases=releases_of(reports),
    )


def judged(impact: Any, name: str) -> list[tuple[str, str | None, tuple[str, ...]]]:
    return [
        (m.model.key, c.after, c.reasons)
        for m in impact.models
        for c in m.changes
        if c.consumer == name
    ]


@pytest.mark.parametrize("path", PATHS, ids=[f"{p.parent.name}/{p.name}" for p in PATHS])
def test_a_recorded_release_verdict_is_what_a_check_finds(path: Path) -> None:
    model = recorded(tuple(read_path(str(path))))
    assert model.releases is not None
    for release in ADDED:
        added = [CATALOG.consumer(release, name="new")]
        taken = assess([model], added, history=CATALOG)
        checked = assess([replace(model, releases=None)], added, history=CATALOG)
        assert (taken.checks, taken.recorded) == (0, 1) and checked.checks >= 1
        assert checked.recorded == 0
        assert judged(taken, "new") == judged(checked, "new"), release
        assert taken.rechecked == checked.rechecked == ("new",)


def test_an_object_of_several_artifacts_takes_each_release_at_its_worst() -> None:
    artifacts = (  # the second fails where the first serves
        *read_path(str(SHARED / "artifacts/tf2.12/savedmodel_v1_stripped")),
        *read_path(str(SHARED / "artifacts/tf2.21/new_op")),
    )
    model = recorded(artifacts)
    for release in ADDED:
        added = [CATALOG.consumer(release, name="new")]
        taken = assess([model], added, history=CATALOG)
        checked = assess([replace(model, releases=None)], added, history=CATALOG)
        assert taken.checks == 0 and checked.checks == 2
        assert judged(taken, "new") == judged(checked, "new"), release


def test_another_loader_a_stale_catalog_or_a_fleet_policy_is_checked() -> None:
    model = recorded(tuple(read_path(str(SHARED / "artifacts/tf2.21/new_op"))))
    assert model.releases is not None
    graph_import = CATALOG.consumer("2.12", Loader.GRAPH_IMPORT, name="n")
    assert assess([model], [graph_import], history=CATALOG).checks == 1
    stale = replace(model, releases=replace(model.releases, digest="an older catalog"))
    assert assess([stale], [CATALOG.consumer("2.12")], history=CATALOG).checks == 1
    strict = Policy(unsafe_ops=Severity.ERROR)
    assert assess([model], [CATALOG.consumer("2.12")], history=CATALOG, policy=strict).checks == 1


def test_the_record_survives_the_index_and_the_upload_path_writes_it() -> None:
    artifacts = tuple(read_path(str(SHARED / "artifacts/tf2.21/new_op")))
    model = recorded(artifacts)
    encoder = Encoder()
    blob = encoder.entry(model)
    assert Decoder(dict(encoder.parts), lambda ref: None).entry(blob).releases == model.releases

    store = MemoryObjectStore()
    root = SHARED / "artifacts/tf2.21/new_op"
    for path in sorted(root.rglob("*")):
        if path.is_file():
            store.put("b", f"m/{path.relative_to(root).as_posix()}", path.read_bytes())
    checker = build_checker(Settings(fleet="config/fleet.yaml"))
    outcome = process_event(
        ObjectEvent("b", "m/saved_model.pb", "ObjectCreated:Put"),
        store,
        checker,
        ReportLocation(None, "reports/"),
        ReadPolicy(),
    )
    assert outcome.document is not None
    entry = model_from_report(outcome.document, "b", outcome.report or "")
    assert entry is not None and entry.releases == model.releases


HOSTILE: list[Any] = [
    None,
    "runs",
    {"digest": 1, "runs": [], "errors": []},
    {"digest": "d", "runs": [["compatible", None, 0]], "errors": []},
    {"digest": "d", "runs": [["fine", None, 1]], "errors": []},
    {"digest": "d", "runs": [["incompatible", 3, 1]], "errors": [["x"]]},
    {"digest": "d", "runs": [["incompatible", True, 1]], "errors": [["x"]]},
    {"digest": "d", "runs": [["compatible", None]], "errors": []},
    {"digest": "d", "runs": [["compatible", None, 1]], "errors": [[1]]},
    {"digest": "d", "runs": {"a": 1}, "errors": []},
]


@pytest.mark.parametrize("record", HOSTILE)
def test_a_malformed_record_is_no_record_and_the_model_is_still_indexed(record: Any) -> None:
    document = {
        "object": {"bucket": "m", "key": "k", "version_id": None},
        "status": "compatible",
        "artifacts": [{"release_verdicts": record}],
        "fleet": {"verdicts": {}, "consumer_digests": {}},
    }
    entry = model_from_report(document, "r", "rk")
    assert entry is not None and entry.releases is None


def test_a_consumer_judged_alike_keeps_taking_the_fleet_verdict_first() -> None:
    model = recorded(tuple(read_path(str(SHARED / "artifacts/tf2.21/new_op"))))
    old = CATALOG.consumer("2.21", name="canary")
    model = replace(
        model, verdicts={"canary": "compatible"}, consumer_digests={"canary": consumer_digest(old)}
    )
    impact = assess([model], [replace(old, name="canary-2")], history=CATALOG)
    assert impact.checks == 0 and impact.rechecked == ()


# Any JSON a report may hold where the record goes: a record or none, never a crash; a
# record answers for every position, and past its end says so.
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 90)
    | st.sampled_from(["compatible", "at-risk", "incompatible", "unknown", "x", "d"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["digest", "runs", "errors", "other"]), inner, max_size=4)
    ),
    max_leaves=20,
)


RECORD = st.builds(
    lambda digest, runs, errors: {"digest": digest, "runs": runs, "errors": errors},
    st.sampled_from(["d", "e"]),
    st.lists(
        st.tuples(
            st.sampled_from(["compatible", "incompatible", "at-risk", "bogus"]),
            st.none() | st.integers(-1, 3),
            st.integers(-1, 4),
        ).map(list),
        max_size=5,
    ),
    st.lists(st.lists(st.text(max_size=3), max_size=3), max_size=3),
)


@given(st.lists(JSON | RECORD, min_size=1, max_size=3))
def test_any_stored_record_is_a_record_or_none_never_a_crash(records: list[Any]) -> None:
    found = releases_of([{"release_verdicts": r} for r in records])
    if found is not None:
        total = sum(count for _, _, count in found.runs)
        assert all(found.at(n) is not None for n in range(total))
        assert found.at(total) is None
