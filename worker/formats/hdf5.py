"""The string attributes of an HDF5 file's root group, read without libhdf5.

A legacy Keras `.h5` model says what it is in three root-group attributes
(`keras_version`, `backend`, `model_config`), and that is all tfcompat needs
of it. Reading them takes the superblock, the root object header (and its
continuation blocks) and, for variable-length strings (what h5py writes for a
`str`), one global heap collection: a handful of positional reads, so a large
model on S3 costs a few ranged GETs, and no native HDF5 parser (a long history
of memory-safety bugs) ever sees an uploaded file.

What is read (HDF5 File Format Specification 3.0, the parts h5py and every
libhdf5 since 1.8 write): superblocks version 0 to 3, object headers version 1
and 2, attribute messages version 1 to 3, fixed-length and variable-length
string datatypes, scalar or one-element dataspaces. Attributes kept in dense
storage (a fractal heap: files created with `libver="latest"` and many
attributes) are not read: `UnsupportedArtifact` says so. Every address,
length and count is checked against the file and against caps before it is
used; anything wrong is `InvalidArtifact`, never another exception.
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats.source import Source

SIGNATURE = b"\x89HDF\r\n\x1a\n"
# The superblock sits at 0 or, after a user block, at 512, 1024, 2048, ... (libhdf5 looks
# at every power of two; h5py's user blocks are at most 32 KiB in practice).
SUPERBLOCK_OFFSETS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
MAX_HEADER_BLOCK = 1 << 20  # one object header chunk or continuation block
MAX_BLOCKS = 64  # continuation blocks followed
MAX_MESSAGES = 4096
MAX_STRING = 64 << 20  # one attribute's string (a model_config of a very large model)
UNDEFINED = (1 << 64) - 1

MSG_DATASPACE, MSG_DATATYPE, MSG_ATTRIBUTE, MSG_CONTINUATION, MSG_ATTRIBUTE_INFO = (
    0x0001,
    0x0003,
    0x000C,
    0x0010,
    0x0015,
)
CLASS_STRING, CLASS_VLEN = 3, 9


def _bad(source: Source, why: str) -> InvalidArtifact:
    return InvalidArtifact(f"{source.name}: not a readable HDF5 file: {why}")


@dataclass
class _File:
    source: Source
    base: int
    offset_size: int
    length_size: int

    def read(self, address: int, length: int, what: str) -> bytes:
        start = self.base + address
        if address < 0 or length < 0 or start + length > self.source.size:
            raise _bad(self.source, f"{what} lies past the end of the file")
        return self.source.read_at(start, length)

    def uint(self, data: bytes, pos: int, size: int, what: str) -> int:
        if pos < 0 or pos + size > len(data):
            raise _bad(self.source, f"{what} runs past its block")
        return int.from_bytes(data[pos : pos + size], "little")


def find_superblock(source: Source) -> int | None:
    """The offset of the HDF5 signature, or None when the file has none."""
    for offset in SUPERBLOCK_OFFSETS:
        if offset + len(SIGNATURE) > source.size:
            break
        if source.read_at(offset, len(SIGNATURE)) == SIGNATURE:
            return offset
    return None


def _open(source: Source) -> tuple[_File, int]:
    """The file's address arithmetic and the root group's object header address."""
    at = find_superblock(source)
    if at is None:
        raise _bad(source, "no HDF5 signature")
    head = source.read_at(at, min(source.size - at, 128))
    if len(head) < 16:
        raise _bad(source, "superblock truncated")
    version = head[8]
    if version in (0, 1):
        offset_size, length_size = head[13], head[14]
        pos = 24 if version == 0 else 28
    elif version in (2, 3):
        offset_size, length_size = head[9], head[10]
        pos = 12
    else:
        raise _bad(source, f"superblock version {version}")
    if offset_size not in (2, 4, 8) or length_size not in (2, 4, 8):
        raise _bad(source, f"offset size {offset_size}, length size {length_size}")
    # libhdf5 takes addresses relative to where the superblock was found
    hdf = _File(source, at, offset_size, length_size)
    o = offset_size
    if version in (0, 1):
        # base, free-space, end-of-file, driver addresses; then the root symbol table entry
        # (link name offset, object header address, ...)
        root = hdf.uint(head, pos + 4 * o + o, o, "root group entry")
    else:
        # base, superblock extension, end-of-file, root object header addresses
        root = hdf.uint(head, pos + 3 * o, o, "root group address")
    if root == (1 << (8 * o)) - 1:
        raise _bad(source, "no root group")
    return hdf, root


def _messages(hdf: _File, address: int) -> list[tuple[int, bytes]]:
    """(type, body) of every message of the object header at `address`, continuations
    followed (each block once, at most MAX_BLOCKS)."""
    source = hdf.source
    first = hdf.read(address, min(16, source.size - hdf.base - address), "object header")
    found: list[tuple[int, bytes]] = []
    seen: set[int] = set()
    if first[:4] == b"OHDR":
        if len(first) < 6 or first[4] != 2:
            raise _bad(source, "object header version")
        flags = first[5]
        pos = 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
        width = 1 << (flags & 3)
        prefix = hdf.read(address, pos + width, "object header")
        size = hdf.uint(prefix, pos, width, "object header size")
        if size > MAX_HEADER_BLOCK:
            raise LimitExceeded(f"{source.name}: HDF5 object header of {size} bytes")
        blocks = [(address + pos + width, size, False)]
        v2 = True
    else:
        if len(first) < 16 or first[0] != 1:
            raise _bad(source, "object header version")
        size = hdf.uint(first, 8, 4, "object header size")
        if size > MAX_HEADER_BLOCK:
            raise LimitExceeded(f"{source.name}: HDF5 object header of {size} bytes")
        blocks = [(address + 16, size, False)]
        v2 = False
        flags = 0
    while blocks:
        start, size, signed = blocks.pop(0)
        if start in seen:
            raise _bad(source, "object header continuation loop")
        seen.add(start)
        if len(seen) > MAX_BLOCKS:
            raise LimitExceeded(f"{source.name}: more than {MAX_BLOCKS} HDF5 header blocks")
        block = hdf.read(start, size, "object header block")
        pos, end = 0, len(block)
        if signed:
            if block[:4] != b"OCHK":
                raise _bad(source, "continuation block signature")
            pos, end = 4, len(block) - 4  # checksum at the end
        elif v2:
            end = len(block)  # chunk 0's checksum follows the size counted
        while pos < end:
            if v2:
                if pos + 4 > end:
                    break  # gap at the end of a chunk
                kind = block[pos]
                length = hdf.uint(block, pos + 1, 2, "message size")
                mflags = block[pos + 3]
                pos += 4 + (2 if flags & 0x04 else 0)
            else:
                if pos + 8 > end:
                    break
                kind = hdf.uint(block, pos, 2, "message type")
                length = hdf.uint(block, pos + 2, 2, "message size")
                mflags = block[pos + 4]
                pos += 8
            if pos + length > end:
                raise _bad(source, "header message runs past its block")
            body = block[pos : pos + length]
            pos += length
            if len(found) >= MAX_MESSAGES:
                raise LimitExceeded(f"{source.name}: more than {MAX_MESSAGES} header messages")
            if kind == MSG_CONTINUATION:
                where = hdf.uint(body, 0, hdf.offset_size, "continuation address")
                extent = hdf.uint(body, hdf.offset_size, hdf.length_size, "continuation size")
                if extent > MAX_HEADER_BLOCK:
                    raise LimitExceeded(f"{source.name}: HDF5 header block of {extent} bytes")
                blocks.append((where, extent, v2))
            elif not mflags & 0x02:  # a shared message points elsewhere: not one we read
                found.append((kind, body))
    return found


@dataclass(frozen=True)
class _StringType:
    size: int  # fixed length, or 16 (length, heap address, index) for variable length
    variable: bool
    space_padded: bool


def _datatype(hdf: _File, data: bytes) -> _StringType | None:
    """The attribute's type when it is a string (fixed or variable length), else None."""
    if len(data) < 8:
        raise _bad(hdf.source, "datatype truncated")
    cls = data[0] & 0x0F
    size = hdf.uint(data, 4, 4, "datatype size")
    if cls == CLASS_STRING:
        return _StringType(size, False, data[1] & 0x0F == 2)
    if cls == CLASS_VLEN and data[1] & 0x0F == 1:  # a variable-length string
        return _StringType(4 + hdf.offset_size + 4, True, False)
    return None


