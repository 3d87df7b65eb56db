"""What a graph's producer recorded about its nodes' output shapes, as plain data.

TensorFlow writes `_output_shapes` on every node of a graph exported with
`add_shapes=True` (every `.meta` of `tf.train.Saver`, and `tf.compat.v1` SavedModels
of graphs built that way): the shapes the producer's shape functions inferred. A
graph import merges them into what the importing release infers and fails where the
two disagree (`GraphConstructor::ValidateShape`). Only ops whose shape functions were
measured to change between releases can make a difference, so the reader keeps the
recorded shapes of their nodes only: `SHAPE_CHANGED_OPS`, the ops of the measured
table `worker/catalog/data/output_shapes.json` (tools/shapes/measure.py); a test
holds the two equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Dims = tuple[int | None, ...]
"""A shape of known rank: each dim, None where unknown."""

Shape = Dims | None
"""A shape; None: unknown rank."""

SHAPE_CHANGED_OPS = frozenset(
    {
        "DebugNumericSummaryV2",
        "DenseBincount",
        "FusedBatchNorm",
        "FusedBatchNormGrad",
        "FusedBatchNormGradV2",
        "FusedBatchNormGradV3",
        "FusedBatchNormV2",
        "FusedBatchNormV3",
        "UniqueV2",
        "UniqueWithCountsV2",
        "XlaDynamicSlice",
        "XlaKeyValueSort",
    }
)


@dataclass(frozen=True)
class ShapedNode:
    """Top-level nodes of one op carrying `_output_shapes`, with what their producer
    recorded: their own outputs' shapes and their data inputs' (from the input nodes'
    `_output_shapes`; None where an input node has none). Nodes alike in all of that
    are one entry with a count."""

    op: str
    attrs: dict[str, Any]  # the node's attrs in protobuf's JSON shape, internal ones left out
    inputs: tuple[Shape, ...]
    outputs: tuple[Shape, ...]
    example: str  # one node's name, for messages
    count: int = 1


def shape_from_json(value: Any) -> Shape:
    return None if value is None else tuple(value)


def shaped_node_from_json(d: dict[str, Any]) -> ShapedNode:
    return ShapedNode(
        op=d["op"],
        attrs=d["attrs"],
        inputs=tuple(shape_from_json(s) for s in d["inputs"]),
        outputs=tuple(shape_from_json(s) for s in d["outputs"]),
        example=d["example"],
        count=d.get("count", 1),
    )


def describe(shape: Shape) -> str:
    """As TensorFlow prints a shape in its messages: [?,96,1], or <unknown>."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


Dim = int | str | None
"""A dim of a measured template: a constant, an input symbol ('C'), None (unknown) or
'?' (computed from the inputs otherwise: never used to decide)."""

UNDECIDED = "?"


@dataclass(frozen=True)
class ShapeCase:
    """What one release's shape function infers for one op, attrs and input ranks, as
    measured (tools/shapes/measure.py): each output's dims in terms of the inputs'."""

    case_id: str
    op: str
    attrs: dict[str, Any]  # the attrs that define the case (type attrs left out)
    inputs: tuple[tuple[int | str, ...] | None, ...]  # each input's dims as symbols
    release: str  # the release measured, standing for its minor
    # each output's dims (None: unknown rank; UNDECIDED: the rank follows the inputs);
    # None when the shape function refused the case's inputs
    outputs: tuple[tuple[Dim, ...] | str | None, ...] | None
    error: str = ""
