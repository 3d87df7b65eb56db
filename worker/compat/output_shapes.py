"""A recorded `_output_shapes` the consumer's shape function contradicts.

A graph import (`tf.import_graph_def`, `tf.compat.v1.train.import_meta_graph`, and
the Python SavedModel loaders, which import the MetaGraph's graph with it) runs every
node's shape function and then merges the shapes the producer recorded in the node's
`_output_shapes` into the inferred ones; where the two cannot be merged (another
rank, or two known dims that differ) the import fails
(`GraphConstructor::ValidateShape` in tensorflow/core/common_runtime/
graph_constructor.cc, only when `importing` and `validate_shape`, which every Python
import sets). TensorFlow's C++ SavedModel loader (TF Serving's) builds the graph with
`ConvertGraphDefToGraph`, which is not an import: it never reads `_output_shapes`.
Function bodies are instantiated the same way, so only top-level nodes count.

What a release infers is measured, not modelled: `catalog/data/output_shapes.json`
(tools/shapes/measure.py) holds, for ops whose shape functions changed between
releases, each release's answer as a template over the inputs' dims. A node is
judged only when a measured case matches it (the op, the case's attrs, its inputs'
recorded ranks) and its template for that output is known; an op, release or case
not measured decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from worker.compat.subject import Subject
from worker.model.artifact import AttrJSON
from worker.model.consumer import Loader
from worker.model.findings import Code, Finding, Fix, FixKind, error
from worker.model.shapes import UNDECIDED, Dims, Shape, ShapeCase, ShapedNode, describe

ATTR = "_output_shapes"


def validates_output_shapes(s: Subject) -> bool:
    """Whether the consumer's loader imports the graph (and so checks `_output_shapes`)."""
    if s.consumer.tf_serving and s.artifact.format == "savedmodel":
        return False  # the C++ loader: ConvertGraphDefToGraph, not an import
    if s.tf2_load:
        return False  # tf.saved_model.load of a TF2 SavedModel reads its functions only
    return s.consumer.loader in (Loader.SAVED_MODEL_V1, Loader.SAVED_MODEL_V2, Loader.GRAPH_IMPORT)


def output_shape_findings(s: Subject) -> Iterable[Finding]:
    graph, release = s.graph, s.consumer.tensorflow
    if graph is None or not graph.shaped_nodes or release is None:
        return []
    if not validates_output_shapes(s):
        return []
    findings: list[Finding] = []
    reported: set[str] = set()
    for node in graph.shaped_nodes:
        if node.op in reported:
            continue
        cases = s.history.shape_cases(node.op, release)
        if not cases:
            continue
        case = matching_case(node, cases, partial(_default, s, node.op))
        if case is None or case.outputs is None:
            continue
        conflict = first_conflict(case, node)
        if conflict is None:
            continue
        reported.add(node.op)
        index, inferred, recorded, why = conflict
        findings.append(
            error(
                Code.OUTPUT_SHAPES,
                f"Node '{node.example}' has an {ATTR} attribute inconsistent with the "
                f"GraphDef for output #{index}: {why} ({node.op}'s shape function in this "
                f"release infers {describe(inferred)} where the producer recorded "
                f"{describe(recorded)}; {_nodes(node)}measured by tools/shapes/measure.py). "
                f"The import fails; {ATTR} is informational and a graph without it loads.",
                op=node.op,
                fix=Fix(FixKind.STRIP_OUTPUT_SHAPES, op=node.op),
            )
        )
    return findings


def _nodes(node: ShapedNode) -> str:
    return f"{node.count} nodes alike, " if node.count > 1 else ""


def _default(s: Subject, op: str, attr: str) -> AttrJSON | None:
    """The attr's default when the node leaves it out: the producer's own OpDef, else
    the newest release's."""
    producer = s.producer_ops.get(op)
    found = producer.attr(attr) if producer is not None else None
    if found is not None and found.default is not None:
        return found.default
    return s.history.attr_default(op, attr)


DefaultOf = Callable[[str], AttrJSON | None]


def matching_case(
    node: ShapedNode, cases: Iterable[ShapeCase], default_of: DefaultOf
) -> ShapeCase | None:
    """The measured case this node is an instance of: same attrs (defaults filled in),
    as many data inputs, each of the case's rank; None when none is."""
    for case in cases:
        if len(case.inputs) != len(node.inputs):
            continue
        if not all(_attr(node, name, default_of) == value for name, value in case.attrs.items()):
            continue
        if all(
            dims is None or (shape is not None and len(shape) == len(dims))
            for dims, shape in zip(case.inputs, node.inputs, strict=True)
        ):
            return case
    return None


def _attr(node: ShapedNode, name: str, default_of: DefaultOf) -> AttrJSON | None:
    found = node.attrs.get(name)
    return found if found is not None else default_of(name)


def infer(case: ShapeCase, inputs: tuple[Shape, ...]) -> list[Shape]:
    """What the case's release infers for each output, given the inputs' shapes: each
    symbol bound to the first input dim that knows it; what the template does not
    determine is unknown."""
    bound: dict[str, int] = {}
    for symbols, shape in zip(case.inputs, inputs, strict=True):
        if symbols is None or shape is None:
            continue
        for symbol, value in zip(symbols, shape, strict=True):
            if isinstance(symbol, str) and value is not None:
                bound.setdefault(symbol, value)
    found: list[Shape] = []
    for template in case.outputs or ():
        if template is None or isinstance(template, str):
            found.append(None)  # unknown rank, or a rank the template cannot tell
            continue
        known: list[int | None] = []
        for dim in template:
            if isinstance(dim, int):
                known.append(dim)
            elif dim is None or dim == UNDECIDED:
                known.append(None)
            else:
                known.append(bound.get(dim))
        found.append(tuple(known))
    return found


def merge_error(inferred: Shape, recorded: Shape) -> str | None:
    """Why `InferenceContext::Merge(inferred, recorded)` fails, in its words; None: it
    merges."""
    if inferred is None or recorded is None:
        return None
    if len(inferred) != len(recorded):
        return f"Shapes must be equal rank, but are {len(inferred)} and {len(recorded)}"
    for index, (a, b) in enumerate(zip(inferred, recorded, strict=True)):
        if a is not None and b is not None and a != b:
            return (
                f"Dimension {index} in both shapes must be equal, but are {a} and {b}. "
                f"Shapes are {describe(inferred)} and {describe(recorded)}."
            )
    return None


def first_conflict(case: ShapeCase, node: ShapedNode) -> tuple[int, Dims, Dims, str] | None:
    """(output, inferred, recorded, why) of the node's first output whose recorded shape
    the case's release contradicts; None when every output merges."""
    for index, (inferred, recorded) in enumerate(
        zip(infer(case, node.inputs), node.outputs, strict=False)
    ):
        why = merge_error(inferred, recorded)
        if why is not None and inferred is not None and recorded is not None:
            return index, inferred, recorded, why
    return None
