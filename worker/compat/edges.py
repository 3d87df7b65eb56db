"""Edge types: what TensorFlow's graph construction checks between two nodes.

Each node kind's input and output types are computed under the consumer's
OpDef (its attrs, the consumer's defaults for the rest), then compared along
every edge as TensorFlow does (`TypesCompatible`: equal, or a ref output
feeding the same non-ref type). An attr a release ignores can still change a
type here: TopKV2's `index_type`, TensorListGetItem's `Tshape`. Edges inside
the function bodies in scope are checked too: real releases type a reachable
function's body at load (`function_topk_index_type`: "input x[0] expected type
int64 != int32"), whichever loader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worker.compat.memo import (
    Identity,
    changed_against,
    edges_touching,
    identity,
    kinds_by_op,
    remembered,
)
from worker.compat.signatures import arg_types, base_type, effective_attrs
from worker.model.artifact import AttrJSON, Edge, Graph, NodeKind, OpDef
from worker.model.attrs import short_dtype
from worker.model.findings import Code, Finding, Fix, FixKind, error

Types = tuple[list[str] | None, list[str] | None]  # (inputs, outputs); None: undecidable

_TYPES: dict[tuple[Identity, tuple[str, str, int, bool]], Types] = remembered({})
_TYPES_LIMIT = 200_000


def kind_types(kind: NodeKind, op: OpDef) -> Types:
    """(input types, output types) of a kind under an OpDef; remembered per distinct
    kind and OpDef, since the edges of thousands of models repeat the same kinds."""
    memo = (identity(op), kind.key)
    hit = _TYPES.get(memo)
    if hit is not None:
        return hit
    attrs = effective_attrs(op, kind.attrs)
    result = (arg_types(op.inputs, attrs), arg_types(op.outputs, attrs))
    if len(_TYPES) >= _TYPES_LIMIT:
        _TYPES.clear()
    _TYPES[memo] = result
    return result


def _arg_length(arg_count_attr: str, list_attr: str, attrs: Mapping[str, AttrJSON]) -> int | None:
    if list_attr:
        value = attrs.get(list_attr, {})
        return len(value["list"].get("type", [])) if "list" in value else None
    if arg_count_attr:
        value = attrs.get(arg_count_attr, {})
        return int(value["i"]) if "i" in value else None
    return 1


def flat_output(edge: Edge, kind: NodeKind, op: OpDef) -> int | None:
    """The flat output index an edge reads under `op`: a function body names outputs
    by arg ("TopKV2:indices:0"), a graph by position."""
    if not edge.output_arg:
        return edge.output
    if op.outputs and op.outputs[0].name == edge.output_arg:
        return edge.output  # the first arg starts at 0 whatever the attrs
    attrs = effective_attrs(op, kind.attrs)
    offset = 0
    for arg in op.outputs:
        if arg.name == edge.output_arg:
            return offset + edge.output
        length = _arg_length(arg.number_attr, arg.type_list_attr, attrs)
        if length is None:
            return None
        offset += length
    return None


def _ignored_attr(kind: NodeKind, op: OpDef) -> tuple[str, str] | None:
    """An attr the node sets that this release's OpDef lacks: what changed the type."""
    for name in kind.attrs:
        if name not in op.attr_map:
            return kind.op, name
    return None


_SAME: dict[tuple[Identity, Identity], bool] = remembered({})


def _same(a: OpDef, b: OpDef) -> bool:
    """OpDef equality, remembered per pair of objects (registries and models repeat them)."""
    key = (identity(a), identity(b))
    same = _SAME.get(key)
    if same is None:
        if len(_SAME) >= _TYPES_LIMIT:
            _SAME.clear()
        same = _SAME[key] = a == b
    return same


def changed_ops(
    used: frozenset[str], ops: Mapping[str, OpDef], producer_ops: Mapping[str, OpDef]
) -> frozenset[str]:
    """The ops of `used` whose OpDef differs between the producer (the model's own op
    list) and the consumer: an edge between two unchanged ops typed consistently for the
    producer, so only edges touching a changed op can mismatch."""
    differ = changed_against(producer_ops, ops, _same)
    return frozenset(used.difference(producer_ops).union(used.intersection(differ)))


def retyped(
    graph: Graph,
    changed: frozenset[str],
    ops: Mapping[str, OpDef],
    producer_ops: Mapping[str, OpDef],
) -> frozenset[str]:
    """The ops of `changed` some kind of which types its inputs or outputs otherwise under
    the consumer's OpDef than under the producer's: most OpDef changes add an attr with a
    default and type every node as before, and an edge whose two ends type as they did
    for the producer cannot mismatch. An op either side lacks stays (nothing to compare),
    and so does one whose outputs are named otherwise (function bodies name outputs)."""
    kept = set()
    by_op = kinds_by_op(graph)
    for name in changed:
        mine, theirs = ops.get(name), producer_ops.get(name)
        if (
            mine is None
            or theirs is None
            or [a.name for a in mine.outputs] != [a.name for a in theirs.outputs]
            or any(
                kind_types(graph.kinds[i], mine) != kind_types(graph.kinds[i], theirs)
                for i in by_op.get(name, ())
            )
        ):
            kept.add(name)
    return frozenset(kept)


def edge_findings(
    graph: Graph,
    in_scope: Sequence[NodeKind],
    ops: Mapping[str, OpDef],
    changed: frozenset[str] | None = None,
) -> list[tuple[Finding, str | None]]:
    """Every edge whose source type the destination does not accept, once per input,
    with the function the edge sits in (None: the top-level graph). `changed`: when
    known, the only ops whose edges can mismatch (`changed_ops`)."""
    kinds = graph.kinds
    scope = {id(k) for k in in_scope}
    signatures: dict[int, Types | None] = {}

    def signature_of(index: int) -> Types | None:
        if index not in signatures:
            kind = kinds[index]
            op = ops.get(kind.op)
            in_graph = op is not None and id(kind) in scope
            signatures[index] = kind_types(kind, op) if in_graph and op is not None else None
        return signatures[index]

    findings: list[tuple[Finding, str | None]] = []
    reported: set[tuple[int, int]] = set()
    edges: Sequence[Edge] = graph.edges
    if changed is not None:  # only the edges touching a changed op, in graph order
        edges = [graph.edges[p] for p in edges_touching(graph, changed)]
    for edge in edges:
        source, target = signature_of(edge.src), signature_of(edge.dst)
        if source is None or target is None:
            continue
        produced, expected = source[1], target[0]
        if produced is None or expected is None or edge.input >= len(expected):
            continue
        src, dst = kinds[edge.src], kinds[edge.dst]
        src_op = ops[src.op]
        output = flat_output(edge, src, src_op)
        named = (
            f"{src.example}:{edge.output_arg}:{edge.output}"
            if edge.output_arg
            else (f"{src.example}:{edge.output}")
        )
        where = f" in function {dst.function}" if dst.function else ""
        if output is None or output >= len(produced):
            if (edge.src, edge.output) not in reported:
                reported.add((edge.src, edge.output))
                finding = error(
                    Code.EDGE_OUTPUT,
                    f"Node {dst.example}{where} reads output {named}, which {src.op} does not "
                    f"have in this release ({len(produced)} outputs)",
                    op=src.op,
                    fix=Fix(FixKind.UPGRADE_TO, op=src.op),
                )
                findings.append((finding, dst.function))
            continue
        actual, want = produced[output], expected[edge.input]
        if actual == want or want == base_type(actual) or (edge.dst, edge.input) in reported:
            continue
        reported.add((edge.dst, edge.input))
        culprit = _ignored_attr(src, src_op) or _ignored_attr(dst, ops[dst.op])
        finding = error(
            Code.EDGE_TYPE,
            f"Input {edge.input} of node {dst.example}{where} was passed {short_dtype(actual)} "
            f"from {named} incompatible with expected {short_dtype(want)}: an attr this "
            f"release does not know changes a type here ({src.op} computes "
            f"{short_dtype(actual)} without it).",
            op=dst.op,
            attr=culprit[1] if culprit else None,
            fix=Fix(FixKind.UPGRADE_TO, op=culprit[0], attr=culprit[1])
            if culprit
            else Fix(FixKind.UPGRADE_TO),
        )
        findings.append((finding, dst.function))
    return findings
