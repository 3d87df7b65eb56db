"""The checkpoint `.index` reader against files real TensorFlow wrote, tables
built here from the format spec, and arbitrary or damaged bytes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats import checkpoint
from worker.formats.checkpoint import (
    MAX_LISTED_ENTRIES,
    TABLE_MAGIC,
    crc32c,
    masked_crc32c,
    read_checkpoint_index,
)
from worker.formats.source import BytesSource, FileSource
from worker.model.artifact import Checkpoint
from worker.proto import tensorflow_subset_pb2 as pb

TESTS = Path(__file__).resolve().parents[1]
FIXTURE_ROOTS = [
    TESTS / "fixtures" / "tf-base",
    TESTS / "fixtures" / "tf-real",
]
INDEX_FILES = sorted(p for root in FIXTURE_ROOTS for p in root.glob("artifacts/**/*.index"))


def _expected_variables() -> list[tuple[Path, dict[str, list[int]]]]:
    """(index file, {variable: shape}) for every checkpoint artifacts.json describes."""
    found = []
    for root in FIXTURE_ROOTS:
        listing = root / "artifacts.json"
        if not listing.exists():
            continue
        for artifact in json.loads(listing.read_text()):
            if artifact.get("variables") and artifact.get("load_path"):
                index = root / (artifact["load_path"] + ".index")
                if index.exists():
                    found.append((index, artifact["variables"]))
    return found


# --- A table writer from the format spec (table_builder.cc, block_builder.cc) --


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _block(entries: list[tuple[bytes, bytes]], restart_interval: int = 4) -> bytes:
    out = bytearray()
    restarts = []
    previous = b""
    for i, (key, value) in enumerate(entries):
        shared = 0
        if i % restart_interval == 0:
            restarts.append(len(out))
        else:
            while shared < min(len(key), len(previous)) and key[shared] == previous[shared]:
                shared += 1
        out += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        out += key[shared:] + value
        previous = key
    for offset in restarts or [0]:
        out += struct.pack("<I", offset)
    return bytes(out + struct.pack("<I", len(restarts or [0])))


def _append_block(table: bytearray, contents: bytes, snappy: bool) -> bytes:
    kind = 0
    if snappy:
        contents, kind = bytes(cramjam.snappy.compress_raw(contents)), 1
    offset = len(table)
    trailer = bytes([kind])
    table += contents + trailer + struct.pack("<I", masked_crc32c(contents + trailer))
    return _varint(offset) + _varint(len(contents))


def _table(
    entries: list[tuple[bytes, bytes]], *, per_block: int = 1000, snappy: bool = False
) -> bytes:
    table = bytearray()
    index = []
    for start in range(0, len(entries), per_block):
        chunk = entries[start : start + per_block]
        index.append((chunk[-1][0] + b"\xff", _append_block(table, _block(chunk), snappy)))
    metaindex = _append_block(table, _block([]), False)
    index_handle = _append_block(table, _block(index), snappy)
    footer = (metaindex + index_handle).ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    return bytes(table + footer)


def _header(num_shards: int = 1) -> bytes:
    header = pb.BundleHeaderProto(num_shards=num_shards, version=pb.VersionDef(producer=1))
    return bytes(header.SerializeToString())


def _entry(shape: tuple[int, ...] = (2, 3), size: int = 24) -> bytes:
    proto = pb.BundleEntryProto(dtype=pb.DT_FLOAT, size=size)
    proto.shape.dim.extend(pb.TensorShapeProto.Dim(size=d) for d in shape)
    return bytes(proto.SerializeToString())


def _bundle(names: list[str], *, per_block: int = 1000, snappy: bool = False) -> bytes:
    entries = [(b"", _header())] + [(name.encode(), _entry()) for name in sorted(names)]
    return _table(entries, per_block=per_block, snappy=snappy)


def _read(data: bytes) -> Checkpoint:
    return read_checkpoint_index(BytesSource("test.index", data))


# --- Files written by real TensorFlow ------------------------------------------


@pytest.mark.parametrize("path", INDEX_FILES, ids=lambda p: "/".join(p.parts[-4:]))
def test_real_index_has_the_bundle_header_tensorflow_writes(path: Path) -> None:
    result = read_checkpoint_index(FileSource(path))
    assert (result.versions.producer, result.versions.min_consumer) == (1, 0)
    assert result.versions.bad_consumers == ()
    assert result.num_shards >= 1
    assert result.endianness == "LITTLE"
    assert result.tensors >= 1
    assert all(dtype.startswith("DT_") for dtype, _shape in result.entries.values())


@pytest.mark.parametrize(
    ("path", "variables"), _expected_variables(), ids=lambda v: getattr(v, "name", "")
)
def test_real_checkpoint_lists_the_variables_and_shapes_tensorflow_saved(
    path: Path, variables: dict[str, list[int]]
) -> None:
    result = read_checkpoint_index(FileSource(path))
    assert {name: list(shape) for name, (_dtype, shape) in result.entries.items()} == variables
    assert result.tensors == len(variables)


def test_real_fixtures_include_tensorflow_checkpoints_and_savedmodel_variables() -> None:
    names = {p.name for p in INDEX_FILES}
    assert {"ckpt-1.index", "variables.index"} <= names
    assert len(_expected_variables()) >= 2


@pytest.mark.parametrize("path", INDEX_FILES, ids=lambda p: "/".join(p.parts[-4:]))
def test_real_single_shard_tensor_bytes_equal_the_data_file(path: Path) -> None:
    result = read_checkpoint_index(FileSource(path))
    shard = path.with_name(path.name.removesuffix(".index") + ".data-00000-of-00001")
    if result.num_shards != 1 or not shard.exists():
        pytest.skip("not a single-shard bundle with its data file")
    assert result.tensor_bytes == shard.stat().st_size


# --- CRC32C: published check values (RFC 3720 B.4, LevelDB's crc32c_test) -----

CRC_VECTORS = [
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
]


@pytest.mark.parametrize(("data", "expected"), CRC_VECTORS)
def test_crc32c_matches_published_check_values(data: bytes, expected: int) -> None:
    assert crc32c(data) == expected


def test_crc32c_continues_across_chunks() -> None:
    data = bytes(range(256)) * 3 + b"tail"
    assert crc32c(data[100:], crc32c(data[:100])) == crc32c(data)


# --- Tables built from the spec ---------------------------------------------------


def test_table_with_snappy_blocks_reads_back() -> None:
    names = [f"layer_{i:03d}/kernel/.ATTRIBUTES/VARIABLE_VALUE" for i in range(40)]
    result = _read(_bundle(names, per_block=7, snappy=True))
    assert sorted(result.entries) == sorted(names)
    assert result.tensors == 40
    assert result.tensor_bytes == 40 * 24
    assert result.entries[names[0]] == ("DT_FLOAT", (2, 3))


def test_prefix_compressed_keys_rebuild_across_restarts_and_blocks() -> None:
    names = [f"a/{'b' * i}/c" for i in range(30)]
    result = _read(_bundle(names, per_block=5))
    assert set(result.entries) == set(names)


def test_listed_entries_are_capped_but_all_are_counted() -> None:
    names = [f"t{i:05d}" for i in range(MAX_LISTED_ENTRIES + 5)]
    result = _read(_bundle(names, per_block=300))
    assert len(result.entries) == MAX_LISTED_ENTRIES
    assert result.tensors == MAX_LISTED_ENTRIES + 5


def test_partitioned_slices_count_their_bytes_but_are_not_listed() -> None:
    entries = [
        (b"", _header()),
        (b"\x00\x01w\x00slice0", _entry((2,), size=8)),
        (b"\x00\x01w\x00slice1", _entry((2,), size=8)),
        (b"w", _entry((4,), size=0)),
    ]
    result = _read(_table(entries))
    assert result.entries == {"w": ("DT_FLOAT", (4,))}
    assert (result.tensors, result.tensor_bytes) == (1, 16)


def test_dtype_newer_than_our_proto_is_named_by_number() -> None:
    entry = pb.BundleEntryProto(size=4)
    entry.dtype = 77  # type: ignore[assignment]
    result = _read(_table([(b"", _header()), (b"x", entry.SerializeToString())]))
    assert result.entries["x"] == ("DataType(77)", ())


def test_big_endian_header_is_reported() -> None:
    header = pb.BundleHeaderProto(num_shards=2, endianness=pb.BundleHeaderProto.BIG)
    result = _read(_table([(b"", header.SerializeToString())]))
    assert (result.endianness, result.num_shards, result.tensors) == ("BIG", 2, 0)


# --- Not a checkpoint index, or a broken one --------------------------------------


def test_bad_magic_is_not_a_checkpoint_index() -> None:
    with pytest.raises(
        InvalidArtifact, match=r"not a TensorFlow checkpoint index \(bad table magic\)"
    ):
        _read(b"\0" * 200)


def test_file_shorter_than_a_footer_is_not_a_checkpoint_index() -> None:
    with pytest.raises(InvalidArtifact, match="shorter than a table footer"):
        _read(b"abc")


def test_missing_header_entry_is_invalid() -> None:
    with pytest.raises(InvalidArtifact, match="no bundle header"):
        _read(_table([(b"x", _entry())]))


def test_v1_tensor_slices_checkpoint_is_unsupported_with_a_fix() -> None:
    saved_tensor_slices = b"\x0a\x04\x1a\x02\x08\x16"  # meta { versions { producer: 22 } }
    with pytest.raises(UnsupportedArtifact, match=r"V1 .*re-save it in the V2 format"):
        _read(_table([(b"", saved_tensor_slices), (b"\x00\x01x", b"\x12\x00")]))


def test_corrupt_block_fails_its_checksum() -> None:
    data = bytearray(INDEX_FILES[0].read_bytes())
    data[20] ^= 0x01
    with pytest.raises(InvalidArtifact, match="checksum mismatch"):
        _read(bytes(data))


def test_entry_that_is_not_a_bundle_entry_is_invalid() -> None:
    with pytest.raises(InvalidArtifact, match="'x' is not a BundleEntryProto"):
        _read(_table([(b"", _header()), (b"x", b"\xff\xff")]))


def _with_index_handle(table: bytes, offset: int, size: int) -> bytes:
    footer = (_varint(0) + _varint(0) + _varint(offset) + _varint(size)).ljust(40, b"\0")
    return table[:-48] + footer + struct.pack("<Q", TABLE_MAGIC)


def test_block_handle_past_the_end_is_invalid() -> None:
    table = _bundle(["a"])
    with pytest.raises(InvalidArtifact, match="runs past the end"):
        _read(_with_index_handle(table, len(table) - 10, 20))


def test_block_larger_than_the_cap_is_refused() -> None:
    with pytest.raises(LimitExceeded, match=r"index block is .* more than"):
        _read(_with_index_handle(_bundle(["a"]), 0, 100 << 20))


def test_overlong_varint_is_invalid() -> None:
    footer = (b"\xff" * 11).ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    with pytest.raises(InvalidArtifact, match="varint does not fit in 64 bits"):
        _read(footer)


def test_data_blocks_out_of_order_are_invalid() -> None:
    table = bytearray()
    first = _append_block(table, _block([(b"", _header())]), False)
    second = _append_block(table, _block([(b"b", _entry())]), False)
    index = _append_block(table, _block([(b"a", second), (b"c", first)]), False)
    footer = (_varint(0) + _varint(0) + index).ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    with pytest.raises(InvalidArtifact, match="overlaps or precedes"):
        _read(bytes(table + footer))


def test_snappy_block_declaring_a_huge_length_is_refused() -> None:
    table = bytearray()
    bomb = _varint(1 << 31) + b"\x00"
    kind = b"\x01"
    table += bomb + kind + struct.pack("<I", masked_crc32c(bomb + kind))
    footer = (_varint(0) + _varint(0) + _varint(0) + _varint(len(bomb))).ljust(40, b"\0")
    with pytest.raises(LimitExceeded, match="expands to"):
        _read(bytes(table + footer) + struct.pack("<Q", TABLE_MAGIC))


class _HugeSource:
    name = "huge.index"
    size = 300 << 20

    def read_at(self, offset: int, length: int) -> bytes:
        raise AssertionError("the size alone must refuse it")


def test_index_file_larger_than_the_cap_is_refused_unread() -> None:
    with pytest.raises(LimitExceeded, match="more than the"):
        read_checkpoint_index(_HugeSource())


def test_entry_count_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "MAX_ENTRIES", 10)
    with pytest.raises(LimitExceeded, match="more than 10 entries"):
        _read(_bundle([f"t{i}" for i in range(20)]))


def test_key_bytes_cap_stops_a_shared_prefix_blowup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "MAX_KEY_BYTES_TOTAL", 10_000)
    long_prefix = "p" * 5000
    with pytest.raises(LimitExceeded, match="keys exceed"):
        _read(_bundle([f"{long_prefix}{i}" for i in range(5)]))


# --- Anything in, a Checkpoint or our error out ----------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read_or_our_error(data: bytes) -> None:
    try:
        _read(data)
    except InvalidArtifact as exc:
        assert "\n" not in str(exc)


@FUZZ
@given(st.binary(max_size=2048))
def test_any_bytes_give_a_checkpoint_or_our_error(data: bytes) -> None:
    _read_or_our_error(data)


@FUZZ
@given(st.binary(max_size=300), st.integers(0, 400), st.integers(0, 400))
def test_any_bytes_behind_a_valid_footer_give_a_checkpoint_or_our_error(
    body: bytes, offset: int, size: int
) -> None:
    _read_or_our_error(_with_index_handle(body + bytes(48), offset, size))


@FUZZ
@given(st.binary(max_size=400), st.booleans())
def test_any_block_contents_with_valid_checksums_give_a_checkpoint_or_our_error(
    contents: bytes, snappy: bool
) -> None:
    table = bytearray()
    handle = _append_block(table, contents, snappy)
    index = _append_block(table, _block([(b"k", handle)]), False)
    footer = (_varint(0) + _varint(0) + index).ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    _read_or_our_error(bytes(table + footer))


@FUZZ
@given(
    st.sampled_from(INDEX_FILES),
    st.lists(st.tuples(st.integers(0, 400), st.integers(1, 255)), max_size=4),
    st.integers(0, 400),
)
def test_damaged_real_files_give_a_checkpoint_or_our_error(
    path: Path, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(path.read_bytes())
    for position, mask in flips:
        data[position % len(data)] ^= mask
    _read_or_our_error(bytes(data[: len(data) - cut % len(data)]))


# --- Restart arrays: TensorFlow's Block::Iter seeks through them -----------------


def _index_with_block(contents: bytes) -> bytes:
    """A table whose only data block is `contents` (checksummed), listed by a valid index."""
    table = bytearray()
    handle = _append_block(table, contents, False)
    index = _append_block(table, _block([(b"\xff", handle)]), False)
    footer = (_varint(0) + _varint(0) + index).ljust(40, b"\0") + struct.pack("<Q", TABLE_MAGIC)
    return bytes(table + footer)


def _with_restarts(block: bytes, offsets: list[int]) -> bytes:
    (count,) = struct.unpack_from("<I", block, len(block) - 4)
    body = block[: len(block) - 4 - 4 * count]
    return body + b"".join(struct.pack("<I", o) for o in offsets) + struct.pack("<I", len(offsets))


GOOD_BLOCK = _block([(b"", _header()), (b"a", _entry()), (b"b", _entry())])


def test_block_as_written_reads() -> None:
    assert _read(_index_with_block(GOOD_BLOCK)).tensors == 2


def test_block_with_zero_restart_points_is_invalid() -> None:
    with pytest.raises(InvalidArtifact, match="no restart points"):
        _read(_index_with_block(_with_restarts(GOOD_BLOCK, [])))


def test_restart_offset_past_the_block_is_invalid() -> None:
    with pytest.raises(InvalidArtifact, match="past its entries"):
        _read(_index_with_block(_with_restarts(GOOD_BLOCK, [0, 10_000])))


def test_restart_offset_inside_an_entry_is_invalid() -> None:
    with pytest.raises(InvalidArtifact, match="restart point at offset 1"):
        _read(_index_with_block(_with_restarts(GOOD_BLOCK, [0, 1])))


def test_crc32c_comes_from_the_c_extension() -> None:
    # ~10 MB/s in pure Python was the reason to switch; the extension is what runs.
    assert checkpoint.google_crc32c.implementation == "c"
