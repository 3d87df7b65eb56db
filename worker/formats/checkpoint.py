"""Read a checkpoint's `.index`: the tensor bundle's header and the tensors it lists.

A V2 checkpoint (`tf.train.Checkpoint`, `tf.compat.v1.train.Saver`, a
SavedModel's `variables/`) keeps its metadata in `PREFIX.index`, a LevelDB-style
sorted table (TensorFlow's `core/lib/io/table*`, `block*`, `format*`): data
blocks of prefix-compressed key/value entries, an index block pointing at them,
and a 48-byte footer. The key "" holds the `BundleHeaderProto` (the bundle's own
VersionDef); every other key is a tensor name with its `BundleEntryProto`.

Nothing in the file is trusted. Every handle, length and varint is checked
against the file and the caps below before it is used, every block's CRC32C is
verified as TensorFlow verifies it, and the walk only moves forward through the
file, so a hostile index ends in `InvalidArtifact` or `LimitExceeded`, never in
a loop, an unbounded allocation or someone else's exception.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import cramjam
import google_crc32c  # type: ignore[import-untyped, unused-ignore]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats.source import Source
from worker.model.artifact import Checkpoint, VersionDef
from worker.proto import tensorflow_subset_pb2 as pb

MAX_LISTED_ENTRIES = 1000
"""Tensors listed by name in `Checkpoint.entries`; all of them are counted."""

MAX_INDEX_BYTES = 256 << 20
"""An index this large lists millions of tensors; real ones are kilobytes to megabytes."""

MAX_BLOCK_BYTES = 64 << 20
"""One block, stored or after Snappy decompression (TensorFlow writes 256 KiB blocks)."""

MAX_EXPANDED_BYTES = 1 << 30
"""All blocks together after decompression."""

MAX_ENTRIES = 1_000_000
"""Table entries, and separately data blocks, walked before giving up."""

MAX_KEY_BYTES_TOTAL = 256 << 20
"""Key bytes rebuilt from prefix compression; bounds the work a hostile block
of tiny entries sharing one huge prefix could cause."""

FOOTER_BYTES = 48
TABLE_MAGIC = 0xDB4775248B80FB57
BLOCK_TRAILER_BYTES = 5  # compression type, masked crc32c
NO_COMPRESSION = 0
SNAPPY_COMPRESSION = 1
SLICE_KEY_PREFIX = b"\x00"  # keys of partitioned-variable slices (OrderedCode-encoded)

_BlockHandle = tuple[int, int]  # (offset, size) of a block, trailer excluded


def read_checkpoint_index(source: Source) -> Checkpoint:
    """The bundle header and tensor entries of a V2 checkpoint's `.index`.

    `tensors` counts named tensors; slices of partitioned variables (keys
    starting with a NUL byte) are not decoded, but their bytes count in
    `tensor_bytes`, so it is the size of the `.data` shards' contents.
    """
    header: tuple[VersionDef, int, str] | None = None
    tensors = 0
    tensor_bytes = 0
    entries: dict[str, tuple[str, tuple[int, ...]]] = {}
    for key, value in _table_entries(source):
        if key == b"":
            header = _bundle_header(source.name, value)
            continue
        entry = _bundle_entry(source.name, key, value)
        tensor_bytes += entry.size
        if key.startswith(SLICE_KEY_PREFIX):
            continue
        tensors += 1
        if len(entries) < MAX_LISTED_ENTRIES:
            shape = tuple(dim.size for dim in entry.shape.dim)
            entries[key.decode("utf-8", "backslashreplace")] = (_dtype_name(entry.dtype), shape)
    if header is None:
        raise InvalidArtifact(
            f"{source.name}: checkpoint index has no bundle header (no entry with the empty key)"
        )
    versions, num_shards, endianness = header
    return Checkpoint(
        versions=versions,
        num_shards=num_shards,
        endianness=endianness,
        tensors=tensors,
        tensor_bytes=tensor_bytes,
        entries=entries,
    )


def _bundle_header(name: str, value: bytes) -> tuple[VersionDef, int, str]:
    # A V1 checkpoint is the same table format, but its "" entry is a
    # SavedTensorSlices message, whose field 1 is a message (tag 0x0a) where
    # BundleHeaderProto has the varint num_shards (tag 0x08).
    if value[:1] == b"\x0a":
        raise UnsupportedArtifact(
            f"{name}: a V1 (tensor-slices) checkpoint, which tfcompat does not read; "
            "re-save it in the V2 format (Saver(write_version=tf.train.SaverDef.V2))"
        )
    header = pb.BundleHeaderProto()
    try:
        header.ParseFromString(value)
    except DecodeError:
        raise InvalidArtifact(f"{name}: bundle header is not a BundleHeaderProto") from None
    if header.endianness not in (pb.BundleHeaderProto.LITTLE, pb.BundleHeaderProto.BIG):
        raise InvalidArtifact(f"{name}: bundle header has unknown endianness {header.endianness}")
    version = header.version
    versions = VersionDef(version.producer, version.min_consumer, tuple(version.bad_consumers))
    endianness = "BIG" if header.endianness == pb.BundleHeaderProto.BIG else "LITTLE"
    return versions, header.num_shards, endianness


def _bundle_entry(name: str, key: bytes, value: bytes) -> pb.BundleEntryProto:
    entry = pb.BundleEntryProto()
    try:
        entry.ParseFromString(value)
    except DecodeError:
        raise InvalidArtifact(f"{name}: entry {key[:200]!r} is not a BundleEntryProto") from None
    if entry.size < 0 or entry.offset < 0:
        raise InvalidArtifact(f"{name}: entry {key[:200]!r} has a negative offset or size")
    return entry


def _dtype_name(value: int) -> str:
    """The DataType's name; a number for dtypes newer than our proto subset."""
    try:
        return str(pb.DataType.Name(value))
    except ValueError:
        return f"DataType({value})"


