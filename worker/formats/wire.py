"""The protobuf wire format as TensorFlow's parser reads it, over a `Source`.

TensorFlow parses with C++ protobuf, and Python's protobuf (upb) applies the
same limits; whatever this module reads, it reads by those rules, so a file
is accepted here exactly when TensorFlow's parser accepts it:

- a varint has at most 10 bytes (the last may carry bits past 64; they drop);
- a tag has at most 5 bytes and fits in 32 bits: field numbers 1 to 2**29-1,
  wire types 0-5;
- a length has at most 5 bytes and stays below 2**31;
- a group (wire types 3/4) ends with the END_GROUP of its own field number,
  nested at most `MAX_DEPTH` deep; an END_GROUP anywhere else is an error.

`Reader` walks a byte range through a window buffer, so a skipped payload is
never read: only the bytes a caller asks for come off the source.
"""

from __future__ import annotations

from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats.source import Source

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
START_GROUP = 3
END_GROUP = 4
FIXED32 = 5

MAX_DEPTH = 100  # protobuf's default recursion limit, groups and messages alike
WINDOW = 256 << 10
_MAX_TAG = 0xFFFFFFFF


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Reader:
    """Reads `source[start:end]` forward; `pos` may also be moved past payloads."""

    def __init__(self, source: Source, start: int, end: int) -> None:
        if not 0 <= start <= end <= source.size:
            raise InvalidArtifact(
                f"{source.name}: message at offset {start} runs past the end of the file"
            )
        self.source = source
        self.pos = start
        self.end = end
        self._buf = b""
        self._base = start  # source offset of _buf[0]

    def error(self, what: str) -> InvalidArtifact:
        return InvalidArtifact(
            f"{self.source.name}: not valid protobuf at offset {self.pos}: {what}"
        )

    def _window(self) -> tuple[bytes, int]:
        """The buffer and `pos` within it, refilled so at least 10 bytes (or the
        rest of the range) follow `pos`."""
        rel = self.pos - self._base
        if rel < 0 or (rel + 10 > len(self._buf) and self._base + len(self._buf) < self.end):
            length = min(WINDOW, self.end - self.pos)
            self._buf = self.source.read_at(self.pos, length)
            self._base = self.pos
            rel = 0
        return self._buf, rel

    def _varint(self, max_bytes: int) -> tuple[int, int]:
        """(value, bytes used); refuses more than `max_bytes` bytes or the range's end."""
        buf, rel = self._window()
        limit = min(len(buf), self.end - self._base)
        value = 0
        for i in range(max_bytes):
            if rel + i >= limit:
                raise self.error("message ends in the middle of a varint")
            byte = buf[rel + i]
            value |= (byte & 0x7F) << (7 * i)
            if byte < 0x80:
                self.pos += i + 1
                return value, i + 1
        raise self.error(f"varint longer than {max_bytes} bytes")

    def varint(self) -> int:
        return self._varint(10)[0]

    def tag(self) -> tuple[int, int]:
        """(field number, wire type) of the next field."""
        key, _ = self._varint(5)
        if key > _MAX_TAG:
            raise self.error("tag does not fit in 32 bits")
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise self.error("field number 0")
        if wire_type > FIXED32:
            raise self.error(f"wire type {wire_type} does not exist")
        return number, wire_type

    def length(self) -> int:
        """A length-delimited payload's length, checked against the range."""
        length, used = self._varint(5)
        if used == 5 and length >> 31:
            raise self.error("length of 2 GiB or more")
        if length > self.end - self.pos:
            raise self.error(f"field declares {length} bytes, more than its message holds")
        return length

    def skip(self, length: int) -> None:
        if length > self.end - self.pos:
            raise self.error(f"field of {length} bytes runs past the end of its message")
        self.pos += length

    def read(self, length: int) -> bytes:
        """The next `length` bytes (from the window when it holds them)."""
        if length > self.end - self.pos:
            raise self.error(f"field of {length} bytes runs past the end of its message")
        rel = self.pos - self._base
        if rel >= 0 and rel + length <= len(self._buf):
            data = self._buf[rel : rel + length]
        else:
            data = self.source.read_at(self.pos, length)
        self.pos += length
        return data

    def skip_value(self, number: int, wire_type: int, depth: int) -> None:
        """Move past one field's value whose tag was just read."""
        if wire_type == VARINT:
            self._varint(10)
        elif wire_type == FIXED64:
            self.skip(8)
        elif wire_type == FIXED32:
            self.skip(4)
        elif wire_type == LENGTH_DELIMITED:
            self.skip(self.length())
        elif wire_type == START_GROUP:
            self.skip_group(number, depth + 1)
        else:
            raise self.error(f"END_GROUP of field {number} outside its group")

    def skip_group(self, number: int, depth: int) -> None:
        """Move past a group's fields and its END_GROUP, as an unknown field is skipped."""
        if depth > MAX_DEPTH:
            raise LimitExceeded(
                f"{self.source.name}: groups nested more than {MAX_DEPTH} deep at offset {self.pos}"
            )
        while self.pos < self.end:
            inner, wire_type = self.tag()
            if wire_type == END_GROUP:
                if inner != number:
                    raise self.error(f"group {number} closed by END_GROUP of field {inner}")
                return
            self.skip_value(inner, wire_type, depth)
        raise self.error(f"group {number} is never closed")
