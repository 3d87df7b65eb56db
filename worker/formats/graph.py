"""GraphDef reading: node kinds and edges out, in time that follows the metadata.

A binary message is parsed by protobuf (upb), after `skim` has left out its
bulk when the file is large, so what is accepted is what TensorFlow's parser
accepts and memory follows the metadata, not the weights.

The summary is built from views (`views.proto`) that hand nodes and attr
entries over as bytes: identical nodes and identical attr entries are found
by comparing bytes in C and turned into Python objects once, so a graph of a
million copies of one node costs about what protobuf's own parse costs.

XlaCallModule's `module` (a whole StableHLO program, up to megabytes) is kept as its
bytecode header, which names the StableHLO version it was written for: the rest
never decides whether a release runs it (`worker.model.xla`).

Internal attrs (names starting with "_", such as `_output_shapes`) are left
out of the summary: TensorFlow's node validation skips them too. A graph import
does read `_output_shapes`; what it needs of them is kept apart
(`worker.formats.output_shapes`).
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from google.protobuf.message import DecodeError, Message

from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats.output_shapes import shaped_nodes
from worker.formats.skim import skim
from worker.formats.source import Source
from worker.model.artifact import AttrJSON, Edge, Graph, NodeKind, PinnedDevice, VersionDef
from worker.model.xla import module_header
from worker.proto import tensorflow_subset_pb2 as pb
from worker.proto import views_pb2 as views
from worker.proto.convert import attr_json, dtype_name, shape_json, version_def

WHOLE_BYTES = 16 << 20
"""Files up to this size are parsed whole; larger ones are skimmed first."""

MAX_NODES = 10_000_000
MAX_TEXT_BYTES = 512 << 20

M = TypeVar("M", bound=Message)
_NO_ATTRS: tuple[str, dict[str, AttrJSON]] = ("{}", {})
NodeViews = Callable[[], Sequence[views.NodeView]]
TopNodes = dict[str, tuple[str, tuple[str, ...], int]]
"""Top-level node name -> (op, inputs as written, "^x" for control, its kind's index)."""


def parse(cls: type[M], data: bytes, what: str) -> M:
    """`data` parsed as `cls`; protobuf's complaint becomes our one-line error."""
    try:
        return cls.FromString(data)
    except Exception as exc:
        reason = " ".join(str(exc).split()).rsplit(": ", 1)[-1]
        raise InvalidArtifact(f"{what}: not valid protobuf ({reason})") from None


def read_message(source: Source, cls: type[M]) -> tuple[M, bytes]:
    """The source parsed as `cls`, and the (possibly skimmed) bytes that were parsed."""
    if source.size <= WHOLE_BYTES:
        data = source.read_at(0, source.size)
    else:
        data = skim(source, cls.DESCRIPTOR)
    return parse(cls, data, source.name), data


def _summary_attr(value: pb.AttrValue) -> AttrJSON:
    if value.WhichOneof("value") == "tensor":
        # Tensor contents never decide whether a node loads; dtype and shape
        # are kept so Consts of one type and shape collapse into one kind.
        tensor = value.tensor
        return {
            "tensor": {"dtype": dtype_name(tensor.dtype), "shape": shape_json(tensor.tensor_shape)}
        }
    return attr_json(value)


class GraphBuilder:
    """Collects nodes into kinds; edges are resolved once every name is known."""

    def __init__(self, keep_nodes: bool = False) -> None:
        # top-level node name -> (op, inputs as written, kind index), when asked for
        self.nodes: TopNodes | None = {} if keep_nodes else None
        self._kinds: dict[tuple[str, str, int, str | None], int] = {}
        self._kind_list: list[NodeKind] = []
        self._counts: list[int] = []
        self._kind_of_node: dict[str, int] = {}
        self._pending: set[tuple[str, int, int, int]] = set()
        self._function_nodes: dict[tuple[str, str], int] = {}
        self._function_pending: set[tuple[str, str, str, int, int, int]] = set()
        self._functions: list[str] = []
        self._attr_sets: dict[tuple[bytes, ...], tuple[str, dict[str, AttrJSON]]] = {}
        self._entries: dict[bytes, tuple[str, AttrJSON | None]] = {}
        self.node_count = 0
        self.library_node_count = 0
        # (device, op, function) -> [example node, count], for nodes that name a device
        self._devices: dict[tuple[str, str, str | None], list[Any]] = {}

    def add_function(self, name: str, raw_nodes: Sequence[bytes], nodes: NodeViews) -> None:
        self._functions.append(name)
        self.add_nodes(raw_nodes, nodes, function=name)

    def add_nodes(
        self, raw_nodes: Sequence[bytes], nodes: NodeViews, function: str | None = None
    ) -> None:
        """Nodes as bytes, and `nodes()` parsing them as views of one message
        (index-aligned).

        Identical nodes (same bytes) are counted in C and read once: their
        kind, name and edges are those of the first. When most nodes repeat,
        only the distinct ones are parsed.
        """
        if self.node_count + self.library_node_count + len(raw_nodes) > MAX_NODES:
            raise LimitExceeded(f"graph has more than {MAX_NODES} nodes")
        counts = Counter(raw_nodes)
        if len(counts) * 4 < len(raw_nodes):
            for raw, count in counts.items():
                self._add(views.NodeView.FromString(raw), count, function)
            return
        parsed = nodes()
        if len(counts) == len(raw_nodes):
            for node in parsed:
                self._add(node, 1, function)
            return
        # Reversed, so the first occurrence of each node's bytes is the one kept.
        first = dict(zip(reversed(raw_nodes), range(len(raw_nodes) - 1, -1, -1), strict=True))
        for raw, count in counts.items():
            self._add(parsed[first[raw]], count, function)

    def _add(self, node: views.NodeView, count: int, function: str | None) -> None:
        inputs = [i for i in node.input if i[:1] != "^"]
        attrs = node.attr
        attrs_key, attr_values = self._attrs(tuple(attrs)) if attrs else _NO_ATTRS
        op = node.op
        key = (op, attrs_key, len(inputs), function)
        index = self._kinds.get(key)
        if index is None:
            index = len(self._kind_list)
            self._kinds[key] = index
            self._kind_list.append(NodeKind(op, attr_values, len(inputs), 0, node.name, function))
            self._counts.append(0)
        self._counts[index] += count
        if node.device:
            pinned = self._devices.setdefault((node.device, op, function), [node.name, 0])
            pinned[1] += count
        if function is not None:
            # Function bodies name outputs "node:arg:index" and the function's own
            # inputs by their bare arg name (no edge between kinds).
            self.library_node_count += count
            self._function_nodes[(function, node.name)] = index
            for position, text in enumerate(inputs):
                parts = text.split(":")
                if len(parts) == 3 and parts[2].isdigit():
                    self._function_pending.add(
                        (function, parts[0], parts[1], int(parts[2]), index, position)
                    )
            return
        self.node_count += count
        self._kind_of_node[node.name] = index
        if self.nodes is not None:
            self.nodes[node.name] = (op, tuple(node.input), index)
        pending = self._pending
        for position, text in enumerate(inputs):
            name, sep, output = text.rpartition(":")
            if sep and output.isdigit():
                pending.add((name, int(output), index, position))
            else:
                pending.add((text, 0, index, position))

    def _attrs(self, entries: tuple[bytes, ...]) -> tuple[str, dict[str, AttrJSON]]:
        """A node's summarised attrs (a map: the last entry for a key wins) and their key."""
        found = self._attr_sets.get(entries)
        if found is None:
            attrs: dict[str, AttrJSON] = {}
            for raw in entries:
                name, value = self._entry(raw)
                attrs.pop(name, None)
                if value is not None:
                    attrs[name] = value
            attrs = dict(sorted(attrs.items()))
            found = self._attr_sets[entries] = (json.dumps(attrs, sort_keys=True), attrs)
        return found

    def _entry(self, raw: bytes) -> tuple[str, AttrJSON | None]:
        found = self._entries.get(raw)
        if found is None:
            entry = pb.NodeDef.AttrEntry.FromString(raw)
            if entry.key.startswith("_"):
                value = None
            elif entry.key == "module" and entry.value.WhichOneof("value") == "s":
                # XlaCallModule's program: its header names what reading it needs
                value = {"s": base64.b64encode(module_header(entry.value.s)).decode("ascii")}
            else:
                value = _summary_attr(entry.value)
            found = self._entries[raw] = (entry.key, value)
        return found

    def build(self, versions: VersionDef | None) -> Graph:
        """The summary; an absent VersionDef reads as producer 0, as TensorFlow reads it."""
        kind_of = self._kind_of_node
        distinct = {
            (dst, position, kind_of[name], output, "")
            for name, output, dst, position in self._pending
            if name in kind_of
        }
        function_nodes = self._function_nodes
        distinct.update(
            (dst, position, function_nodes[(function, name)], output, arg)
            for function, name, arg, output, dst, position in self._function_pending
            if (function, name) in function_nodes
        )
        edges = [
            Edge(src, output, dst, position, arg)
            for dst, position, src, output, arg in sorted(distinct)
        ]
        kinds = tuple(
            NodeKind(k.op, k.attrs, k.inputs, count, k.example, k.function)
            for k, count in zip(self._kind_list, self._counts, strict=True)
        )
        return Graph(
            versions=versions if versions is not None else VersionDef(producer=0),
            node_count=self.node_count,
            kinds=kinds,
            edges=tuple(edges),
            functions=tuple(sorted(self._functions)),
            library_node_count=self.library_node_count,
            devices=tuple(
                PinnedDevice(device, op, example, function, count)
                for (device, op, function), (example, count) in sorted(
                    self._devices.items(), key=lambda item: (item[0][2] or "", item[0][:2])
                )
            ),
        )


def graph_versions(graph_def: pb.GraphDef) -> VersionDef | None:
    """The VersionDef, or None. The deprecated `version` field is not read: graph.proto
    says TensorFlow ignores it entirely (every change before `versions` was forward
    compatible), so a graph holding only it reads as producer 0, as TensorFlow reads it."""
    if graph_def.HasField("versions"):
        return version_def(graph_def.versions)
    return None


def _summarise(
    serialized: bytes,
    functions: list[tuple[str, bytes]],
    versions: VersionDef | None,
    keep_nodes: bool = False,
) -> tuple[Graph, TopNodes]:
    """The graph's summary, and its top-level nodes when `keep_nodes` (else empty)."""
    builder = GraphBuilder(keep_nodes)
    try:
        builder.add_nodes(
            views.GraphNodes.FromString(serialized).node,
            lambda: views.GraphView.FromString(serialized).node,
        )
        for name, data in functions:
            builder.add_function(
                name,
                views.FunctionNodes.FromString(data).node_def,
                lambda data=data: views.FunctionView.FromString(data).node_def,  # type: ignore[misc]
            )
    except DecodeError as exc:
        raise _too_deep(exc) from exc
    graph = builder.build(versions)
    shaped = shaped_nodes(serialized)
    if shaped:
        graph = replace(graph, shaped_nodes=shaped)
    return graph, builder.nodes or {}


def _too_deep(exc: DecodeError) -> LimitExceeded:
    """A message nested past protobuf's depth limit (100): TensorFlow's parser refuses
    it too. A text-format file can hold one (the Python text parser has no such
    limit), and the binary re-reading of it is where the limit bites."""
    reason = " ".join(str(exc).split()).rsplit(": ", 1)[-1]
    return LimitExceeded(f"graph nested more deeply than protobuf's limit of 100 ({reason})")


def _functions(graph_def: pb.GraphDef) -> list[tuple[str, bytes]]:
    return [(f.signature.name, f.SerializeToString()) for f in graph_def.library.function]


def graph_from_message(graph_def: pb.GraphDef) -> Graph:
    """Summarise a parsed GraphDef."""
    return graph_nodes_from_message(graph_def, keep_nodes=False)[0]


def graph_nodes_from_message(
    graph_def: pb.GraphDef, keep_nodes: bool = True
) -> tuple[Graph, TopNodes]:
    """Summarise a parsed GraphDef, and keep its top-level nodes' names, ops, inputs and
    kinds: what a run's pruning follows (`worker.formats.serve_plan`)."""
    return _summarise(
        graph_def.SerializeToString(),
        _functions(graph_def),
        graph_versions(graph_def),
        keep_nodes,
    )


def read_graph_def(source: Source) -> Graph:
    """A binary frozen GraphDef. One with no node, function or version at all is
    refused: whatever those bytes are, they are no graph."""
    graph_def, data = read_message(source, pb.GraphDef)
    versions, functions = graph_versions(graph_def), _functions(graph_def)
    if not graph_def.node and not functions and versions is None:
        raise InvalidArtifact(f"{source.name}: not a GraphDef (no nodes, functions or versions)")
    del graph_def  # the summary reads views of `data`; the parsed copy can go
    return _summarise(data, functions, versions)[0]