def _elements(hdf: _File, data: bytes) -> int:
    """How many elements the dataspace holds (a scalar: 1)."""
    if len(data) < 4:
        raise _bad(hdf.source, "dataspace truncated")
    version, rank = data[0], data[1]
    if version == 2 and data[3] == 2:
        return 0  # a null dataspace
    pos = 8 if version == 1 else 4
    count = 1
    for i in range(rank):
        count *= hdf.uint(data, pos + i * hdf.length_size, hdf.length_size, "dimension")
        count = min(count, 1 << 32)
    return count


def _global_heap_object(hdf: _File, collection: int, index: int) -> bytes:
    """Object `index` of the global heap collection at `collection`."""
    head = hdf.read(collection, 8 + hdf.length_size, "global heap")
    if head[:4] != b"GCOL":
        raise _bad(hdf.source, "global heap signature")
    size = hdf.uint(head, 8, hdf.length_size, "global heap size")
    if size > MAX_STRING + (1 << 20):
        raise LimitExceeded(f"{hdf.source.name}: HDF5 global heap of {size} bytes")
    data = hdf.read(collection, size, "global heap")
    pos = 8 + hdf.length_size
    while pos + 8 + hdf.length_size <= len(data):
        number = hdf.uint(data, pos, 2, "heap object index")
        length = hdf.uint(data, pos + 8, hdf.length_size, "heap object size")
        start = pos + 8 + hdf.length_size
        if number == 0:
            break  # free space: the last entry
        if start + length > len(data):
            raise _bad(hdf.source, "global heap object runs past its collection")
        if number == index:
            return data[start : start + length]
        pos = start + (length + 7) // 8 * 8
    raise _bad(hdf.source, f"global heap object {index} not found")


