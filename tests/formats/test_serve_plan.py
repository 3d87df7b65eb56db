"""The serve plan read from real TensorFlow-written SavedModels (tests/fixtures/tf-serve)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.formats.graph import graph_nodes_from_message
from worker.formats.read import read_path
from worker.formats.serve_plan import serve_plan
from worker.model.artifact import Artifact, artifact_from_json
from worker.model.serving import ServePlan
from worker.proto import tensorflow_subset_pb2 as pb

SERVE = Path(__file__).resolve().parents[1] / "fixtures" / "tf-serve" / "artifacts"
PRODUCERS = ["tf1.15", "tf2.12", "tf2.16", "tf2.21"]


def _read(producer: str, case: str) -> Artifact:
    return read_path(str(SERVE / producer / case))[0]


def _plan(producer: str, case: str) -> ServePlan:
    plan = _read(producer, case).meta_graphs[0].serve_plan
    assert plan is not None
    return plan


# Each family, from every producer: what the loader and a request run.
@pytest.mark.parametrize("producer", PRODUCERS)
def test_a_placeholder_the_signature_does_not_feed_is_unfed(producer: str) -> None:
    assert _plan(producer, "unfed_placeholder").requests[0].unfed == ("z",)
    assert _plan(producer, "placeholder_with_default").requests[0].unfed == ()


@pytest.mark.parametrize("producer", PRODUCERS)
def test_a_placeholder_reached_by_a_control_input_is_unfed(producer: str) -> None:
    assert _plan(producer, "unfed_placeholder_control_input").requests[0].unfed == ("z",)


@pytest.mark.parametrize("producer", PRODUCERS)
def test_only_the_signature_that_needs_it_lacks_the_feed(producer: str) -> None:
    plan = _plan(producer, "unfed_in_second_signature")
    assert plan.requests[0].name == "serving_default"
    assert plan.request("serving_default").unfed == ()  # type: ignore[union-attr]
    assert plan.request("with_offset").unfed == ("z",)  # type: ignore[union-attr]


@pytest.mark.parametrize("producer", PRODUCERS)
def test_init_ops_come_from_main_op_legacy_init_op_or_nowhere(producer: str) -> None:
    assert _plan(producer, "table_no_init").init is None
    assert _plan(producer, "table_main_op").init_source.startswith("collection")
    legacy = _plan(producer, "table_legacy_init_op")
    assert legacy.init is not None and legacy.init_source.startswith("collection")
    assert _plan(producer, "init_collection_two_ops").init_error


@pytest.mark.parametrize("producer", PRODUCERS)
def test_the_table_is_a_resource_its_init_op_uses_and_the_request_reads(producer: str) -> None:
    plan = _plan(producer, "table_main_op")
    tables = [i for i, r in enumerate(plan.resources) if r.kind == "table"]
    assert len(tables) == 1
    assert plan.init is not None and any(u.resource == tables[0] for u in plan.init.uses)
    assert any(u.resource == tables[0] for u in plan.requests[0].uses)
    # the default local init op tf.saved_model.load runs holds the table initializer
    assert _plan(producer, "table_no_init").default_init is not None


@pytest.mark.parametrize("producer", PRODUCERS)
def test_asset_files_are_what_the_loader_feeds(producer: str) -> None:
    assert _plan(producer, "vocab_asset_main_op").assets == ("vocab.txt",)


def test_a_plan_survives_the_json_round_trip() -> None:
    for case in ("table_main_op", "unfed_in_second_signature", "vocab_asset_main_op"):
        artifact = _read("tf2.21", case)
        assert artifact_from_json(artifact.to_json()) == artifact


_names = st.sampled_from(["a", "b", "c", "d", "x", "y", "save/Const", "init"])
_inputs = st.lists(
    st.builds(
        lambda n, k, c: ("^" if c else "") + n + (f":{k}" if k else ""),
        _names,
        st.integers(0, 2),
        st.booleans(),
    ),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(
        st.tuples(
            _names,
            st.sampled_from(
                [
                    "Placeholder",
                    "VarHandleOp",
                    "HashTableV2",
                    "Identity",
                    "AssignVariableOp",
                    "ReadVariableOp",
                    "NoOp",
                    "Switch",
                    "Merge",
                ]
            ),
            _inputs,
        ),
        max_size=8,
    ),
    fetch=_names,
    feed=_names,
    main_op=st.lists(_names, max_size=2),
)
def test_any_graph_gives_a_plan_whose_kinds_are_the_graphs(
    nodes: list[tuple[str, str, list[str]]], fetch: str, feed: str, main_op: list[str]
) -> None:
    """Names that do not exist, cycles, control inputs, dangling feeds: a plan, never a crash."""
    meta = pb.MetaGraphDef()
    for name, op, inputs in nodes:
        node = meta.graph_def.node.add(name=name, op=op)
        node.input.extend(inputs)
    signature = meta.signature_def["serving_default"]
    signature.outputs["y"].name = fetch + ":0"
    signature.inputs["x"].name = feed + ":0"
    meta.collection_def["saved_model_main_op"].node_list.value.extend(main_op)
    meta.saver_def.restore_op_name = "save/restore_all"
    graph, top = graph_nodes_from_message(meta.graph_def)
    plan = serve_plan(meta, top)
    for run in (plan.restore, plan.init, *plan.requests):
        if run is not None:
            assert all(0 <= k < len(graph.kinds) for k in run.kinds)
            assert all(0 <= u.resource < len(plan.resources) for u in run.uses)
    if len(main_op) != 1:
        assert plan.init is None and plan.init_error
