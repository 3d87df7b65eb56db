"""Apply drops to a text-format GraphDef, MetaGraphDef or SavedModel.

Protobuf's own text parser would drop what our proto subset does not know, so
the text is not parsed into messages and printed again: a small scanner finds
the spans of the fields on the path to node attrs (`node`, `library.function.
node_def`, `graph_def`, `meta_graphs`) and the rewrite cuts the spans of the
dropped `attr { ... }` entries out of the original text. Every other character
(comments, layout, fields we do not know) stays as it was. Only an attr value
is handed to protobuf, to compare it with the producer's default; a value that
does not parse is never dropped. An `_output_shapes` drop reaches the same nodes as
in the binary rewrite (`rewrite.downstream`): the op's top-level nodes and every node
downstream of them.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from google.protobuf import text_format

from worker.errors import InvalidArtifact, LimitExceeded
from worker.fix.plan import OUTPUT_SHAPES, Drop
from worker.fix.rewrite import downstream
from worker.formats.graph import MAX_TEXT_BYTES
from worker.formats.source import Source
from worker.proto import tensorflow_subset_pb2 as pb
from worker.proto.convert import attr_json

_PUNCT = set("{}<>[]:,;")
_CLOSE = {"{": "}", "<": ">"}
MAX_DEPTH = 100


@dataclass
class TextField:
    name: str
    start: int  # first character of the name
    end: int  # just past the value (and a trailing ',' or ';')
    value: str | None = None  # a scalar's raw token text
    body: tuple[int, int] | None = None  # a message's inside (between the braces)
    children: list[TextField] = field(default_factory=list)


class _Scanner:
    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.pos = 0

    def error(self, what: str) -> InvalidArtifact:
        line = self.text.count("\n", 0, self.pos) + 1
        return InvalidArtifact(
            f"{self.name}: not valid text-format protobuf at line {line}: {what}"
        )

    def skip_space(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "#":
                newline = text.find("\n", self.pos)
                self.pos = len(text) if newline < 0 else newline + 1
            elif char.isspace():
                self.pos += 1
            else:
                return

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def token(self) -> str:
        """The next token's raw text: a punctuation mark, a quoted string or a word."""
        self.skip_space()
        text = self.text
        if self.pos >= len(text):
            raise self.error("unexpected end")
        start = self.pos
        char = text[start]
        if char in _PUNCT:
            self.pos += 1
        elif char in "\"'":
            self.pos += 1
            while self.pos < len(text) and text[self.pos] != char:
                if text[self.pos] == "\n":
                    raise self.error("newline in a string")
                self.pos += 2 if text[self.pos] == "\\" else 1
            if self.pos >= len(text):
                raise self.error("unterminated string")
            self.pos += 1
        else:
            while self.pos < len(text) and not (
                text[self.pos].isspace() or text[self.pos] in _PUNCT or text[self.pos] in "\"'#"
            ):
                self.pos += 1
        return text[start : self.pos]

    def fields(self, closing: str, depth: int) -> list[TextField]:
        if depth > MAX_DEPTH:
            raise LimitExceeded(f"{self.name}: text-format message nested too deeply")
        found: list[TextField] = []
        while True:
            head = self.peek()
            if head == closing:
                if closing:
                    self.pos += 1
                return found
            if not head:
                raise self.error(f"missing '{closing}'")
            start = self.pos
            name = self.token()
            if name == "[":  # an extension or Any type URL: [type.googleapis.com/x.Y]
                while self.token() != "]":
                    pass
                name = self.text[start : self.pos]
            elif name in _PUNCT:
                raise self.error(f"unexpected '{name}'")
            item = TextField(name, start, start)
            if self.peek() == ":":
                self.token()
            head = self.peek()
            if head in _CLOSE:
                self.token()
                inner = self.pos
                item.children = self.fields(_CLOSE[head], depth + 1)
                item.body = (inner, self.pos - 1)
            elif head == "[":
                self._list(depth)
            else:
                item.value = self._scalar()
            if self.peek() in (",", ";"):
                self.token()
            item.end = self.pos
            found.append(item)

    def _scalar(self) -> str:
        start = self.pos
        first = self.token()
        if first[:1] in "\"'":
            while self.peek() in ('"', "'"):
                self.token()  # adjacent strings concatenate
        elif first == "-" or first in _PUNCT:
            raise self.error(f"unexpected '{first}'")
        return self.text[start : self.pos].strip()

    def _list(self, depth: int) -> None:
        self.token()  # '['
        while True:
            head = self.peek()
            if head == "]":
                self.token()
                return
            if head in _CLOSE:
                self.token()
                self.fields(_CLOSE[head], depth + 1)
            else:
                self._scalar()
            if self.peek() == ",":
                self.token()


