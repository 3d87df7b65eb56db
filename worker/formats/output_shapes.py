"""The `_output_shapes` a graph's producer recorded, for the nodes where they matter.

The graph summary leaves internal attrs out (node validation skips them), but a graph
import does not skip `_output_shapes`: it merges each node's recorded shapes into
what the importing release infers and fails where they disagree
(`GraphConstructor::ValidateShape`). Whether they can disagree depends on the
importing release's shape function, measured only for some ops
(`worker.model.shapes.SHAPE_CHANGED_OPS`); this module keeps, for the top-level nodes
of those ops, their recorded output shapes and those of their data inputs (each
input node's own `_output_shapes`). A graph without those ops, or without
`_output_shapes` at all, is found so by a byte search and costs nothing more.
Function bodies are instantiated without the check (no import), so they are not read.
"""

from __future__ import annotations

from collections.abc import Sequence

from worker.model.shapes import SHAPE_CHANGED_OPS, Shape, ShapedNode
from worker.proto import tensorflow_subset_pb2 as pb
from worker.proto import views_pb2 as views
from worker.proto.convert import attr_json

ATTR = "_output_shapes"
_MARKER = ATTR.encode()
_OP_NAMES = tuple(sorted(op.encode() for op in SHAPE_CHANGED_OPS))


def _shape(proto: pb.TensorShapeProto) -> Shape:
    if proto.unknown_rank:
        return None
    return tuple(d.size if d.size >= 0 else None for d in proto.dim)


def _recorded(node: views.NodeView) -> tuple[tuple[Shape, ...] | None, dict[str, object]]:
    """The node's `_output_shapes` (None without) and its other non-internal attrs."""
    shapes = None
    attrs: dict[str, object] = {}
    for raw in node.attr:
        entry = pb.NodeDef.AttrEntry.FromString(raw)
        if entry.key == ATTR:
            shapes = tuple(_shape(s) for s in entry.value.list.shape)
        elif not entry.key.startswith("_"):
            attrs[entry.key] = attr_json(entry.value)
    return shapes, dict(sorted(attrs.items()))


def shaped_nodes(serialized: bytes) -> tuple[ShapedNode, ...]:
    """`ShapedNode`s of a serialized GraphDef's top-level nodes (bytes upb accepted)."""
    if _MARKER not in serialized or not any(op in serialized for op in _OP_NAMES):
        return ()
    nodes: Sequence[views.NodeView] = views.GraphView.FromString(serialized).node
    wanted = [n for n in nodes if n.op in SHAPE_CHANGED_OPS]
    if not wanted:
        return ()
    needed = {n.name for n in wanted}
    for node in wanted:
        needed.update(_source(text)[0] for text in node.input if text[:1] != "^")
    recorded = {n.name: _recorded(n)[0] for n in nodes if n.name in needed}
    found: dict[tuple[object, ...], ShapedNode] = {}
    for node in wanted:
        outputs, attrs = _recorded(node)
        if outputs is None:
            continue
        inputs = []
        for text in node.input:
            if text[:1] == "^":
                continue
            name, index = _source(text)
            shapes = recorded.get(name)
            inputs.append(shapes[index] if shapes is not None and index < len(shapes) else None)
        key = (node.op, repr(attrs), tuple(inputs), outputs)
        seen = found.get(key)
        if seen is None:
            found[key] = ShapedNode(node.op, attrs, tuple(inputs), outputs, node.name)
        else:
            found[key] = ShapedNode(
                seen.op, seen.attrs, seen.inputs, seen.outputs, seen.example, seen.count + 1
            )
    return tuple(found.values())


def _source(text: str) -> tuple[str, int]:
    """'node:2' -> ('node', 2); 'node' -> ('node', 0)."""
    name, sep, output = text.rpartition(":")
    if sep and output.isdigit():
        return name, int(output)
    return text, 0