# --- The table format -------------------------------------------------------


def _table_entries(source: Source) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) of the table's data blocks, in file order.

    Data blocks must lie one after another before the footer, as TensorFlow's
    TableBuilder writes them; requiring that bounds the bytes read by the file
    size, whatever the index block says.
    """
    name = source.name
    size = source.size
    if size > MAX_INDEX_BYTES:
        raise LimitExceeded(
            f"{name}: checkpoint index is {size} bytes, more than the {MAX_INDEX_BYTES} allowed"
        )
    index_handle = _footer(source)
    budget = _ExpansionBudget(name)
    index_block = _read_block(source, index_handle, "index block", budget)
    data_end = size - FOOTER_BYTES
    next_offset = 0
    entries = 0
    key_bytes = 0
    index = _block_entries(name, index_block, "index block")
    for blocks, (_separator, handle_bytes) in enumerate(index, start=1):
        if blocks > MAX_ENTRIES:
            raise LimitExceeded(f"{name}: index block lists more than {MAX_ENTRIES} data blocks")
        offset, length = _block_handle(name, handle_bytes, "index block entry")
        if offset < next_offset:
            raise InvalidArtifact(
                f"{name}: data block at offset {offset} overlaps or precedes the one before it"
            )
        _check_handle(name, (offset, length), data_end, "data block")
        next_offset = offset + length + BLOCK_TRAILER_BYTES
        block = _read_block(source, (offset, length), f"data block at offset {offset}", budget)
        for key, value in _block_entries(name, block, f"data block at offset {offset}"):
            entries += 1
            key_bytes += len(key)
            if entries > MAX_ENTRIES:
                raise LimitExceeded(f"{name}: checkpoint index has more than {MAX_ENTRIES} entries")
            if key_bytes > MAX_KEY_BYTES_TOTAL:
                raise LimitExceeded(
                    f"{name}: checkpoint index keys exceed {MAX_KEY_BYTES_TOTAL} bytes in total"
                )
            yield key, value


def _footer(source: Source) -> _BlockHandle:
    """The index block's handle, from the footer; the metaindex is not needed."""
    name = source.name
    if source.size < FOOTER_BYTES:
        raise InvalidArtifact(
            f"{name}: not a TensorFlow checkpoint index ({source.size} bytes, "
            f"shorter than a table footer)"
        )
    footer = source.read_at(source.size - FOOTER_BYTES, FOOTER_BYTES)
    (magic,) = struct.unpack_from("<Q", footer, FOOTER_BYTES - 8)
    if magic != TABLE_MAGIC:
        raise InvalidArtifact(f"{name}: not a TensorFlow checkpoint index (bad table magic)")
    handles = footer[: FOOTER_BYTES - 8]
    _meta_offset, pos = _varint(name, handles, 0, len(handles), 64, "table footer")
    _meta_size, pos = _varint(name, handles, pos, len(handles), 64, "table footer")
    offset, pos = _varint(name, handles, pos, len(handles), 64, "table footer")
    length, pos = _varint(name, handles, pos, len(handles), 64, "table footer")
    _check_handle(name, (offset, length), source.size - FOOTER_BYTES, "index block")
    return offset, length


