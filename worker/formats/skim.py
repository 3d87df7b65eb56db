"""A message's bytes without its bulk, for protobuf to parse in bounded memory.

A frozen graph is mostly tensor contents that no compatibility rule reads,
and protobuf's parser wants the whole message in memory. `skim` walks the
message on its source and copies it field by field, except that a payload of
more than `SKIM_BYTES` is handled by what the field is (from our proto
subset's descriptors):

- a sub-message is skimmed in turn (a Const node, its attr, its tensor);
- a string is copied whole: its UTF-8 is checked by the parser, as
  TensorFlow's parser checks it;
- bytes (`tensor_content`), an unknown field, or a field sent with another
  wire type than declared (protobuf keeps those as unknown fields) become an
  empty field of the same number, so presence survives and nothing is read;
- a packed repeated number (`float_val`, `int_val`) is checked as the parser
  would check it (whole elements, well-formed varints), then emptied.

Everything else (every tag, every length, the rest of the message byte for
byte) goes to the parser, so the skimmed bytes are accepted by protobuf
exactly when the file is; what is skipped is checked here by the same rules
(`wire`). Bulk fields are skipped by position, never read, so reading a
local 1 GB graph reads its metadata and little else.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from worker.errors import LimitExceeded
from worker.formats import wire
from worker.formats.source import Source
from worker.formats.wire import Reader, encode_varint

SKIM_BYTES = 64 << 10
"""Payloads up to this size are copied without looking inside."""

RUN_BYTES = 1 << 20
"""Consecutive small fields are copied in pieces of about this size."""

MAX_SKIMMED_BYTES = 512 << 20
"""What is left of a message after skimming: its metadata, which is never this large."""

_FIXED_SIZE = {
    FieldDescriptor.TYPE_FLOAT: 4,
    FieldDescriptor.TYPE_FIXED32: 4,
    FieldDescriptor.TYPE_SFIXED32: 4,
    FieldDescriptor.TYPE_DOUBLE: 8,
    FieldDescriptor.TYPE_FIXED64: 8,
    FieldDescriptor.TYPE_SFIXED64: 8,
}
_VARINT_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_BOOL,
        FieldDescriptor.TYPE_ENUM,
    }
)
_OVERLONG_VARINT = re.compile(rb"[\x80-\xff]{10}")
_CHECK_CHUNK = 1 << 20


def skim(source: Source, descriptor: Any, start: int = 0, end: int | None = None) -> bytes:
    """`source[start:end]`, a serialized `descriptor` message, without its bulk.

    `descriptor` is a message Descriptor (typed `Any`: the stubs give upb's and the
    Python descriptor classes apart, though both have what is read here).
    """
    reader = Reader(source, start, source.size if end is None else end)
    return b"".join(_Skimmer(reader).message(descriptor, reader.end, 0))


class _Skimmer:
    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.kept = 0

    def _reserve(self, length: int) -> None:
        if self.kept + length > MAX_SKIMMED_BYTES:
            raise LimitExceeded(
                f"{self.reader.source.name}: more than {MAX_SKIMMED_BYTES} bytes of metadata"
            )

    def _keep(self, pieces: list[bytes], piece: bytes) -> None:
        self._reserve(len(piece))
        self.kept += len(piece)
        pieces.append(piece)

    def message(self, descriptor: Descriptor, end: int, depth: int) -> list[bytes]:
        """The pieces of the skimmed message that ends at `end`."""
        reader = self.reader
        if depth > wire.MAX_DEPTH:
            raise LimitExceeded(
                f"{reader.source.name}: messages nested more than {wire.MAX_DEPTH} deep"
            )
        pieces: list[bytes] = []
        run = reader.pos  # start of the small fields not yet copied
        while reader.pos < end:
            field_start = reader.pos
            number, wire_type = reader.tag()
            if wire_type != wire.LENGTH_DELIMITED:
                if wire_type == wire.START_GROUP:
                    reader.skip_group(number, depth + 1)
                    if reader.pos - field_start > SKIM_BYTES:  # an unknown group with bulk
                        self._copy(pieces, run, field_start)
                        self._keep(pieces, _tag(number, wire.START_GROUP))
                        self._keep(pieces, _tag(number, wire.END_GROUP))
                        run = reader.pos
                else:
                    reader.skip_value(number, wire_type, depth)
            else:
                length = reader.length()
                if length <= SKIM_BYTES:
                    reader.skip(length)
                else:
                    self._copy(pieces, run, field_start)
                    field = descriptor.fields_by_number.get(number)
                    self._bulk(pieces, field, number, length, depth)
                    run = reader.pos
            if reader.pos - run >= RUN_BYTES:
                self._copy(pieces, run, reader.pos)
                run = reader.pos
        if reader.pos != end:
            raise reader.error("a field runs past the end of its message")
        self._copy(pieces, run, end)
        return pieces

    def _copy(self, pieces: list[bytes], start: int, end: int) -> None:
        if end > start:
            self._keep(pieces, self.reader.source.read_at(start, end - start))

    def _bulk(
        self,
        pieces: list[bytes],
        field: FieldDescriptor | None,
        number: int,
        length: int,
        depth: int,
    ) -> None:
        """One large length-delimited field, its tag and length already read."""
        reader = self.reader
        start = reader.pos
        tag = _tag(number, wire.LENGTH_DELIMITED)
        if field is not None and field.type == FieldDescriptor.TYPE_MESSAGE:
            outer_end, reader.end = reader.end, start + length  # checks stop at its end
            inner = self.message(_message_type(field), start + length, depth + 1)
            reader.end = outer_end
            self._keep(pieces, tag + encode_varint(sum(len(p) for p in inner)))
            pieces.extend(inner)  # already counted
            return
        if field is not None and field.type == FieldDescriptor.TYPE_STRING:
            self._reserve(length)  # before reading it
            self._keep(pieces, tag + encode_varint(length) + reader.read(length))
            return
        if field is not None and field.is_repeated:
            if field.type in _FIXED_SIZE and length % _FIXED_SIZE[field.type]:
                raise reader.error(f"packed field {number} is not a whole number of elements")
            if field.type in _VARINT_TYPES:
                self._check_packed_varints(start, length)
        reader.pos = start + length
        self._keep(pieces, tag + b"\x00")

    def _check_packed_varints(self, start: int, length: int) -> None:
        """Well-formed varints end to end: none longer than 10 bytes, the last one closed."""
        source = self.reader.source
        tail = b""
        for offset in range(start, start + length, _CHECK_CHUNK):
            chunk = tail + source.read_at(offset, min(_CHECK_CHUNK, start + length - offset))
            if _OVERLONG_VARINT.search(chunk):
                raise self.reader.error("packed varint longer than 10 bytes")
            tail = chunk[-9:]
        if tail and tail[-1] >= 0x80:
            raise self.reader.error("packed varints end in the middle of one")


def _message_type(field: FieldDescriptor) -> Descriptor:
    descriptor = field.message_type
    assert descriptor is not None  # a TYPE_MESSAGE field always has one
    return descriptor


def _tag(number: int, wire_type: int) -> bytes:
    return encode_varint(number << 3 | wire_type)
