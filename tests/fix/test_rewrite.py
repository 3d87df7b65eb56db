"""The wire rewrite removes exactly the dropped attr entries and keeps every other byte."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.fix.plan import NO_EFFECT, Drop
from worker.fix.rewrite import render, rewrite_message, varint
from worker.formats.source import BytesSource
from worker.proto import tensorflow_subset_pb2 as pb


def ld(number: int, payload: bytes) -> bytes:
    return varint((number << 3) | 2) + varint(len(payload)) + payload


def vi(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def attr(key: str, value: pb.AttrValue) -> bytes:
    return ld(5, ld(1, key.encode()) + ld(2, value.SerializeToString()))


FALSE = pb.AttrValue(b=False)
TRUE = pb.AttrValue(b=True)
GRAD_A = Drop.producer_default("MatMul", "grad_a", {"b": False})
DEBUG = Drop("VarHandleOp", "debug_name", NO_EFFECT)


def node(name: str, op: str, attrs: list[bytes], unknown: bytes = b"") -> bytes:
    # Unknown fields (numbers our subset lacks: NodeDef 6, 7 and beyond) sit between.
    return ld(1, name.encode()) + ld(2, op.encode()) + unknown + b"".join(attrs)


def graph(nodes: list[bytes], library: bytes, unknown: bytes) -> bytes:
    return b"".join(ld(1, n) for n in nodes) + library + ld(4, vi(1, 2474)) + unknown


def saved_model(graph_bytes: bytes, unknown: bytes) -> bytes:
    meta_info = ld(1, ld(4, b"serve") + ld(99, b"meta-info extension"))
    meta_graph = meta_info + ld(2, graph_bytes) + ld(7, b"object graph bytes") + unknown
    return vi(1, 1) + ld(2, meta_graph) + ld(3, b"saved-model extension")


def build(keep_dropped: bool, unknown: bytes) -> bytes:
    """A SavedModel; with keep_dropped False, the same bytes without the dropped attrs."""
    matmul_attrs = [attr("T", pb.AttrValue(type=1))]
    if keep_dropped:
        matmul_attrs.append(attr("grad_a", FALSE))
    matmul_attrs.append(attr("grad_b", TRUE))  # non-default: never dropped
    handle_attrs = [attr("debug_name", pb.AttrValue(s=b"v"))] if keep_dropped else []
    in_function = [attr("grad_a", FALSE)] if keep_dropped else []
    function = ld(1, ld(1, b"f_123")) + ld(3, node("inner", "MatMul", in_function, unknown))
    library = ld(2, ld(1, function) + ld(2, ld(1, b"f_123") + ld(2, b"grad")))
    nodes = [
        node("mm", "MatMul", matmul_attrs, unknown),
        node("v", "VarHandleOp", [*handle_attrs, attr("dtype", pb.AttrValue(type=1))]),
        node("c", "Const", [attr("grad_a", FALSE)]),  # same attr name, another op
    ]
    return saved_model(graph(nodes, library, unknown), unknown)


def rewrite(data: bytes, drops: list[Drop], kind: str = "saved_model") -> bytes | None:
    source = BytesSource("m", data)
    edit = rewrite_message(source, kind, drops)
    return None if edit is None else render(source, edit.pieces)


def test_removes_exactly_the_dropped_entries_in_graph_and_functions() -> None:
    unknown = vi(77, 5) + ld(78, b"\x00\xff opaque")
    assert rewrite(build(True, unknown), [GRAD_A, DEBUG]) == build(False, unknown)


@given(st.binary(max_size=40), st.integers(min_value=20, max_value=2000))
def test_unknown_fields_anywhere_survive_byte_for_byte(blob: bytes, number: int) -> None:
    unknown = ld(number, blob) + vi(number + 1, len(blob))
    assert rewrite(build(True, unknown), [GRAD_A, DEBUG]) == build(False, unknown)


def test_a_non_default_value_is_kept() -> None:
    data = build(True, b"")
    only_true = Drop.producer_default("MatMul", "grad_b", {"b": False})
    assert rewrite(data, [only_true]) is None


def test_nothing_to_drop_means_no_edit() -> None:
    assert rewrite(build(False, b""), [GRAD_A, DEBUG]) is None


def test_a_frozen_graph_and_a_meta_graph_are_rewritten_alike() -> None:
    nodes = [node("mm", "MatMul", [attr("grad_a", FALSE)])]
    assert rewrite(graph(nodes, b"", b""), [GRAD_A], "graph") == graph(
        [node("mm", "MatMul", [])], b"", b""
    )
    meta = ld(2, graph(nodes, b"", b"")) + ld(6, b"asset")
    expected = ld(2, graph([node("mm", "MatMul", [])], b"", b"")) + ld(6, b"asset")
    assert rewrite(meta, [GRAD_A], "meta_graph") == expected