def _block_handle(name: str, value: bytes, where: str) -> _BlockHandle:
    offset, pos = _varint(name, value, 0, len(value), 64, where)
    length, pos = _varint(name, value, pos, len(value), 64, where)
    return offset, length


def _check_handle(name: str, handle: _BlockHandle, end: int, what: str) -> None:
    """A block and its trailer must fit before `end`, and be of a size we accept."""
    offset, length = handle
    if length > MAX_BLOCK_BYTES:
        raise LimitExceeded(
            f"{name}: {what} is {length} bytes, more than the {MAX_BLOCK_BYTES} allowed"
        )
    if offset + length + BLOCK_TRAILER_BYTES > end:
        raise InvalidArtifact(
            f"{name}: {what} at offset {offset} ({length} bytes) runs past the end of the table"
        )


class _ExpansionBudget:
    """Counts block bytes after decompression across the whole table."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._total = 0

    def spend(self, length: int) -> None:
        self._total += length
        if self._total > MAX_EXPANDED_BYTES:
            raise LimitExceeded(
                f"{self._name}: checkpoint index blocks expand past {MAX_EXPANDED_BYTES} bytes"
            )


def _read_block(source: Source, handle: _BlockHandle, what: str, budget: _ExpansionBudget) -> bytes:
    """A block's contents, checksum-verified and decompressed."""
    name = source.name
    offset, length = handle
    raw = source.read_at(offset, length + BLOCK_TRAILER_BYTES)
    (stored,) = struct.unpack_from("<I", raw, length + 1)
    if crc32c(raw[: length + 1]) != _unmask(stored):
        raise InvalidArtifact(f"{name}: {what}: checksum mismatch (corrupt or truncated file)")
    kind = raw[length]
    if kind == NO_COMPRESSION:
        budget.spend(length)
        return raw[:length]
    if kind == SNAPPY_COMPRESSION:
        return _unsnappy(name, raw[:length], what, budget)
    raise InvalidArtifact(f"{name}: {what}: unknown block compression type {kind}")


def _unsnappy(name: str, data: bytes, what: str, budget: _ExpansionBudget) -> bytes:
    # Raw Snappy starts with the uncompressed length: refuse a huge one
    # before the decompressor allocates it.
    declared, _ = _varint(name, data, 0, len(data), 32, what)
    if declared > MAX_BLOCK_BYTES:
        raise LimitExceeded(
            f"{name}: {what} expands to {declared} bytes, more than the {MAX_BLOCK_BYTES} allowed"
        )
    budget.spend(declared)
    try:
        block = bytes(cramjam.snappy.decompress_raw(data))
    except cramjam.DecompressionError:
        raise InvalidArtifact(f"{name}: {what}: corrupt Snappy-compressed block") from None
    if len(block) != declared:
        raise InvalidArtifact(f"{name}: {what}: corrupt Snappy-compressed block")
    return block


