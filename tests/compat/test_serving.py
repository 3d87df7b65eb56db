"""Functions as TensorFlow sees them, and what a request needs beyond a load: rules
checked on models real TensorFlow wrote (tests/fixtures/tf-real), whose real
outcomes the agreement test compares on every row."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.truth import OWN
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.functions import function_scope, scope_of
from worker.compat.report import artifact_report, exit_status
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.consumer import Loader
from worker.model.findings import Code, Stage
from worker.model.verdict import Status, consumer_status, parse_status

ARTIFACTS = OWN / "artifacts"


def model(name: str) -> Artifact:
    (artifact,) = read_path(str(ARTIFACTS / name))
    return artifact


def verdict(name: str, release: str, loader: Loader = Loader.SAVED_MODEL_V1):  # type: ignore[no-untyped-def]
    catalog = load_catalog()
    return check_artifact(model(name), catalog.consumer(release, loader), catalog)


def test_keras3_module_save_scope_names_request_and_restore_functions() -> None:
    graph = model("tf2.21/keras3_module_save").meta_graphs[0].graph
    scope = function_scope(graph)
    assert any("serve" in f for f in scope.request)
    assert any("traced_restore" in f for f in scope.restore)
    assert not any("traced_save" in f for f in scope.request | scope.restore)
    assert scope_of(graph, every_function=True).reachable == frozenset(graph.functions)


# (model, release, loader) -> (loads, serves, first error code, its stage)
CASES = [
    # Keras 3 + tf.saved_model.save: the v1 loader and a graph import load it, no request
    # succeeds; tf.saved_model.load serves it; model.export() serves everywhere.
    ("tf2.21/keras3_module_save", "2.21", Loader.SAVED_MODEL_V1,
     (True, False, Code.RESOURCE_UNINITIALIZED, Stage.REQUEST)),
    ("tf2.18/keras3_module_save", "2.15", Loader.GRAPH_IMPORT,
     (True, False, Code.RESOURCE_UNINITIALIZED, Stage.REQUEST)),
    ("tf2.21/keras3_module_save", "2.21", Loader.SAVED_MODEL_V2, (True, True, None, None)),
    ("tf2.21/keras3_export", "2.15", Loader.SAVED_MODEL_V1, (True, True, None, None)),
    # A function nothing reaches: only tf.saved_model.load validates it.
    ("tf2.21/unreachable_function", "2.12", Loader.SAVED_MODEL_V1, (True, True, None, None)),
    ("tf2.21/unreachable_function", "2.12", Loader.SAVED_MODEL_V2,
     (False, False, Code.OP_NOT_REGISTERED, Stage.LOAD)),
    ("tf2.18/unreachable_function_v2", "2.15", Loader.GRAPH_IMPORT, (True, True, None, None)),
    # An ignored attr changes a type inside a reachable function: the load fails.
    ("tf2.15/function_topk_index_type", "2.12", Loader.SAVED_MODEL_V1,
     (False, False, Code.EDGE_TYPE, Stage.LOAD)),
    ("tf2.18/function_topk_index_type", "2.8", Loader.SAVED_MODEL_V2,
     (False, False, Code.EDGE_TYPE, Stage.LOAD)),
    # A function-body attr the v1 loader checks at the first call: loads, requests fail.
    ("tf2.8/function_attr_default_unstripped", "2.4", Loader.SAVED_MODEL_V1,
     (True, False, Code.ATTR_UNKNOWN, Stage.REQUEST)),
    # CheckPinned loads in a CPU build and fails when it runs.
    ("tf2.18/new_op", "2.21", Loader.SAVED_MODEL_V1,
     (True, False, Code.OP_NEEDS_CUDA, Stage.REQUEST)),
]  # fmt: skip


@pytest.mark.parametrize(("name", "release", "loader", "expected"), CASES)
def test_loads_serves_and_first_error(
    name: str, release: str, loader: Loader, expected: tuple[object, ...]
) -> None:
    v = verdict(name, release, loader)
    errors = [f for f in v.findings if f.severity == "error"]
    first = (errors[0].code, errors[0].stage) if errors else (None, None)
    assert (v.loads, v.serves, *first) == expected


def test_no_registry_means_unknown_not_loads() -> None:
    v = verdict("tf2.12/savedmodel_v1_stripped", "1.12")
    assert (v.loads, v.serves, v.status) == (None, None, Status.UNKNOWN)
    assert [f.code for f in v.findings if f.code == Code.REGISTRY_UNAVAILABLE]


def test_a_version_rule_fails_even_without_a_registry() -> None:
    v = verdict("tf2.12/min_consumer_raised", "1.12")
    assert (v.loads, v.serves, v.status) == (False, False, Status.INCOMPATIBLE)


def test_the_forward_window_alone_is_information() -> None:
    v = verdict("tf2.21/savedmodel_v1_stripped", "2.15")
    window = [f for f in v.findings if f.code == Code.FORWARD_WINDOW]
    assert window and window[0].severity == "info"
    assert v.status == Status.COMPATIBLE


def test_upgrade_fixes_name_a_release_the_ranges_list() -> None:
    catalog = load_catalog()
    artifact = model("tf2.21/new_op")
    report = artifact_report(
        artifact, [catalog.consumer("2.15")], catalog.range_consumers(), catalog
    )
    (consumer,) = report["consumers"]
    fix = consumer["findings"][0]["fix"]
    assert fix["kind"] == "upgrade_to"
    assert report["compatible_releases"][0].startswith(fix["release"])


def test_a_gap_in_the_ranges_is_explained() -> None:
    catalog = load_catalog()
    report = artifact_report(model("tf2.12/savedmodel_v2"), [], catalog.range_consumers(), catalog)
    assert len(report["compatible_releases"]) == 2, report["compatible_releases"]
    (note,) = report["range_notes"]
    assert "DisableCopyOnRead" in note and "checks function bodies only when they run" in note


# A consumer's status follows serves; unknown never reads as compatible.
STATUS_CASES = [
    ((True, True, []), Status.COMPATIBLE),
    ((True, True, ["info"]), Status.COMPATIBLE),
    ((True, True, ["warning"]), Status.AT_RISK),
    ((True, False, []), Status.INCOMPATIBLE),
    ((False, False, []), Status.INCOMPATIBLE),
    ((None, None, []), Status.UNKNOWN),
    ((False, None, []), Status.INCOMPATIBLE),
]


@pytest.mark.parametrize(("answer", "expected"), STATUS_CASES)
def test_consumer_status(
    answer: tuple[bool | None, bool | None, list[str]], expected: Status
) -> None:
    assert consumer_status(*answer) == expected


def test_worst_status_and_legacy_states() -> None:
    assert Status.worst(["compatible", "unknown", "at-risk"]) == Status.UNKNOWN
    assert Status.worst(["unknown", "incompatible"]) == Status.INCOMPATIBLE
    assert (parse_status("loads"), parse_status("fails")) == (
        Status.COMPATIBLE,
        Status.INCOMPATIBLE,
    )


# Exit status: 0 all serve, 1 some cannot, 2 invalid, 3 only unknown and no failure.
@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["compatible", "at-risk"], 0),
        (["compatible", "incompatible", "unknown"], 1),
        (["invalid", "incompatible"], 2),
        (["unknown", "compatible"], 3),
    ],
)
def test_exit_status(statuses: list[str], code: int) -> None:
    assert exit_status([{"status": s} for s in statuses]) == code


def test_fixture_models_exist() -> None:
    assert Path(ARTIFACTS / "tf2.21/keras3_module_save/saved_model.pb").exists()
