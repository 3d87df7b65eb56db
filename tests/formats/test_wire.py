"""Wire-format cases where TensorFlow's parser and ours used to disagree.

Each case is bytes with what protobuf (upb, same rules as TensorFlow's C++
parser) does with them; every one is read through the skimmer as well as
whole, since large files take that path.
"""

from __future__ import annotations

import pytest

from worker.errors import InvalidArtifact
from worker.formats import graph, skim
from worker.formats.graph import read_graph_def
from worker.formats.read import read_source
from worker.formats.source import BytesSource
from worker.model.artifact import Graph, VersionDef
from worker.proto import tensorflow_subset_pb2 as pb

VERSIONS = b"\x22\x02\x08\x05"  # versions { producer: 5 }
NODE = pb.NodeDef(name="x", op="Placeholder").SerializeToString()
NODE_FIELD = b"\x0a" + bytes([len(NODE)]) + NODE


@pytest.fixture(params=["whole", "skimmed"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "skimmed":
        monkeypatch.setattr(graph, "WHOLE_BYTES", 0)
        monkeypatch.setattr(skim, "SKIM_BYTES", 2)
    return str(request.param)


def _read(data: bytes) -> Graph:
    return read_graph_def(BytesSource("model.pb", data))


def _upb_accepts(data: bytes) -> bool:
    try:
        pb.GraphDef.FromString(data)
    except Exception:
        return False
    return True


# TensorFlow refuses these; they were read before.
REFUSED = {
    "tag padded to 6 bytes": b"\xa2\x80\x80\x80\x80\x00\x02\x08\x05",
    "tag over 32 bits": b"\xa2\x80\x80\x80\x10\x02\x08\x05",
    "field number 2**29": b"\x82\x80\x80\x80\x10\x00" + VERSIONS,
    "length padded to 6 bytes": b"\x22\x82\x80\x80\x80\x80\x00\x08\x05",
    "length of 2 GiB": b"\x22\x80\x80\x80\x80\x08\x08\x05",
    "varint of 11 bytes": b"\x18" + b"\x80" * 10 + b"\x00" + VERSIONS,
    "wire type 6": b"\x0e\x00" + VERSIONS,
    "END_GROUP alone": VERSIONS + b"\x0c",
    "group closed by another field": b"\x4b\x08\x01\x54" + VERSIONS,
    "group never closed": VERSIONS + b"\x4b\x08\x01",
    "bad UTF-8 in a node name": b"\x0a\x03\x0a\x01\xff" + VERSIONS,
}


@pytest.mark.parametrize("data", REFUSED.values(), ids=REFUSED.keys())
def test_what_tensorflow_refuses_is_refused(path: str, data: bytes) -> None:
    data = NODE_FIELD + data  # a graph in every other respect
    assert not _upb_accepts(data)
    with pytest.raises(InvalidArtifact) as caught:
        _read(data)
    assert "\n" not in str(caught.value)


# TensorFlow reads these (unknown fields are kept, not fatal); they were refused before.
ACCEPTED = {
    "tag padded to 5 bytes": b"\xa2\x80\x80\x80\x00\x02\x08\x05",
    "length padded to 5 bytes": b"\x22\x82\x80\x80\x80\x00\x08\x05",
    "varint of 10 bytes": b"\x18" + b"\xff" * 9 + b"\x01" + VERSIONS,
    "field number 2**29-1": b"\xf8\xff\xff\xff\x0f\x01" + VERSIONS,
    "node sent as a varint": b"\x08\x07" + VERSIONS,
    "node sent as a group": b"\x0b\x0c" + VERSIONS,
    "versions sent as fixed32": b"\x25\x01\x02\x03\x04" + VERSIONS,
    "unknown varint, fixed64, fixed32, bytes": (
        b"\x48\x01\x51" + bytes(8) + b"\x5d" + bytes(4) + b"\x62\x03abc" + VERSIONS
    ),
    "unknown groups, nested": b"\x4b\x53\x08\x01\x54\x5a\x00\x4c" + VERSIONS,
    "zero nodes, only a VersionDef": VERSIONS,
}


@pytest.mark.parametrize("data", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_what_tensorflow_reads_is_read(path: str, data: bytes) -> None:
    assert _upb_accepts(data)
    assert _read(data).versions == VersionDef(producer=5)


def test_versions_split_over_occurrences_merge_as_protobuf_merges(path: str) -> None:
    data = (
        b"\x18\x07"  # deprecated version: 7
        + b"\x22\x04\x08\x05\x10\x02"  # versions { producer: 5 min_consumer: 2 }
        + NODE_FIELD
        + b"\x22\x04\x10\x03\x18\x09"  # versions { min_consumer: 3 bad_consumers: 9 }
        + b"\x22\x04\x08\x06\x18\x0a"  # versions { producer: 6 bad_consumers: 10 }
    )
    read = _read(data)
    assert read.versions == VersionDef(producer=6, min_consumer=3, bad_consumers=(9, 10))
    assert read.node_count == 1


def test_deprecated_version_alone_is_ignored_as_tensorflow_ignores_it(path: str) -> None:
    # graph.proto: the deprecated `version` "is entirely ignored"; no VersionDef: producer 0
    assert _read(b"\x18\x07\x18\x08" + NODE_FIELD).versions == VersionDef(producer=0)


def test_text_format_named_pb_is_refused_as_tensorflow_reads_pb_as_binary() -> None:
    text = b'node { name: "x" op: "Placeholder" }\nversions { producer: 5 }\n'
    with pytest.raises(InvalidArtifact, match="text-format protobuf in a binary"):
        read_source(BytesSource("model.pb", text), "model.pb")
    (artifact,) = read_source(BytesSource("model.pbtxt", text), "model.pbtxt")
    assert artifact.graph is not None
    assert artifact.graph.node_count == 1


# --- Bulk is skipped, never read, and checked where the parser would check it --


def _const(tensor: pb.TensorProto) -> bytes:
    node = pb.NodeDef(name="w", op="Const")
    node.attr["dtype"].type = pb.DT_FLOAT
    node.attr["value"].tensor.CopyFrom(tensor)
    return pb.GraphDef(node=[node], versions=pb.VersionDef(producer=5)).SerializeToString()


class CountingSource(BytesSource):
    def __init__(self, name: str, data: bytes) -> None:
        super().__init__(name, data)
        self.read_bytes = 0

    def read_at(self, offset: int, length: int) -> bytes:
        self.read_bytes += length
        return super().read_at(offset, length)


def test_tensor_contents_of_a_large_graph_are_skipped_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(graph, "WHOLE_BYTES", 0)
    tensor = pb.TensorProto(dtype=pb.DT_FLOAT, tensor_content=bytes(8 << 20))
    tensor.tensor_shape.dim.add(size=2 << 20)
    source = CountingSource("model.pb", _const(tensor))
    read = read_graph_def(source)
    assert read.node_count == 1
    assert read.kinds[0].attrs["value"] == {
        "tensor": {"dtype": "DT_FLOAT", "shape": {"dim": [2 << 20]}}
    }
    assert source.read_bytes < 1 << 20


def _ld(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2, len(payload)]) + payload


def _graph_with_tensor(tensor: bytes) -> bytes:
    entry = _ld(1, b"value") + _ld(2, _ld(8, tensor))  # attr value { tensor { ... } }
    return _ld(1, _ld(1, b"w") + _ld(2, b"Const") + _ld(5, entry)) + VERSIONS


BROKEN_PACKED = {
    "int_val ends inside a varint": _ld(7, b"\x01" * 30 + b"\x81"),
    "int_val varint of 11 bytes": _ld(7, b"\x01" + b"\x80" * 10 + b"\x00"),
    "float_val not whole floats": _ld(5, bytes(30)),
    "double_val not whole doubles": _ld(6, bytes(20)),
}


@pytest.mark.parametrize("tensor", BROKEN_PACKED.values(), ids=BROKEN_PACKED.keys())
def test_broken_packed_numbers_in_skipped_bulk_are_refused(path: str, tensor: bytes) -> None:
    data = _graph_with_tensor(tensor)
    assert not _upb_accepts(data)
    with pytest.raises(InvalidArtifact):
        _read(data)


def test_whole_packed_numbers_in_skipped_bulk_are_read(path: str) -> None:
    data = _graph_with_tensor(_ld(7, b"\x01" * 30) + _ld(5, bytes(32)))
    assert _upb_accepts(data)
    assert _read(data).node_count == 1


def test_a_million_identical_nodes_are_one_kind() -> None:
    data = b"\x0a\x00" * 1_000_000 + VERSIONS
    read = _read(data)
    assert read.node_count == 1_000_000
    assert len(read.kinds) == 1
