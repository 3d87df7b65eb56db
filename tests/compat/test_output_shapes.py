"""A recorded `_output_shapes` that the consumer's measured shape function contradicts
fails a graph import; what no release was measured for decides nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.output_shapes import infer, merge_error
from worker.model.artifact import Artifact, Graph, MetaGraph, VersionDef
from worker.model.consumer import Loader
from worker.model.findings import Code, FixKind
from worker.model.shapes import Shape, ShapeCase, ShapedNode

CATALOG = load_catalog()

# InferenceContext::Merge(inferred, recorded), in TensorFlow's words
MERGES: list[tuple[Shape, Shape, str | None]] = [
    ((0,), (64,), "Dimension 0 in both shapes must be equal, but are 0 and 64. "
     "Shapes are [0] and [64]."),
    ((None, 4), (7, 4), None),  # an unknown dim merges with anything
    ((3,), None, None),  # so does an unknown rank
    (None, (3,), None),
    ((3, 1), (3,), "Shapes must be equal rank, but are 2 and 1"),
]  # fmt: skip


@pytest.mark.parametrize(("inferred", "recorded", "why"), MERGES)
def test_merge_fails_as_tensorflow_says(inferred: Shape, recorded: Shape, why: str | None) -> None:
    assert merge_error(inferred, recorded) == why


def test_a_template_binds_symbols_to_the_first_input_that_knows_them() -> None:
    case = ShapeCase(
        "c", "Op", {}, (("N", "C"), ("C",)), "2.2.3", (("N", "C"), (0,), ("C", "?"), None)
    )
    assert infer(case, ((None, 8), (8,))) == [(None, 8), (0,), (8, None), None]
    assert infer(case, ((2, None), None)) == [(2, None), (0,), (None, None), None]


def grad(is_training: bool, reserve: tuple[int, ...], channels: int = 64) -> ShapedNode:
    """FusedBatchNormGrad as musicnn's TF 1.12 graphs hold it (NHWC, C known)."""
    x = (None, 187, 1, channels)
    c = (channels,)
    return ShapedNode(
        "FusedBatchNormGrad",
        {"T": {"type": "DT_FLOAT"}, "is_training": {"b": is_training},
         "data_format": {"s": "TkhXQw=="}, "epsilon": {"f": 0.001}},
        (x, x, c, c, c),
        (x, c, c, reserve, reserve),
        "gradients/bn/FusedBatchNorm_1_grad/FusedBatchNormGrad",
    )  # fmt: skip


def meta(*nodes: ShapedNode) -> Artifact:
    graph = Graph(VersionDef(26), 10, (), (), shaped_nodes=nodes)
    return Artifact("m.meta", "metagraph", 0, "", meta_graphs=(MetaGraph((), graph),))


def shape_errors(artifact: Artifact, release: str, loader: Loader = Loader.SAVED_MODEL_V1) -> list:
    consumer = CATALOG.consumer(release, loader)
    verdict = check_artifact(artifact, consumer, CATALOG)
    return [f for f in verdict.findings if f.code == Code.OUTPUT_SHAPES]


# Inference-mode gradients: 1.x infers the reserve spaces as [C], 2.x as [0] (measured)
def test_a_1x_graph_fails_to_import_in_2x_with_tensorflows_message() -> None:
    (found,) = shape_errors(meta(grad(False, (64,))), "2.2")
    assert found.message.startswith(
        "Node 'gradients/bn/FusedBatchNorm_1_grad/FusedBatchNormGrad' has an _output_shapes "
        "attribute inconsistent with the GraphDef for output #3: Dimension 0 in both shapes "
        "must be equal, but are 0 and 64. Shapes are [0] and [64]."
    )
    assert found.fix is not None and found.fix.kind == FixKind.STRIP_OUTPUT_SHAPES
    verdict = check_artifact(meta(grad(False, (64,))), CATALOG.consumer("2.2"), CATALOG)
    assert verdict.loads is False


def test_a_2x_graph_fails_in_1x_and_loads_in_2x() -> None:
    artifact = meta(grad(False, (0,)))
    assert shape_errors(artifact, "1.15")
    assert not shape_errors(artifact, "2.2")


def test_training_mode_gradients_infer_alike_everywhere() -> None:
    for release in ("1.13", "1.15", "2.2"):
        assert not shape_errors(meta(grad(True, (0,))), release)


def test_tf_serving_does_not_import_a_saved_models_graph() -> None:
    serving = replace(CATALOG.consumer("2.2"), tf_serving=True)
    saved_model = replace(meta(grad(False, (64,))), format="savedmodel")
    verdict = check_artifact(saved_model, serving, CATALOG)
    assert not [f for f in verdict.findings if f.code == Code.OUTPUT_SHAPES]
    # a .meta is imported whoever reads it
    verdict = check_artifact(meta(grad(False, (64,))), serving, CATALOG)
    assert [f for f in verdict.findings if f.code == Code.OUTPUT_SHAPES]


def test_what_was_not_measured_decides_nothing() -> None:
    # a release with no measurement, an op of no case, inputs of another rank
    assert not shape_errors(meta(grad(False, (64,))), "1.12")
    other = ShapedNode("MatMul", {}, ((2, 3), (3, 4)), ((5, 5),), "mm")
    assert not shape_errors(meta(other), "2.2")
    node = grad(False, (64,))
    flat = ShapedNode(node.op, node.attrs, ((64,),) * 5, node.outputs, node.example)
    assert not shape_errors(meta(flat), "2.2")