def _attribute(hdf: _File, body: bytes) -> tuple[str, str | None]:
    """(name, value) of an attribute message; value None when it is no single string."""
    source = hdf.source
    if len(body) < 8:
        raise _bad(source, "attribute message truncated")
    version = body[0]
    if version not in (1, 2, 3):
        raise _bad(source, f"attribute message version {version}")
    if version > 1 and body[1] & 0x03:
        return "", None  # shared datatype or dataspace: not a plain string attribute
    name_size = hdf.uint(body, 2, 2, "attribute name size")
    type_size = hdf.uint(body, 4, 2, "attribute datatype size")
    space_size = hdf.uint(body, 6, 2, "attribute dataspace size")
    pos = 8 if version < 3 else 9

    def padded(n: int) -> int:
        return (n + 7) // 8 * 8 if version == 1 else n

    raw_name = body[pos : pos + name_size]
    if len(raw_name) != name_size:
        raise _bad(source, "attribute name runs past its message")
    name = raw_name.split(b"\x00", 1)[0].decode("utf-8", "replace")
    pos += padded(name_size)
    type_data = body[pos : pos + type_size]
    pos += padded(type_size)
    space_data = body[pos : pos + space_size]
    pos += padded(space_size)
    string = _datatype(hdf, type_data)
    if string is None or _elements(hdf, space_data) != 1:
        return name, None
    value = body[pos : pos + string.size]
    if len(value) != string.size:
        raise _bad(source, f"attribute {name!r} value runs past its message")
    if string.variable:
        length = hdf.uint(value, 0, 4, "string length")
        collection = hdf.uint(value, 4, hdf.offset_size, "heap address")
        index = hdf.uint(value, 4 + hdf.offset_size, 4, "heap index")
        if length > MAX_STRING:
            raise LimitExceeded(f"{source.name}: HDF5 attribute {name!r} of {length} bytes")
        if collection in (0, UNDEFINED) and length == 0:
            return name, ""
        value = _global_heap_object(hdf, collection, index)[:length]
    text = value.split(b"\x00", 1)[0]
    if string.space_padded:
        text = text.rstrip(b" ")
    try:
        return name, text.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad(source, f"attribute {name!r} is not UTF-8 text") from None


def root_string_attributes(source: Source) -> dict[str, str]:
    """Every string attribute of the root group (scalar or one element), by name.

    Raises InvalidArtifact for anything that is not a well-formed HDF5 file,
    UnsupportedArtifact when the attributes are in dense storage."""
    hdf, root = _open(source)
    attributes: dict[str, str] = {}
    dense = False
    for kind, body in _messages(hdf, root):
        if kind == MSG_ATTRIBUTE:
            name, value = _attribute(hdf, body)
            if value is not None:
                attributes[name] = value
        elif kind == MSG_ATTRIBUTE_INFO and len(body) >= 2 + 2 * hdf.offset_size:
            pos = 2 + (2 if body[1] & 0x01 else 0)
            heap = hdf.uint(body, pos, hdf.offset_size, "attribute heap address")
            dense = heap != (1 << (8 * hdf.offset_size)) - 1
    if dense and not attributes:
        raise UnsupportedArtifact(
            f"{source.name}: the HDF5 root group keeps its attributes in dense storage "
            "(a file written with libver='latest'), which tfcompat does not read"
        )
    return attributes
