"""Which Pythons can read marshalled bytecode back: the code object's layout.

Keras stores a Lambda's Python function as `marshal.dumps(func.__code__)`,
base64-encoded. `marshal` writes a code object's fields in an order that
changed twice: 3.8 added `co_posonlyargcount`, 3.11 replaced the local
variable tuples by `co_localsplusnames`/`co_localspluskinds` and added
`co_qualname` and `co_exceptiontable`. Bytes written by one layout make
`marshal.loads` of another fail (seen: "EOFError: EOF read where object
expected" reading 3.7 bytecode in 3.11, "SystemError: bad argument to internal
function" reading 3.11 bytecode in 3.7). So the layout that parses the bytes
exactly, to the last byte, says which Python family wrote them.

Pure and bounded: no `marshal.loads` of untrusted bytes (it would build the
code object), a depth and item cap, and any malformed input gives None.
"""

from __future__ import annotations

LAYOUTS = ("3.0-3.7", "3.8-3.10", "3.11+")  # worker.model.keras.layout_admits reads these
MAX_DEPTH = 64
MAX_ITEMS = 100_000
FLAG_REF = 0x80

# (fixed int32 fields before co_code, objects after co_code up to firstlineno, objects after)
_CODE_FIELDS = {
    "3.0-3.7": (5, 7, 1),  # argcount kwonly nlocals stacksize flags; consts..name; lnotab
    "3.8-3.10": (6, 7, 1),  # + posonlyargcount
    "3.11+": (5, 7, 2),  # argcount posonly kwonly stacksize flags; consts..qualname; linetable,
    # exceptiontable
}
_NO_PAYLOAD = frozenset(b"0NFTS.")
_SIZED = frozenset(b"stuaA")  # int32 length, then that many bytes
_SEQUENCES = frozenset(b"([<>")  # int32 count, then that many objects


class _Malformed(Exception):
    pass


class _Reader:
    def __init__(self, data: bytes, layout: str) -> None:
        self.data = data
        self.pos = 0
        self.items = 0
        self.fields = _CODE_FIELDS[layout]

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Malformed
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def int32(self) -> int:
        return int.from_bytes(self.take(4), "little", signed=True)

    def skip_object(self, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise _Malformed
        self.items += 1
        if self.items > MAX_ITEMS:
            raise _Malformed
        kind = self.take(1)[0] & ~FLAG_REF
        if kind in _NO_PAYLOAD:
            return
        if kind == ord("i") or kind == ord("r"):
            self.take(4)
        elif kind == ord("l"):
            self.take(2 * abs(self.int32()))
        elif kind == ord("g"):
            self.take(8)
        elif kind == ord("y"):
            self.take(16)
        elif kind == ord("f"):
            self.take(self.take(1)[0])
        elif kind == ord("x"):
            self.take(self.take(1)[0])
            self.take(self.take(1)[0])
        elif kind in _SIZED:
            self.take(self.int32())
        elif kind in (ord("z"), ord("Z")):
            self.take(self.take(1)[0])
        elif kind == ord(")"):
            for _ in range(self.take(1)[0]):
                self.skip_object(depth + 1)
        elif kind in _SEQUENCES:
            count = self.int32()
            if count < 0 or count > MAX_ITEMS:
                raise _Malformed
            for _ in range(count):
                self.skip_object(depth + 1)
        elif kind == ord("{"):
            while self.data[self.pos : self.pos + 1] not in (b"0", b""):
                self.skip_object(depth + 1)
                self.skip_object(depth + 1)
            self.take(1)
        elif kind == ord("c"):
            self.skip_code(depth)
        else:
            raise _Malformed

    def skip_code(self, depth: int) -> None:
        ints, before, after = self.fields
        self.take(4 * ints)
        self.skip_object(depth + 1)  # co_code
        for _ in range(before):
            self.skip_object(depth + 1)
        self.take(4)  # co_firstlineno
        for _ in range(after):
            self.skip_object(depth + 1)


def code_layout(data: bytes) -> str | None:
    """The one layout that reads `data` as a code object to its last byte, else None."""
    if not data or data[0] & ~FLAG_REF != ord("c"):
        return None
    matches = []
    for layout in LAYOUTS:
        reader = _Reader(data, layout)
        try:
            reader.skip_object(0)
        except (_Malformed, IndexError):
            continue
        if reader.pos == len(data):
            matches.append(layout)
    return matches[0] if len(matches) == 1 else None
