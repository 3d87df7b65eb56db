"""The reader keeps the `_output_shapes` of nodes whose op's shape function changed."""

from __future__ import annotations

import json
from dataclasses import asdict

from worker.formats.graph import graph_from_message
from worker.formats.output_shapes import shaped_nodes
from worker.model.artifact import graph_from_json
from worker.model.shapes import ShapedNode, describe
from worker.proto import tensorflow_subset_pb2 as pb


def _node(
    graph: pb.GraphDef, name: str, op: str, inputs: list[str], shapes: list[list[int]] | None
) -> None:
    node = graph.node.add(name=name, op=op, input=inputs)
    node.attr["T"].type = 1
    if shapes is not None:
        for dims in shapes:
            shape = node.attr["_output_shapes"].list.shape.add()
            for size in dims:
                shape.dim.add(size=size)


def grad_graph(with_shapes: bool = True) -> pb.GraphDef:
    """A TF 1.12-style gradient of an inference-mode fused batch norm: y and x [?,4,4,64],
    per-channel [64], reserve spaces recorded as [64] (the producer's shape function)."""
    g = pb.GraphDef()
    shapes = (lambda dims: dims) if with_shapes else (lambda dims: None)
    _node(g, "dy", "Placeholder", [], shapes([[-1, 4, 4, 64]]))
    _node(g, "x", "Placeholder", [], shapes([[-1, 4, 4, 64]]))
    _node(g, "scale", "Const", [], shapes([[64]]))
    _node(g, "bn", "FusedBatchNorm", ["x", "scale", "scale", "scale", "scale"], None)
    _node(
        g,
        "grad",
        "FusedBatchNormGrad",
        ["dy", "x", "scale", "bn:3", "bn:4", "^x"],
        shapes([[-1, 4, 4, 64], [64], [64], [64], [64]]),
    )
    g.node[-1].attr["is_training"].b = False
    return g


def test_a_changed_op_keeps_its_recorded_shapes_and_its_inputs() -> None:
    (found,) = shaped_nodes(grad_graph().SerializeToString())
    assert found.op == "FusedBatchNormGrad" and found.example == "grad"
    assert found.attrs["is_training"] == {"b": False}
    # bn has no _output_shapes: its outputs are unknown, not guessed
    assert found.inputs == ((None, 4, 4, 64), (None, 4, 4, 64), (64,), None, None)
    assert found.outputs[3] == (64,)
    assert describe(found.outputs[0]) == "[?,4,4,64]"


def test_nodes_without_output_shapes_or_changed_ops_cost_nothing() -> None:
    assert shaped_nodes(grad_graph(with_shapes=False).SerializeToString()) == ()
    g = pb.GraphDef()
    _node(g, "x", "Placeholder", [], [[3]])
    assert shaped_nodes(g.SerializeToString()) == ()


def test_the_summary_carries_them_through_json() -> None:
    graph = graph_from_message(grad_graph())
    assert len(graph.shaped_nodes) == 1
    again = graph_from_json(json.loads(json.dumps(asdict(graph))))
    assert again.shaped_nodes == graph.shaped_nodes
    assert isinstance(again.shaped_nodes[0], ShapedNode)
