"""Human-facing summaries of artifact metadata (what `inspect` prints)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from worker.model.artifact import Artifact, Graph, OpDef
from worker.model.tflite import TfliteModel


def op_usage(graph: Graph, producer_ops: dict[str, OpDef]) -> dict[str, dict[str, Any]]:
    """Per op: node counts (graph and function library) and the attrs set on its nodes.

    `equals_default` is True/False where the producer's OpDef (stripped_op_list)
    gives a default, None where it does not say.
    """
    usage: dict[str, dict[str, Any]] = {}
    attr_state: dict[str, dict[str, set[bool | None]]] = defaultdict(lambda: defaultdict(set))
    functions = set(graph.functions)
    for kind in graph.kinds:
        entry = usage.setdefault(
            kind.op, {"nodes": 0, "library_nodes": 0, "is_function": kind.op in functions}
        )
        entry["library_nodes" if kind.function else "nodes"] += kind.count
        producer = producer_ops.get(kind.op)
        for name, value in kind.attrs.items():
            attr = producer.attr(name) if producer else None
            state = None if attr is None or attr.default is None else attr.default == value
            attr_state[kind.op][name].add(state)
    for op, attrs in attr_state.items():
        usage[op]["attrs"] = {
            name: {"equals_default": next(iter(states)) if len(states) == 1 else False}
            for name, states in sorted(attrs.items())
        }
    return dict(sorted(usage.items()))


def inspect_json(artifact: Artifact) -> dict[str, Any]:
    doc = artifact.to_json()
    doc["op_usage"] = []
    for meta_graph in artifact.meta_graphs:
        doc["op_usage"].append(
            {
                "tags": list(meta_graph.tags),
                "ops": op_usage(meta_graph.graph, meta_graph.producer_ops),
            }
        )
    if artifact.graph is not None:
        doc["op_usage"].append({"tags": [], "ops": op_usage(artifact.graph, {})})
    if artifact.tflite is not None:
        doc["tflite_ops"] = tflite_ops(artifact.tflite)
    return doc


def tflite_ops(model: TfliteModel) -> list[dict[str, Any]]:
    """Per operator code: what it is, how many operators use it, and what their tensors
    are (input types; whether weights are quantized per channel; the largest rank)."""
    usage = []
    for index, opcode in enumerate(model.operator_codes):
        kinds = [k for k in model.operator_kinds if k.opcode_index == index]
        inputs = [s for k in kinds for s in k.inputs if s is not None]
        usage.append(
            {
                "name": opcode.name,
                "code": opcode.code,
                "version": opcode.version,
                "custom": opcode.is_custom,
                "flex": opcode.is_flex,
                "operators": sum(k.count for k in kinds),
                "input_types": sorted({s.type for s in inputs}),
                "per_channel": any(s.per_channel for s in inputs),
                "max_rank": max((s.rank for s in inputs), default=0),
            }
        )
    return usage
