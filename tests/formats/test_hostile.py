"""Any bytes in: metadata or our own error out, never another exception."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.truth import SHARED
from worker.errors import InvalidArtifact
from worker.formats.read import read_source
from worker.formats.source import BytesSource

NAMES = [
    "model.pb",
    "graph.pbtxt",
    "model.meta",
    "ckpt.index",
    "dir/saved_model.pb",
    "dir/saved_model.pbtxt",
    "model.tar.gz",
    "model.zip",
]
REAL = [
    SHARED / "artifacts/tf2.21/savedmodel_v2/saved_model.pb",
    SHARED / "artifacts/tf2.12/savedmodel_v1/saved_model.pb",
    SHARED / "artifacts/tf2.21/frozen_graph/frozen_graph.pb",
    SHARED / "artifacts/tf2.12/checkpoint/ckpt-1.index",
]
SUFFIX_OF = {".pb": "model.pb", ".index": "ckpt.index"}
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(name: str, data: bytes) -> None:
    with contextlib.suppress(InvalidArtifact):
        read_source(BytesSource(name, data), name)


@FAST
@given(st.sampled_from(NAMES), st.binary(max_size=2048))
def test_random_bytes_give_metadata_or_invalid_artifact(name: str, data: bytes) -> None:
    _read(name, data)


@FAST
@given(st.sampled_from(REAL), st.data())
def test_truncated_real_files_give_metadata_or_invalid_artifact(
    path: Path, data: st.DataObject
) -> None:
    blob = path.read_bytes()
    cut = data.draw(st.integers(0, len(blob) - 1))
    name = "dir/saved_model.pb" if path.name == "saved_model.pb" else path.name
    _read(name, blob[:cut])


@FAST
@given(st.sampled_from(REAL), st.data())
def test_corrupted_real_files_give_metadata_or_invalid_artifact(
    path: Path, data: st.DataObject
) -> None:
    blob = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    name = "dir/saved_model.pb" if path.name == "saved_model.pb" else path.name
    _read(name, bytes(blob))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_huge_declared_length_is_rejected_without_allocating() -> None:
    # GraphDef field 1 (node) claiming 2**62 bytes.
    blob = b"\x0a" + _varint(1 << 62) + b"xx"
    with pytest.raises(InvalidArtifact, match=r"declares|past the end|not valid protobuf"):
        read_source(BytesSource("model.pb", blob), "model.pb")


def test_deeply_nested_text_format_is_rejected() -> None:
    text = "node { attr { key: 'a' value { list { func { " * 3000
    with pytest.raises(InvalidArtifact):
        read_source(BytesSource("g.pbtxt", text.encode()), "g.pbtxt")


def test_deeply_nested_binary_message_is_rejected() -> None:
    # AttrValue.list.func.attr... nested far past protobuf's recursion limit.
    inner = b""
    for _ in range(200):
        inner = b"\x0a" + _varint(len(inner)) + inner  # field 1, length-delimited
    node = (
        b"\x12\x05Const"
        + b"\x2a"
        + _varint(len(inner) + 4)
        + b"\x0a\x01a\x12"
        + _varint(len(inner))
        + inner
    )
    with pytest.raises(InvalidArtifact):
        read_source(BytesSource("model.pb", b"\x0a" + _varint(len(node)) + node), "model.pb")


def test_empty_file_is_invalid() -> None:
    with pytest.raises(InvalidArtifact, match="empty"):
        read_source(BytesSource("model.pb", b""), "model.pb")
