"""GraphDef reading: nodes in, node kinds and edges out, in bounded memory.

`read_graph_def` walks a binary GraphDef on its source: a node or function of
at most `SMALL_MESSAGE` bytes is parsed by protobuf; a larger one (a Const
holding weights) is walked, its tensor contents skipped by offset. Memory is
then bounded by the summary (kinds, edges, one name per node), never by the
file.

Internal attrs (names starting with "_", such as `_output_shapes`) are left
out of the summary: TensorFlow's node validation skips them too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats import wire
from worker.formats.wire import Cursor, Field
from worker.model.artifact import AttrJSON, Edge, Graph, NodeKind, VersionDef
from worker.proto import tensorflow_subset_pb2 as pb
from worker.proto.convert import attr_json, version_def

SMALL_MESSAGE = 4 << 20
MAX_NODES = 10_000_000
MAX_TEXT_BYTES = 512 << 20

# Field numbers, from TensorFlow's graph.proto, node_def.proto, function.proto,
# attr_value.proto and tensor.proto.
_GRAPH_NODE, _GRAPH_LIBRARY, _GRAPH_VERSION, _GRAPH_VERSIONS = 1, 2, 3, 4
_NODE_NAME, _NODE_OP, _NODE_INPUT, _NODE_DEVICE, _NODE_ATTR = 1, 2, 3, 4, 5
_LIB_FUNCTION = 1
_FUNC_SIGNATURE, _FUNC_NODE_DEF = 1, 3
_ENTRY_KEY, _ENTRY_VALUE = 1, 2
_ATTR_TENSOR = 8
_TENSOR_DTYPE, _TENSOR_SHAPE = 1, 2


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _summary_attrs(node: pb.NodeDef) -> dict[str, AttrJSON]:
    attrs = {}
    for name, value in node.attr.items():
        if name.startswith("_"):
            continue
        converted = attr_json(value)
        if "tensor" in converted:
            # Tensor contents never decide whether a node loads; dtype and shape
            # are kept so Consts of one type and shape collapse into one kind.
            converted = {"tensor": {k: converted["tensor"][k] for k in ("dtype", "shape")}}
        attrs[name] = converted
    return attrs


def _split_input(text: str) -> tuple[str, int] | None:
    """'node:2' -> ('node', 2); 'node' -> ('node', 0); control inputs -> None."""
    if text.startswith("^"):
        return None
    name, sep, index = text.rpartition(":")
    if sep and index.isdigit():
        return name, int(index)
    return text, 0


@dataclass
class GraphBuilder:
    """Collects nodes into kinds; edges are resolved once every name is known."""

    _kinds: dict[tuple[str, str, int, str | None], int] = field(default_factory=dict)
    _kind_list: list[NodeKind] = field(default_factory=list)
    _counts: list[int] = field(default_factory=list)
    _kind_of_node: dict[str, int] = field(default_factory=dict)
    _pending: set[tuple[str, int, int, int]] = field(default_factory=set)
    _function_nodes: dict[tuple[str, str], int] = field(default_factory=dict)
    _function_pending: set[tuple[str, str, str, int, int, int]] = field(default_factory=set)
    _functions: list[str] = field(default_factory=list)
    node_count: int = 0
    library_node_count: int = 0

    def add_function(self, name: str) -> None:
        self._functions.append(name)

    def add_node(self, node: pb.NodeDef, function: str | None = None) -> None:
        if self.node_count + self.library_node_count >= MAX_NODES:
            raise LimitExceeded(f"graph has more than {MAX_NODES} nodes")
        attrs = _summary_attrs(node)
        inputs = [i for i in node.input if not i.startswith("^")]
        key = (node.op, json.dumps(attrs, sort_keys=True), len(inputs), function)
        index = self._kinds.get(key)
        if index is None:
            index = len(self._kind_list)
            self._kinds[key] = index
            self._kind_list.append(NodeKind(node.op, attrs, len(inputs), 0, node.name, function))
            self._counts.append(0)
        self._counts[index] += 1
        if function is not None:
            # Function bodies name outputs "node:arg:index" and the function's own
            # inputs by their bare arg name (no edge between kinds).
            self.library_node_count += 1
            self._function_nodes[(function, node.name)] = index
            for position, text in enumerate(inputs):
                parts = text.split(":")
                if len(parts) == 3 and parts[2].isdigit():
                    pending = (function, parts[0], parts[1], int(parts[2]), index, position)
                    self._function_pending.add(pending)
            return
        self.node_count += 1
        self._kind_of_node[node.name] = index
        for position, text in enumerate(inputs):
            source = _split_input(text)
            if source is not None:
                self._pending.add((source[0], source[1], index, position))

    def build(self, versions: VersionDef | None) -> Graph:
        """The summary; an absent VersionDef reads as producer 0, as TensorFlow reads it."""
        edges = set()
        for src_name, output, dst, position in self._pending:
            src = self._kind_of_node.get(src_name)
            if src is not None:
                edges.add(Edge(src, output, dst, position))
        for function, src_name, arg, output, dst, position in self._function_pending:
            src = self._function_nodes.get((function, src_name))
            if src is not None:
                edges.add(Edge(src, output, dst, position, arg))
        kinds = tuple(
            NodeKind(k.op, k.attrs, k.inputs, count, k.example, k.function)
            for k, count in zip(self._kind_list, self._counts, strict=True)
        )
        return Graph(
            versions=versions if versions is not None else VersionDef(producer=0),
            node_count=self.node_count,
            kinds=kinds,
            edges=tuple(sorted(edges, key=lambda e: (e.dst, e.input, e.src, e.output))),
            functions=tuple(sorted(self._functions)),
            library_node_count=self.library_node_count,
        )


def _parse(
    message: pb.NodeDef | pb.FunctionDef | pb.OpDef, data: bytes, what: str, source: str
) -> None:
    try:
        message.ParseFromString(data)
    except Exception as exc:
        raise InvalidArtifact(f"{source}: {what} is not valid protobuf ({exc})") from None


def _walk_tensor(cursor: Cursor, into: pb.TensorProto) -> None:
    for f in cursor.fields():
        if f.number == _TENSOR_DTYPE and f.wire_type == wire.VARINT:
            into.dtype = f.value  # type: ignore[assignment]
        elif f.number == _TENSOR_SHAPE and f.wire_type == wire.LENGTH_DELIMITED:
            into.tensor_shape.ParseFromString(cursor.payload(f))


def _walk_attr_entry(cursor: Cursor, node: pb.NodeDef) -> None:
    key = ""
    value_field: Field | None = None
    for f in cursor.fields():
        if f.number == _ENTRY_KEY and f.wire_type == wire.LENGTH_DELIMITED:
            key = _text(cursor.payload(f))
        elif f.number == _ENTRY_VALUE and f.wire_type == wire.LENGTH_DELIMITED:
            value_field = f
    if value_field is None:
        node.attr[key].Clear()
        return
    if value_field.value <= SMALL_MESSAGE:
        node.attr[key].ParseFromString(cursor.payload(value_field))
        return
    value_cursor = cursor.sub(value_field)
    for f in value_cursor.fields():
        if f.number == _ATTR_TENSOR and f.wire_type == wire.LENGTH_DELIMITED:
            _walk_tensor(value_cursor.sub(f), node.attr[key].tensor)


def _walk_node(cursor: Cursor) -> pb.NodeDef:
    node = pb.NodeDef()
    for f in cursor.fields():
        if f.wire_type != wire.LENGTH_DELIMITED:
            continue
        if f.number == _NODE_ATTR:
            if f.value <= SMALL_MESSAGE:
                entry = pb.NodeDef.AttrEntry()
                entry.ParseFromString(cursor.payload(f))
                node.attr[entry.key].CopyFrom(entry.value)
            else:
                _walk_attr_entry(cursor.sub(f), node)
        elif f.value > SMALL_MESSAGE:
            raise LimitExceeded(f"{cursor.source.name}: node field {f.number} of {f.value} bytes")
        elif f.number == _NODE_NAME:
            node.name = _text(cursor.payload(f))
        elif f.number == _NODE_OP:
            node.op = _text(cursor.payload(f))
        elif f.number == _NODE_INPUT:
            node.input.append(_text(cursor.payload(f)))
        elif f.number == _NODE_DEVICE:
            node.device = _text(cursor.payload(f))
    return node


def _node(cursor: Cursor, f: Field) -> pb.NodeDef:
    if f.value <= SMALL_MESSAGE:
        node = pb.NodeDef()
        _parse(node, cursor.payload(f), "a node", cursor.source.name)
        return node
    return _walk_node(cursor.sub(f))


def _walk_function(cursor: Cursor, builder: GraphBuilder) -> None:
    name = ""
    nodes: list[Field] = []
    for f in cursor.fields():
        if f.wire_type != wire.LENGTH_DELIMITED:
            continue
        if f.number == _FUNC_SIGNATURE:
            signature = pb.OpDef()
            _parse(signature, cursor.payload(f), "a function signature", cursor.source.name)
            name = signature.name
        elif f.number == _FUNC_NODE_DEF:
            nodes.append(f)
    builder.add_function(name)
    for f in nodes:
        builder.add_node(_node(cursor, f), function=name)


def _read_library(cursor: Cursor, builder: GraphBuilder) -> None:
    for f in cursor.fields():
        if f.number != _LIB_FUNCTION or f.wire_type != wire.LENGTH_DELIMITED:
            continue
        if f.value <= SMALL_MESSAGE:
            function = pb.FunctionDef()
            _parse(function, cursor.payload(f), "a library function", cursor.source.name)
            add_function(builder, function)
        else:
            _walk_function(cursor.sub(f), builder)


def add_function(builder: GraphBuilder, function: pb.FunctionDef) -> None:
    builder.add_function(function.signature.name)
    for node in function.node_def:
        builder.add_node(node, function=function.signature.name)


def read_graph_def(cursor: Cursor) -> Graph:
    """Summarise the binary GraphDef between the cursor's position and end."""
    builder = GraphBuilder()
    versions: VersionDef | None = None
    legacy_version: int | None = None
    for f in cursor.fields():
        if f.number == _GRAPH_NODE and f.wire_type == wire.LENGTH_DELIMITED:
            builder.add_node(_node(cursor, f))
        elif f.number == _GRAPH_LIBRARY and f.wire_type == wire.LENGTH_DELIMITED:
            _read_library(cursor.sub(f), builder)
        elif f.number == _GRAPH_VERSIONS and f.wire_type == wire.LENGTH_DELIMITED:
            message = pb.VersionDef()
            try:
                message.ParseFromString(cursor.payload(f))
            except Exception:
                raise InvalidArtifact(f"{cursor.source.name}: VersionDef is not valid") from None
            versions = version_def(message)
        elif f.number == _GRAPH_VERSION and f.wire_type == wire.VARINT:
            legacy_version = f.value
    if versions is None and legacy_version is not None:
        versions = VersionDef(producer=legacy_version)
    return builder.build(versions)


def graph_from_message(graph_def: pb.GraphDef) -> Graph:
    """Summarise a parsed GraphDef (the text-format path)."""
    builder = GraphBuilder()
    for node in graph_def.node:
        builder.add_node(node)
    for function in graph_def.library.function:
        add_function(builder, function)
    versions: VersionDef | None = None
    if graph_def.HasField("versions"):
        versions = version_def(graph_def.versions)
    elif graph_def.version:
        versions = VersionDef(producer=graph_def.version)
    return builder.build(versions)
