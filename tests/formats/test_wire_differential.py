"""Differential: our readers against protobuf's own parser (upb) on the same bytes.

TensorFlow parses with C++ protobuf; upb applies the same wire rules, so upb
parsing our proto subset is the oracle. On every input, real files mutated or
messages built field by field (padded varints, groups, unknown fields, fields
with the wrong wire type, split and repeated VersionDefs), our reader must
accept exactly when upb accepts and then report the same VersionDef, node
count and op set. Thresholds are lowered so that every field of more than a
few bytes goes through the skimmer rather than straight to upb.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.truth import FIXTURE_SETS
from worker.errors import InvalidArtifact
from worker.formats import graph, skim
from worker.formats.graph import graph_versions, read_graph_def
from worker.formats.savedmodel import read_saved_model
from worker.formats.source import BytesSource
from worker.model.artifact import Graph, VersionDef
from worker.proto import tensorflow_subset_pb2 as pb

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
GRAPHS = sorted(p for s in FIXTURE_SETS for p in s.glob("artifacts/*/*frozen*/*.pb"))
SAVED_MODELS = sorted(p for s in FIXTURE_SETS for p in s.glob("artifacts/*/*/saved_model.pb"))[:12]


@pytest.fixture(autouse=True)
def _skim_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph, "WHOLE_BYTES", 0)
    monkeypatch.setattr(skim, "SKIM_BYTES", 6)


# --- The oracle -----------------------------------------------------------------


def _ops(graph_def: pb.GraphDef) -> set[str]:
    ops = {n.op for n in graph_def.node}
    return ops | {n.op for f in graph_def.library.function for n in f.node_def}


def _expected_graph(data: bytes) -> tuple[VersionDef, int, set[str]] | None:
    """What upb reads, or None where it refuses (or finds nothing of a graph)."""
    try:
        graph_def = pb.GraphDef.FromString(data)
    except Exception:
        return None
    versions = graph_versions(graph_def)
    if versions is None and not graph_def.node and not graph_def.library.function:
        return None  # our policy: bytes with nothing of a graph are no graph
    return versions or VersionDef(producer=0), len(graph_def.node), _ops(graph_def)


def _ours(graph_read: Graph) -> tuple[VersionDef | None, int, set[str]]:
    return graph_read.versions, graph_read.node_count, {k.op for k in graph_read.kinds}


def _agrees_on_graph(data: bytes) -> None:
    expected = _expected_graph(data)
    try:
        ours = _ours(read_graph_def(BytesSource("model.pb", data)))
    except InvalidArtifact as exc:
        assert "\n" not in str(exc)
        assert expected is None, f"we refused what protobuf reads: {exc}"
        return
    assert expected is not None, "we read what protobuf refuses"
    assert ours == expected


# --- Field-by-field message builder ----------------------------------------------


def _varint(value: int, padding: int = 0) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    if padding:  # the same value in more bytes: 0x80 continuations, then 0x00
        out[-1] |= 0x80
        out += b"\x80" * (padding - 1) + b"\x00"
    return bytes(out)


PADDING = st.sampled_from([0, 0, 0, 0, 1, 3, 4, 5, 9])
NUMBERS = st.one_of(
    st.integers(1, 8),
    st.sampled_from([15, 16, 2047, 2048, (1 << 29) - 1, 1 << 29, (1 << 32) - 1, 1 << 32]),
)


def _version_def() -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda p, m, b: pb.VersionDef(
            producer=p, min_consumer=m, bad_consumers=b
        ).SerializeToString(),
        st.integers(-5, 3000),
        st.integers(0, 3000),
        st.lists(st.integers(0, 3000), max_size=3),
    )


def _node_def() -> st.SearchStrategy[bytes]:
    def build(name: str, op: str, inputs: list[str], attrs: dict[str, int]) -> bytes:
        node = pb.NodeDef(name=name, op=op, input=inputs)
        for key, value in attrs.items():
            node.attr[key].i = value
        const = node.attr["value"].tensor
        const.tensor_content = b"\x00" * 40
        return node.SerializeToString()

    names = st.sampled_from(["a", "b", "c:1", "^a", "x/y"])
    return st.builds(
        build,
        st.sampled_from(["a", "b", "c", ""]),
        st.sampled_from(["Const", "MatMul", "Identity", ""]),
        st.lists(names, max_size=3),
        st.dictionaries(st.sampled_from(["T", "N", "_x"]), st.integers(0, 9), max_size=2),
    )


def _fields(depth: int) -> st.SearchStrategy[bytes]:
    return st.lists(_field(depth), max_size=5).map(b"".join)


@st.composite
def _field(draw: st.DrawFn, depth: int) -> bytes:
    number = draw(NUMBERS)
    wire_type = draw(st.sampled_from([0, 0, 1, 2, 2, 2, 2, 3, 4, 5, 6]))
    tag = _varint(number << 3 | wire_type, draw(PADDING))
    if wire_type == 0:
        return tag + _varint(draw(st.integers(0, (1 << 64) - 1)), draw(PADDING))
    if wire_type == 1:
        return tag + draw(st.binary(min_size=8, max_size=8))
    if wire_type == 5:
        return tag + draw(st.binary(min_size=4, max_size=4))
    if wire_type == 3:
        inner = draw(_fields(depth + 1)) if depth < 3 else b""
        close = draw(st.sampled_from([number, number, number, number + 1]))
        return tag + inner + _varint(close << 3 | 4)
    if wire_type == 2:
        choices = [st.binary(max_size=12), _version_def(), _node_def()]
        if depth < 3:
            choices.append(_fields(depth + 1))
        payload = draw(st.one_of(*choices))
        return tag + _varint(len(payload), draw(PADDING)) + payload
    return tag  # END_GROUP on its own, or a wire type that does not exist


# --- Properties -----------------------------------------------------------------


@FUZZ
@given(_fields(0))
def test_synthetic_graph_defs_read_as_protobuf_reads_them(data: bytes) -> None:
    _agrees_on_graph(data)


@FUZZ
@given(st.lists(st.one_of(_field(0), _node_def().map(lambda n: b"\x0a" + _varint(len(n)) + n))))
def test_graph_defs_of_nodes_and_stray_fields_read_as_protobuf_reads_them(
    fields: list[bytes],
) -> None:
    _agrees_on_graph(b"".join(fields))


def _mutations(blob: bytes, draw: st.DrawFn) -> Iterator[bytes]:
    data = bytearray(blob)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(data) - 1)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "pad"]))
        if action == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
        elif action == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        elif action == "pad" and data and data[at] < 0x80:
            # pad whatever varint ends here: a tag, a length or a value
            data[at : at + 1] = bytes([data[at] | 0x80]) + b"\x80" * draw(PADDING) + b"\x00"
    yield bytes(data)


@FUZZ
@given(st.sampled_from(GRAPHS), st.data())
def test_mutated_real_graphs_read_as_protobuf_reads_them(path: Path, data: st.DataObject) -> None:
    for mutated in _mutations(path.read_bytes(), data.draw):
        _agrees_on_graph(mutated)


@FUZZ
@given(st.sampled_from(SAVED_MODELS), st.data())
def test_mutated_real_saved_models_read_as_protobuf_reads_them(
    path: Path, data: st.DataObject
) -> None:
    for mutated in _mutations(path.read_bytes(), data.draw):
        try:
            message = pb.SavedModel.FromString(mutated)
            expected = [
                (graph_versions(m.graph_def) or VersionDef(0), _ops(m.graph_def))
                for m in message.meta_graphs
            ]
            if not expected or not all(m.HasField("graph_def") for m in message.meta_graphs):
                expected = None
        except Exception:
            expected = None
        try:
            _, meta_graphs = read_saved_model(BytesSource("saved_model.pb", mutated))
        except InvalidArtifact:
            assert expected is None, "we refused what protobuf reads"
            continue
        assert expected is not None, "we read what protobuf refuses"
        assert [(m.graph.versions, {k.op for k in m.graph.kinds}) for m in meta_graphs] == expected


def test_the_fixtures_are_there() -> None:
    assert GRAPHS
    assert SAVED_MODELS