def _string(raw: str | None) -> str | None:
    """The value of a quoted string token (or adjacent ones)."""
    if raw is None or raw[:1] not in "\"'":
        return None
    parts = []
    scanner = _Scanner(raw, "")
    while scanner.peek():
        token = scanner.token()
        parts.append(codecs.escape_decode(token[1:-1].encode("utf-8"))[0])
    return b"".join(parts).decode("utf-8", "replace")


_PATHS = {
    "saved_model": {"meta_graphs": "meta_graph"},
    "meta_graph": {"graph_def": "graph"},
    "graph": {"node": "node", "library": "library"},
    "library": {"function": "function"},
    "function": {"node_def": "node"},
}


class _TextRewriter:
    def __init__(self, text: str, drops: list[Drop]) -> None:
        self.text = text
        self.drops = {(d.op, d.attr): d for d in drops if not d.strips_shapes}
        self.shape_ops = {d.op for d in drops if d.strips_shapes}
        self.cuts: list[tuple[int, int]] = []
        self.shapes_cut = 0  # nodes that lost `_output_shapes`

    def walk(
        self, kind: str, fields: list[TextField], shapeless: frozenset[str] = frozenset()
    ) -> None:
        if kind == "node":
            self._node(fields, shapeless)
            return
        if kind == "graph" and self.shape_ops:
            shapeless = frozenset(downstream(self._graph_nodes(fields), self.shape_ops))
        elif kind == "library":
            shapeless = frozenset()  # function bodies keep theirs
        for item in fields:
            child = _PATHS[kind].get(item.name)
            if child is not None and item.body is not None:
                self.walk(child, item.children, shapeless)

    @staticmethod
    def _graph_nodes(fields: list[TextField]) -> list[tuple[str, str, list[str]]]:
        found = []
        for item in fields:
            if item.name != "node" or item.body is None:
                continue
            values = [(f.name, _string(f.value)) for f in item.children]
            name = next((v for k, v in values if k == "name" and v is not None), "")
            op = next((v for k, v in values if k == "op" and v is not None), "")
            inputs = [v for k, v in values if k == "input" and v is not None]
            found.append((name, op, inputs))
        return found

    def _node(self, fields: list[TextField], shapeless: frozenset[str]) -> None:
        op = next((_string(f.value) for f in fields if f.name == "op"), None)
        if op is None:
            return
        name = next((_string(f.value) for f in fields if f.name == "name"), None)
        strip_shapes = name is not None and name in shapeless
        for item in fields:
            if item.name != "attr" or item.body is None:
                continue
            key = next((_string(f.value) for f in item.children if f.name == "key"), None)
            if strip_shapes and key == OUTPUT_SHAPES:
                self.cuts.append(self._whole_lines(item.start, item.end))
                self.shapes_cut += 1
                continue
            drop = self.drops.get((op, key or ""))
            if drop is None:
                continue
            if drop.default is not None:
                value = next((f for f in item.children if f.name == "value"), None)
                if value is None or value.body is None:
                    continue
                message = pb.AttrValue()
                try:
                    text_format.Parse(self.text[value.body[0] : value.body[1]], message)
                except text_format.ParseError:
                    continue
                if not drop.applies(attr_json(message)):
                    continue
            self.cuts.append(self._whole_lines(item.start, item.end))

    def _whole_lines(self, start: int, end: int) -> tuple[int, int]:
        """Widen a cut to whole lines when nothing else shares them."""
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", end)
        line_end = len(self.text) if line_end < 0 else line_end + 1
        if self.text[line_start:start].strip() or self.text[end:line_end].strip():
            return start, end
        return line_start, line_end

    def result(self) -> str:
        out = []
        position = 0
        for start, end in sorted(self.cuts):
            out.append(self.text[position:start])
            position = end
        out.append(self.text[position:])
        return "".join(out)


def rewrite_text(source: Source, kind: str, drops: list[Drop]) -> tuple[bytes | None, int]:
    """The text-format file without the dropped attrs (None when nothing is dropped), and
    how many nodes lost `_output_shapes`."""
    if source.size > MAX_TEXT_BYTES:
        raise LimitExceeded(f"{source.name}: text-format file of {source.size} bytes")
    try:
        text = source.read_at(0, source.size).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArtifact(f"{source.name}: text-format file is not UTF-8") from None
    scanner = _Scanner(text, source.name)
    rewriter = _TextRewriter(text, drops)
    rewriter.walk(kind, scanner.fields("", 0))
    if not rewriter.cuts:
        return None, 0
    return rewriter.result().encode("utf-8"), rewriter.shapes_cut
