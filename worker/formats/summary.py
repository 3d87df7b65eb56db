"""Human-facing summaries of artifact metadata (what `inspect` prints)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from worker.model.artifact import Artifact, Graph, OpDef


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
    return doc
