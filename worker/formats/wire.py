"""A protobuf wire-format walker over a `Source`.

Protobuf's own parser wants the whole message in memory. A frozen graph can be
gigabytes, nearly all of it tensor contents that no compatibility rule reads,
so readers walk the outer messages field by field here, hand small
sub-messages to protobuf, and skip large byte fields by offset without
reading them.

Guarantees: every read is bounded by the enclosing message's declared length
and the source size; a length or varint that does not fit raises
`InvalidArtifact` naming the source and offset.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from worker.errors import InvalidArtifact
from worker.formats.source import Source

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
START_GROUP = 3
END_GROUP = 4
FIXED32 = 5

_WINDOW = 64 * 1024
_MAX_VARINT_BYTES = 10


@dataclass(frozen=True)
class Field:
    number: int
    wire_type: int
    value: int  # the varint/fixed value, or the payload length for LENGTH_DELIMITED
    offset: int  # where the payload starts in the source

    @property
    def end(self) -> int:
        return self.offset + self.value if self.wire_type == LENGTH_DELIMITED else self.offset


class Cursor:
    """Reads a byte range of a source through a small window buffer."""

    def __init__(self, source: Source, start: int = 0, end: int | None = None) -> None:
        self.source = source
        self.pos = start
        self.end = source.size if end is None else end
        if self.end > source.size or start < 0 or start > self.end:
            raise InvalidArtifact(
                f"{source.name}: message at offset {start} claims {self.end - start} bytes, "
                f"past the end of the file ({source.size} bytes)"
            )
        self._buf = b""
        self._buf_start = 0

    def _byte(self) -> int:
        rel = self.pos - self._buf_start
        if not 0 <= rel < len(self._buf):
            length = min(_WINDOW, self.end - self.pos)
            if length <= 0:
                raise self._error("message ends in the middle of a field")
            self._buf = self.source.read_at(self.pos, length)
            self._buf_start = self.pos
            rel = 0
        self.pos += 1
        return self._buf[rel]

    def _error(self, what: str) -> InvalidArtifact:
        return InvalidArtifact(
            f"{self.source.name}: not valid protobuf at offset {self.pos}: {what}"
        )

    def varint(self) -> int:
        result = 0
        for shift in range(0, 7 * _MAX_VARINT_BYTES, 7):
            byte = self._byte()
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
        raise self._error("varint longer than 10 bytes")

    def read(self, length: int) -> bytes:
        if length < 0 or self.pos + length > self.end:
            raise self._error(f"field of {length} bytes runs past the end of its message")
        rel = self.pos - self._buf_start
        if rel >= 0 and rel + length <= len(self._buf):
            data = self._buf[rel : rel + length]
        else:
            data = self.source.read_at(self.pos, length)
        self.pos += length
        return data

    def skip(self, length: int) -> None:
        if length < 0 or self.pos + length > self.end:
            raise self._error(f"field of {length} bytes runs past the end of its message")
        self.pos += length

    def fields(self) -> Iterator[Field]:
        """Every field up to `end`; length-delimited payloads are not read.

        The caller must consume a LENGTH_DELIMITED payload (read or skip) or
        leave `pos` alone; either way the walk resumes after the payload.
        """
        while self.pos < self.end:
            key = self.varint()
            number, wire_type = key >> 3, key & 7
            if number == 0:
                raise self._error("field number 0")
            if wire_type == VARINT:
                yield Field(number, wire_type, self.varint(), self.pos)
            elif wire_type == LENGTH_DELIMITED:
                length = self.varint()
                start = self.pos
                if start + length > self.end:
                    raise self._error(
                        f"field {number} declares {length} bytes, more than its message holds"
                    )
                yield Field(number, wire_type, length, start)
                self.pos = start + length
            elif wire_type == FIXED64:
                yield Field(number, wire_type, int.from_bytes(self.read(8), "little"), self.pos)
            elif wire_type == FIXED32:
                yield Field(number, wire_type, int.from_bytes(self.read(4), "little"), self.pos)
            else:
                # Groups are proto2-only and never appear in TensorFlow's protos.
                raise self._error(f"unsupported wire type {wire_type} for field {number}")

    def sub(self, field: Field) -> Cursor:
        """A cursor over a length-delimited field's payload."""
        return Cursor(self.source, field.offset, field.offset + field.value)

    def payload(self, field: Field) -> bytes:
        return self.source.read_at(field.offset, field.value)
