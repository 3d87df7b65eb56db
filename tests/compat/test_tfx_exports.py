"""TFX's own exports (tfx 1.21.0's test data, fetched by pinned version and checksum:
tools/fixtures/real_models.py), judged as TensorFlow judged them
(tests/fixtures/real-models): a tf.Transform layer restored into an Estimator export
makes its vocabulary tables by calling restored `_creator` functions, and TFMA's eval
export names one tensor as two inputs of its signature. A graph import meets the
first bad node first, whether its op is unknown or one of its attrs."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from tests.truth import REAL, read_artifacts
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.model.artifact import Artifact
from worker.model.consumer import Loader
from worker.model.findings import Code, Stage
from worker.model.serving import ServePlan, serve_plan_from_json
from worker.model.verdict import Verdict


def _model(name: str) -> Artifact:
    (artifact,) = read_artifacts(REAL, f"tfx-1.21.0/{name}")
    return artifact


def _plan(name: str) -> ServePlan:
    plan = _model(name).meta_graphs[0].serve_plan
    assert plan is not None
    return plan


def _verdict(name: str, release: str, loader: Loader) -> Verdict:
    catalog = load_catalog()
    return check_artifact(_model(name), catalog.consumer(release, loader), catalog)


def _first_error(verdict: Verdict) -> tuple[str, str]:
    found = next(f for f in verdict.findings if f.severity == "error")
    return str(found.code), str(found.stage)


def test_a_table_a_restored_creator_function_makes_is_a_resource() -> None:
    plan = _plan("estimator_2022")
    tables = {i: r for i, r in enumerate(plan.resources) if r.kind == "table"}
    # two vocabularies, each made by a top-level call of a restored function body that
    # calls a `_creator` holding the HashTableV2
    assert sorted(r.node for r in tables.values()) == [
        "transform_features_layer/StatefulPartitionedCall",
        "transform_features_layer/StatefulPartitionedCall_1",
    ]
    assert {r.op for r in tables.values()} == {"HashTableV2"}
    assert plan.init is not None and {u.resource for u in plan.init.uses} == set(tables)
    request = plan.request("serving_default")
    assert request is not None and set(tables) <= {u.resource for u in request.uses}


@pytest.mark.parametrize("release", ["2.4", "2.12", "2.21"])
def test_the_graph_import_fails_the_request_on_tables_only_the_init_op_fills(
    release: str,
) -> None:
    """TensorFlow: the bare graph's import, the restore, then 'Table not initialized'."""
    imported = _verdict("estimator_2022", release, Loader.GRAPH_IMPORT)
    assert (imported.loads, imported.serves) == (True, False)
    assert _first_error(imported) == (Code.RESOURCE_UNINITIALIZED, Stage.REQUEST)
    served = _verdict("estimator_2022", release, Loader.SAVED_MODEL_V1)  # the init op runs
    assert (served.loads, served.serves) == (True, True)


def test_a_tensor_named_by_two_inputs_of_a_signature_is_recorded() -> None:
    (run,) = _plan("tfma_eval").requests
    assert run.name == "eval"
    assert run.repeated == ("transform_features_layer/StatefulPartitionedCall_6:11",)
    assert _plan("estimator_2022").request("serving_default").repeated == ()  # type: ignore[union-attr]
    plan = _plan("tfma_eval")
    assert serve_plan_from_json(asdict(plan)) == plan


@pytest.mark.parametrize("release", ["2.4", "2.12", "2.21"])
def test_tf_saved_model_load_fails_a_signature_taking_one_tensor_twice(release: str) -> None:
    """TensorFlow: 'TF_Output ... appears more than once in the input list' at load."""
    loaded = _verdict("tfma_eval", release, Loader.SAVED_MODEL_V2)
    assert (loaded.loads, loaded.serves) == (False, False)
    assert _first_error(loaded) == (Code.REQUEST_FEED, Stage.LOAD)
    # the v1 loader never prunes a signature at load: its tags fail it first
    v1 = _verdict("tfma_eval", release, Loader.SAVED_MODEL_V1)
    assert _first_error(v1) == (Code.SAVED_MODEL_TAGS, Stage.LOAD)


@pytest.mark.parametrize("loader", [Loader.SAVED_MODEL_V1, Loader.GRAPH_IMPORT])
def test_the_first_bad_node_gives_the_first_error(loader: Loader) -> None:
    """1.15 imports node by node (GraphConstructor: the op's lookup, then the attrs):
    ParseExampleV2 at the input, unknown to it, fails before SparseSegmentSum's
    Tsegmentids attr deeper in the model, though both are reported."""
    verdict = _verdict("estimator_2022", "1.15", loader)
    errors = [str(f.code) for f in verdict.findings if f.severity == "error"]
    assert errors[0] == Code.OP_NOT_REGISTERED
    assert Code.ATTR_UNKNOWN in errors
