"""Apply drops to protobuf bytes on the wire, keeping every other byte as it was.

The rewrite walks only the path from the top message to the node attr maps
(SavedModel -> MetaGraphDef -> GraphDef -> NodeDef, and GraphDef -> library ->
FunctionDef -> NodeDef) and removes whole attr map entries. Everything else
(fields our proto subset does not know, field order, tensor contents, other
MetaGraphDef parts such as the object graph or the saver) is copied from the
source byte for byte; only the length prefixes of the messages that enclose a
removed entry are written anew. A message without removals is copied whole.

An `_output_shapes` drop (`Drop.strips_shapes`) reaches the top-level nodes of its op
and every node downstream of them (`plan.STRIPS_SHAPES` says why): a first pass over
a GraphDef's nodes reads their names, ops and inputs to find those, the second
removes the attr from them. Function bodies keep theirs.

Output is a list of pieces, (offset, length) ranges of the source or new bytes,
so a copy of a multi-gigabyte frozen graph is streamed, never held in memory.
TensorFlow writes SavedModels deterministically (fields in number order, map
entries sorted by key); removing entries keeps that order, so the copy is the
deterministic serialization of the edited message (what fingerprints hash).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, Union

from worker.errors import InvalidArtifact
from worker.fix.plan import OUTPUT_SHAPES, Drop
from worker.formats import wire
from worker.formats.source import Source
from worker.formats.wire import Reader
from worker.proto import tensorflow_subset_pb2 as pb
from worker.proto.convert import attr_json

Piece = Union[tuple[int, int], bytes]  # noqa: UP007 - a type alias, not an annotation
COPY_CHUNK = 1 << 20

# Field numbers (TensorFlow's saved_model.proto, meta_graph.proto, graph.proto,
# function.proto, node_def.proto).
_SAVED_MODEL = {2: "meta_graph"}
_META_GRAPH = {2: "graph"}
_GRAPH = {1: "node", 2: "library"}
_LIBRARY = {1: "function"}
_FUNCTION = {3: "node"}
_SCHEMAS: dict[str, dict[int, str]] = {
    "saved_model": _SAVED_MODEL,
    "meta_graph": _META_GRAPH,
    "graph": _GRAPH,
    "library": _LIBRARY,
    "function": _FUNCTION,
}
_NODE_NAME, _NODE_OP, _NODE_INPUT, _NODE_ATTR = 1, 2, 3, 5
_GRAPH_NODE = 1
_ENTRY_KEY, _ENTRY_VALUE = 1, 2


@dataclass(frozen=True)
class Span:
    number: int
    wire_type: int
    start: int  # where the field's tag starts
    payload: int  # where its payload starts (length-delimited) or its value ends
    end: int


SMALL_MESSAGE = 4 << 20
"""Sub-messages up to this size are parsed whole to decide a rewrite; larger ones are
walked field by field."""


def Cursor(source: Source, start: int = 0, end: int | None = None) -> Reader:
    """A reader over `source[start:end]` (the whole source by default)."""
    return Reader(source, start, source.size if end is None else end)


def spans(cursor: Reader) -> Iterator[Span]:
    """Every field of the message under the cursor, with where its tag starts."""
    while cursor.pos < cursor.end:
        start = cursor.pos
        key = cursor.varint()
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise InvalidArtifact(f"{cursor.source.name}: field number 0 at offset {start}")
        if wire_type == wire.VARINT:
            cursor.varint()
            payload = cursor.pos
        elif wire_type == wire.LENGTH_DELIMITED:
            length = cursor.varint()
            payload = cursor.pos
            cursor.skip(length)
        elif wire_type == wire.FIXED64:
            cursor.skip(8)
            payload = cursor.pos
        elif wire_type == wire.FIXED32:
            cursor.skip(4)
            payload = cursor.pos
        else:
            raise InvalidArtifact(
                f"{cursor.source.name}: unsupported wire type {wire_type} at offset {start}"
            )
        yield Span(number, wire_type, start, payload, cursor.pos)


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@dataclass
class Edit:
    """The outcome of rewriting one message: its pieces and what was removed."""

    pieces: list[Piece] = field(default_factory=list)
    removed: list[tuple[str, str, str | None]] = field(default_factory=list)  # (op, attr, fn)

    @property
    def size(self) -> int:
        return sum(p[1] if isinstance(p, tuple) else len(p) for p in self.pieces)


def downstream(nodes: Iterable[tuple[str, str, list[str]]], ops: set[str]) -> set[str]:
    """The names of the nodes of `ops` and of every node that reads their outputs,
    directly or not, from (name, op, inputs) of a graph's nodes (control inputs, '^x',
    carry no shape and are not followed)."""
    readers: dict[str, list[str]] = {}
    found: set[str] = set()
    for name, op, inputs in nodes:
        if op in ops:
            found.add(name)
        for text in inputs:
            if text[:1] == "^":
                continue
            source, sep, output = text.rpartition(":")
            readers.setdefault(source if sep and output.isdigit() else text, []).append(name)
    todo = deque(found)
    while todo:
        for reader in readers.get(todo.popleft(), ()):
            if reader not in found:
                found.add(reader)
                todo.append(reader)
    return found


class Rewriter:
    """Removes the attr map entries that `drops` cover from one source."""

    def __init__(self, source: Source, drops: Mapping[tuple[str, str], Drop]) -> None:
        self.source = source
        self.drops = {key: d for key, d in drops.items() if not d.strips_shapes}
        self.shape_ops = {d.op for d in drops.values() if d.strips_shapes}
        self._shapeless: set[str] = set()  # the current graph's nodes losing _output_shapes

    def message(self, kind: str, start: int, end: int, function: str | None = None) -> Edit | None:
        """The rewritten message of `kind` at [start, end); None when nothing changes."""
        if kind == "node":
            return self._node(start, end, function)
        if kind == "graph" and self.shape_ops:
            outer = self._shapeless
            self._shapeless = downstream(self._graph_nodes(start, end), self.shape_ops)
            try:
                return self._message(kind, start, end, function)
            finally:
                self._shapeless = outer
        return self._message(kind, start, end, function)

    def _graph_nodes(self, start: int, end: int) -> Iterator[tuple[str, str, list[str]]]:
        """(name, op, inputs) of a GraphDef's top-level nodes."""
        for span in spans(Cursor(self.source, start, end)):
            if span.number != _GRAPH_NODE or span.wire_type != wire.LENGTH_DELIMITED:
                continue
            name = op = ""
            inputs: list[str] = []
            for field_ in spans(Cursor(self.source, span.payload, span.end)):
                if field_.wire_type != wire.LENGTH_DELIMITED:
                    continue
                if field_.number == _NODE_NAME:
                    name = self._text(field_)
                elif field_.number == _NODE_OP:
                    op = self._text(field_)
                elif field_.number == _NODE_INPUT:
                    inputs.append(self._text(field_))
            yield name, op, inputs

    def _message(self, kind: str, start: int, end: int, function: str | None) -> Edit | None:
        schema = _SCHEMAS[kind]
        cursor = Cursor(self.source, start, end)
        edit = Edit()
        changed = False
        fields = list(spans(cursor))
        name = self._function_name(fields) if kind == "function" else function
        for span in fields:
            child = schema.get(span.number)
            sub = None
            if child is not None and span.wire_type == wire.LENGTH_DELIMITED:
                sub = self.message(child, span.payload, span.end, name)
            if sub is None:
                edit.pieces.append((span.start, span.end - span.start))
                continue
            changed = True
            edit.pieces.append(varint((span.number << 3) | wire.LENGTH_DELIMITED))
            edit.pieces.append(varint(sub.size))
            edit.pieces.extend(sub.pieces)
            edit.removed.extend(sub.removed)
        return edit if changed else None

    def _function_name(self, fields: list[Span]) -> str:
        for span in fields:
            if span.number == 1 and span.wire_type == wire.LENGTH_DELIMITED:
                signature = pb.OpDef()
                size = span.end - span.payload
                if size > SMALL_MESSAGE:
                    break
                try:
                    signature.ParseFromString(self.source.read_at(span.payload, size))
                except Exception:
                    raise InvalidArtifact(
                        f"{self.source.name}: a function signature is not valid protobuf"
                    ) from None
                return signature.name
        return ""

    def _node(self, start: int, end: int, function: str | None) -> Edit | None:
        if not self.drops and not self._shapeless:
            return None
        cursor = Cursor(self.source, start, end)
        fields = list(spans(cursor))
        op = node = ""
        for span in fields:
            if span.number == _NODE_OP and span.wire_type == wire.LENGTH_DELIMITED:
                op = self._text(span)
            elif span.number == _NODE_NAME and span.wire_type == wire.LENGTH_DELIMITED:
                node = self._text(span)
        shapeless = function is None and node in self._shapeless
        if not shapeless and not any(o == op for o, _ in self.drops):
            return None
        edit = Edit()
        for span in fields:
            if span.number == _NODE_ATTR and span.wire_type == wire.LENGTH_DELIMITED:
                name = self._dropped_attr(op, span, shapeless)
                if name is not None:
                    edit.removed.append((op, name, function))
                    continue
            edit.pieces.append((span.start, span.end - span.start))
        return edit if edit.removed else None

    def _dropped_attr(self, op: str, entry: Span, shapeless: bool = False) -> str | None:
        cursor = Cursor(self.source, entry.payload, entry.end)
        key: str | None = None
        value: Span | None = None
        for span in spans(cursor):
            if span.number == _ENTRY_KEY and span.wire_type == wire.LENGTH_DELIMITED:
                key = self._text(span)
            elif span.number == _ENTRY_VALUE and span.wire_type == wire.LENGTH_DELIMITED:
                value = span
        if key is None:
            return None
        if shapeless and key == OUTPUT_SHAPES:
            return key
        drop = self.drops.get((op, key))
        if drop is None:
            return None
        if drop.default is None:
            return key
        if value is None or value.end - value.payload > SMALL_MESSAGE:
            return None  # an unset value is no default; a huge one is none either
        message = pb.AttrValue()
        try:
            message.ParseFromString(self.source.read_at(value.payload, value.end - value.payload))
        except Exception:
            raise InvalidArtifact(
                f"{self.source.name}: an attr value is not valid protobuf"
            ) from None
        return key if drop.applies(attr_json(message)) else None

    def _text(self, span: Span) -> str:
        size = span.end - span.payload
        if size > SMALL_MESSAGE:
            raise InvalidArtifact(f"{self.source.name}: a name of {size} bytes")
        return self.source.read_at(span.payload, size).decode("utf-8", "replace")


def rewrite_message(source: Source, kind: str, drops: list[Drop]) -> Edit | None:
    """The rewrite of a whole file holding one `kind` message ('saved_model',
    'meta_graph' or 'graph'); None when no node holds a dropped attr."""
    by_key = {(d.op, d.attr): d for d in drops}
    return Rewriter(source, by_key).message(kind, 0, source.size)


def write_pieces(source: Source, pieces: list[Piece], out: BinaryIO) -> int:
    """Stream the pieces to `out`; returns the number of bytes written."""
    written = 0
    for piece in pieces:
        if isinstance(piece, bytes):
            out.write(piece)
            written += len(piece)
            continue
        offset, length = piece
        while length > 0:
            chunk = min(length, COPY_CHUNK)
            out.write(source.read_at(offset, chunk))
            offset += chunk
            length -= chunk
            written += chunk
    return written


def render(source: Source, pieces: list[Piece]) -> bytes:
    """The pieces as bytes (small messages, tests)."""
    import io

    buffer = io.BytesIO()
    write_pieces(source, pieces, buffer)
    return buffer.getvalue()