def _block_entries(name: str, block: bytes, what: str) -> Iterator[tuple[bytes, bytes]]:
    """A block's (key, value) entries, keys rebuilt from their shared prefixes.

    Every entry consumes at least three bytes, so the walk always ends. The
    restart array is checked as TensorFlow's `Block::Iter` relies on it: at
    least one restart (TableBuilder always writes one), and each restart
    pointing at an entry that shares nothing with the key before it. A block
    whose restarts point elsewhere reads differently in TensorFlow (it seeks
    through them), so it is refused rather than read one way here.
    """
    if len(block) < 4:
        raise InvalidArtifact(f"{name}: {what} is too short to be a table block")
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    if restarts == 0:
        raise InvalidArtifact(f"{name}: {what} has no restart points")
    if restarts > (len(block) - 4) // 4:
        raise InvalidArtifact(f"{name}: {what} claims {restarts} restart points, more than fit")
    limit = len(block) - 4 - 4 * restarts
    offsets = struct.unpack_from(f"<{restarts}I", block, limit)
    if limit == 0 and offsets == (0,):
        return  # an empty block, as BlockBuilder writes one
    pending = sorted(set(offsets), reverse=True)
    if pending[0] >= limit:
        raise InvalidArtifact(
            f"{name}: {what} has a restart point at offset {pending[0]}, past its entries"
        )
    pos = 0
    key = b""
    while pos < limit:
        start = pos
        shared, pos = _varint(name, block, pos, limit, 32, what)
        unshared, pos = _varint(name, block, pos, limit, 32, what)
        value_length, pos = _varint(name, block, pos, limit, 32, what)
        if shared > len(key) or unshared + value_length > limit - pos:
            raise InvalidArtifact(f"{name}: {what}: corrupt entry at block offset {pos}")
        if pending and pending[-1] <= start:
            if pending[-1] < start or shared:
                raise InvalidArtifact(
                    f"{name}: {what}: restart point at offset {pending[-1]} is not the start "
                    "of an entry with a whole key"
                )
            pending.pop()
        key = key[:shared] + block[pos : pos + unshared]
        pos += unshared
        yield key, block[pos : pos + value_length]
        pos += value_length
    if pending:
        raise InvalidArtifact(
            f"{name}: {what}: restart point at offset {pending[-1]} is inside an entry"
        )


def _varint(name: str, data: bytes, pos: int, limit: int, bits: int, where: str) -> tuple[int, int]:
    """A little-endian base-128 varint at `pos` that must fit in `bits` bits.

    Returns the value and the position after it.
    """
    value = 0
    for shift in range(0, bits, 7):
        if pos >= limit:
            raise InvalidArtifact(f"{name}: {where}: truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value >> bits:
                break
            return value, pos
    raise InvalidArtifact(f"{name}: {where}: varint does not fit in {bits} bits")


# --- CRC32C (Castagnoli), as TensorFlow's table blocks use it ----------------
#
# google-crc32c's C extension (hardware CRC instructions where the CPU has
# them): several GB/s, so verifying even a MAX_INDEX_BYTES index costs little.

_CRC_MASK_DELTA = 0xA282EAD8


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C of `data`, continuing from `crc`."""
    return int(google_crc32c.extend(crc, data))


def masked_crc32c(data: bytes) -> int:
    """The CRC as TensorFlow stores it: rotated and offset, so that a CRC of
    data that embeds CRCs stays well distributed."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _CRC_MASK_DELTA) & 0xFFFFFFFF


def _unmask(masked: int) -> int:
    rot = (masked - _CRC_MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF
