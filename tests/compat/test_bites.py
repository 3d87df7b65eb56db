"""Where a missing kernel bites, judged on models real TensorFlow wrote
(tests/fixtures/tf-bites; tests/compat/test_agreement.py holds every row of the set to
what real releases did). These pin the stage each finding carries."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.functions import lowered_functions, scope_of
from worker.formats.read import read_path
from worker.model.consumer import Loader
from worker.model.findings import Code, Stage

BITES = Path(__file__).resolve().parents[1] / "fixtures" / "tf-bites" / "artifacts" / "tf2.15"


def _kernel_stages(case: str, release: str, loader: Loader) -> list[Stage]:
    catalog = load_catalog()
    path = BITES / case
    target = path / "graph.pb" if (path / "graph.pb").exists() else path
    artifact = read_path(str(target))[0]
    verdict = check_artifact(artifact, catalog.consumer(release, loader), catalog)
    return [f.stage for f in verdict.findings if f.code == Code.KERNEL_MISSING]


@pytest.mark.parametrize(
    ("case", "release", "loader", "stage"),
    [
        # a Session places the whole graph at its first run: the restore
        ("kernel_unused_branch_tf1", "2.8", Loader.SAVED_MODEL_V1, Stage.LOAD),
        # no restore: the first run is the request
        ("kernel_request_tf1_novar", "2.8", Loader.SAVED_MODEL_V1, Stage.REQUEST),
        # a graph import loads when the import returns; the restore is the caller's
        ("kernel_unused_branch_tf1", "2.8", Loader.GRAPH_IMPORT, Stage.REQUEST),
        # a GraphDef: its first run, the request, fails (path, unused node, function)
        ("frozen_kernel_unused", "2.8", Loader.GRAPH_IMPORT, Stage.REQUEST),
        ("frozen_kernel_in_function", "2.4", Loader.GRAPH_IMPORT, Stage.REQUEST),
        # a tf.function body is placed when a run calls it, not with the graph
        ("newop_request_fn", "2.21", Loader.SAVED_MODEL_V1, Stage.REQUEST),
        ("newop_nested_fn", "2.15", Loader.SAVED_MODEL_V1, Stage.REQUEST),
        ("newop_request_fn", "2.21", Loader.SAVED_MODEL_V2, Stage.REQUEST),
    ],
)
def test_a_missing_kernel_bites_where_tensorflow_meets_it(
    case: str, release: str, loader: Loader, stage: Stage
) -> None:
    assert _kernel_stages(case, release, loader)[:1] == [stage]


@pytest.mark.parametrize("loader", [Loader.SAVED_MODEL_V1, Loader.SAVED_MODEL_V2])
def test_a_function_no_signature_calls_is_never_run(loader: Loader) -> None:
    assert _kernel_stages("newop_unused_fn", "2.21", loader) == []


def test_function_calls_are_not_lowered_into_the_graph() -> None:
    graph = read_path(str(BITES / "newop_request_fn"))[0].meta_graphs[0].graph
    assert graph is not None
    assert scope_of(graph).request  # the serving function is reached...
    assert lowered_functions(graph) == frozenset()  # ...but not placed with the graph
