"""Ops on a request's path whose kernel in the consumer's release answered otherwise on
a second run of the same node, as measured (catalog `kernel_changes`, `nondeterministic`).

The kernel sweep runs every node twice in one session, the first answers kept alive so
that the second run gets other buffers. Where the two answers differ, the kernel reads
memory it never wrote or draws without a seed (DynamicStitch in 2.12 leaves the
positions no index covers unwritten): a model with such a node may answer one request
otherwise than the last with the same inputs. That is no kernel change (the release is
not compared with the newest for that (op, dtype)) and `kernel.changed` says nothing of
it; this check does (`kernel.nondeterministic`).

Information, never `at-risk`, and not made an error by `same_answer: strict`: the
hazard is measured only in the sweep's sessions of many nodes, where the allocator hands
a kernel buffers other kernels wrote. The same nodes in one-op held-out graphs answered
alike in 100 runs each in 2.11 to 2.15 (0 of 6 flagged cells, `tools/kernels/repeat.py`),
and DynamicStitch's case bites only where a request's indices leave output positions
uncovered, which a check cannot know. The message says whether the two runs disagreed on
an input class a served model meets (ordinary, halves, scalar, indices) or only on
extreme or special ones (NaN and infinities, overflowing magnitudes, tiny values, empty
tensors), with the evidence and an upgrade to the oldest newer release whose runs agreed.
"""

from __future__ import annotations

from collections.abc import Iterable

from worker.compat.kernel_changes import COMPUTES_NO_VALUES, outputs_read
from worker.compat.memo import per_object
from worker.compat.nodes import where_of
from worker.compat.serving import request_kinds
from worker.compat.subject import Subject
from worker.model.artifact import Graph, NodeKind, OpDef
from worker.model.effects import KernelNondeterminism
from worker.model.findings import Code, Finding, Fix, FixKind, info


def nondeterminism_findings(s: Subject) -> Iterable[Finding]:
    """One finding per (op, dtype) of the request path measured nondeterministic in the
    consumer's release (its minor)."""
    release = s.consumer.tensorflow
    if release is None:
        return []
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    recorded = s.history.kernel_changed_ops()  # holds every op measured nondeterministic
    for kind in request_kinds(s):
        if kind.op not in recorded or kind.op in COMPUTES_NO_VALUES:
            continue  # Merge forwards whichever live input came first: no kernel's answer
        for key in s.history.kernel_dtypes(kind.op, kind.attrs):
            if (kind.op, key) in seen:
                continue
            found = s.history.kernel_nondeterminism(kind.op, key, release)
            if found is None or not _reads(s, kind, found):
                continue
            seen.add((kind.op, key))
            findings.append(_finding(found, where_of(kind)))
    return findings


def _reads(s: Subject, kind: NodeKind, found: KernelNondeterminism) -> bool:
    """Whether the model reads an output whose two runs differ: a node whose edges read
    none of them (a batch norm's reserve spaces in inference, at the top level or in a
    function body) answers alike every time. A node nothing consumes and a record without
    `outputs` count as read (a signature may fetch any output, a body return any), and so
    does a body node whose OpDef has a list output (its flat positions are not known)."""
    if found.outputs is None or s.graph is None:
        return True
    if kind.function:
        registry = s.consumer.registry
        op_def = registry.ops.get(kind.op) if registry is not None else None
        read = _body_reads(s.graph, kind, op_def)
    else:
        read = outputs_read(s.graph).get(id(kind))
    return read is None or bool(read & set(found.outputs))


def _body_reads(graph: Graph, kind: NodeKind, op_def: OpDef | None) -> frozenset[int] | None:
    """The flat output positions a function-body kind's edges read ("bn:y:0" is output
    arg `y`), where every output arg of its OpDef is one tensor; None: unknown (no OpDef,
    a list output, or no edge reads it)."""
    if op_def is None or any(a.number_attr or a.type_list_attr for a in op_def.outputs):
        return None
    position = {a.name: n for n, a in enumerate(op_def.outputs)}
    args = _body_output_args(graph).get(id(kind))
    if not args or any(a not in position for a in args):
        return None
    return frozenset(position[a] for a in args)


@per_object
def _body_output_args(graph: Graph) -> dict[int, frozenset[str]]:
    """Per function-body kind (by identity), the output arg names some body edge reads."""
    found: dict[int, set[str]] = {}
    for edge in graph.edges:
        kind = graph.kinds[edge.src]
        if kind.function and edge.output_arg:
            found.setdefault(id(kind), set()).add(edge.output_arg)
    return {k: frozenset(v) for k, v in found.items()}


def _finding(found: KernelNondeterminism, where: str) -> Finding:
    dtype = found.dtype.removeprefix("DT_").lower()
    remeasure = f" Re-measure: {found.remeasure}." if found.remeasure else ""
    head = (
        f"{found.op} ({dtype}, {where}) answered otherwise on a second run of the same node "
        f"with the same inputs in TensorFlow {found.release}"
    )
    measured = f"Measured ({found.measured_by}, every node run twice in one session): "
    if found.extremes_only:
        return info(
            Code.KERNEL_NONDETERMINISTIC,
            f"{head}, only on extreme or special inputs ({', '.join(found.classes)}); on the "
            "ordinary inputs measured both runs agreed, so this is no hazard for a model fed "
            f"ordinary values. {measured}{found.evidence}.{remeasure}",
            op=found.op,
        )
    classes = f" (input classes: {', '.join(found.classes)})" if found.classes else ""
    fix = Fix(FixKind.UPGRADE_TO, release=found.steady_from) if found.steady_from else None
    return info(
        Code.KERNEL_NONDETERMINISTIC,
        f"{head}{classes}: a request may get another answer than the last one with the same "
        f"inputs (memory the kernel never wrote, or a draw without a seed). Information, not "
        f"at-risk: seen only among many nodes in one session (a one-op graph answered alike "
        f"in 100 runs), and for DynamicStitch only where the indices leave positions "
        f"uncovered. {measured}{found.evidence}.{remeasure}",
        op=found.op,
        fix=fix,
    )
