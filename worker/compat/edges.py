"""Edge types: what TensorFlow's graph construction checks between two nodes.

Each node kind's input and output types are computed under the consumer's
OpDef (its attrs, the consumer's defaults for the rest), then compared along
every top-level edge as TensorFlow does (`TypesCompatible`: equal, or a ref
output feeding the same non-ref type). An attr a release ignores can still
change a type here: TopKV2's `index_type`, TensorListGetItem's `Tshape`.
Function bodies are typed when a function is instantiated, not at load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worker.compat.nodes import arg_types, base_type, effective_attrs
from worker.model.artifact import Graph, NodeKind, OpDef
from worker.model.attrs import short_dtype
from worker.model.findings import Code, Finding, error

Types = tuple[list[str] | None, list[str] | None]  # (inputs, outputs); None: undecidable

_TYPES: dict[tuple[int, tuple[str, str, int, bool]], tuple[OpDef, Types]] = {}
_TYPES_LIMIT = 200_000


def kind_types(kind: NodeKind, op: OpDef) -> Types:
    """(input types, output types) of a kind under an OpDef; remembered per distinct
    kind and OpDef (held, so the identity key cannot match another OpDef), since the
    edges of thousands of models repeat the same kinds."""
    memo = (id(op), kind.key)
    hit = _TYPES.get(memo)
    if hit is not None and hit[0] is op:
        return hit[1]
    attrs = effective_attrs(op, kind.attrs)
    result = (arg_types(op.inputs, attrs), arg_types(op.outputs, attrs))
    if len(_TYPES) >= _TYPES_LIMIT:
        _TYPES.clear()
    _TYPES[memo] = (op, result)
    return result


def edge_findings(
    graph: Graph, in_scope: Sequence[NodeKind], ops: Mapping[str, OpDef], label: str
) -> list[Finding]:
    """Every edge whose source type the destination does not accept, once per input."""
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

    findings = []
    reported: set[tuple[int, int]] = set()
    for edge in graph.edges:
        source, target = signature_of(edge.src), signature_of(edge.dst)
        if source is None or target is None:
            continue
        produced, expected = source[1], target[0]
        if produced is None or expected is None or edge.input >= len(expected):
            continue
        src, dst = kinds[edge.src], kinds[edge.dst]
        if edge.output >= len(produced):
            if (edge.src, edge.output) not in reported:
                reported.add((edge.src, edge.output))
                findings.append(
                    error(
                        Code.EDGE_OUTPUT,
                        f"Node {dst.example} connects to output {edge.output} of {src.example}, "
                        f"but {src.op} has {len(produced)} outputs in {label}",
                        op=src.op,
                    )
                )
            continue
        actual, want = produced[edge.output], expected[edge.input]
        if actual == want or want == base_type(actual) or (edge.dst, edge.input) in reported:
            continue
        reported.add((edge.dst, edge.input))
        findings.append(
            error(
                Code.EDGE_TYPE,
                f"Input {edge.input} of node {dst.example} was passed {short_dtype(actual)} from "
                f"{src.example}:{edge.output} incompatible with expected {short_dtype(want)} in "
                f"{label}. An attr this consumer does not know changes a type here: re-export "
                "with attrs this release understands, or upgrade the consumer.",
                op=dst.op,
            )
        )
    return findings
