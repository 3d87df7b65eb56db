"""Ops on a request's path whose kernel in the consumer's release answered otherwise on
a second run of the same node, as measured (catalog `kernel_changes`, `nondeterministic`).

The kernel sweep runs every node twice in one session, the first answers kept alive so
that the second run gets other buffers. Where the two answers differ, the kernel reads
memory it never wrote or draws without a seed (DynamicStitch in 2.12 leaves the
positions no index covers unwritten): a model with such a node may answer one request
otherwise than the last with the same inputs. That is no kernel change (the release is
not compared with the newest for that (op, dtype)) and `kernel.changed` says nothing of
it; this check does (`kernel.nondeterministic`).

Severity per input class, as for a kernel change: a hazard (warning, `at-risk`; an error
under `same_answer: strict`) when a node fed an input class a served model meets
(ordinary, halves, scalar, indices) answered twice otherwise, information when only
nodes fed extreme or special inputs did (NaN and infinities, overflowing magnitudes,
tiny values, empty tensors). A release recorded without its classes counts as ordinary:
nothing is demoted without a measurement per class.
"""

from __future__ import annotations

from collections.abc import Iterable

from worker.compat.kernel_changes import COMPUTES_NO_VALUES, outputs_read
from worker.compat.nodes import where_of
from worker.compat.serving import request_kinds
from worker.compat.subject import Subject
from worker.model.artifact import NodeKind
from worker.model.effects import KernelNondeterminism
from worker.model.findings import Code, Finding, Fix, FixKind, info, warning


def nondeterminism_findings(s: Subject) -> Iterable[Finding]:
    """One finding per (op, dtype) of the request path measured nondeterministic in the
    consumer's release (its minor)."""
    release = s.consumer.tensorflow
    if release is None:
        return []
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for kind in request_kinds(s):
        if kind.op in COMPUTES_NO_VALUES:
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
    """Whether the model reads an output whose two runs differ: a top-level node whose
    edges read none of them (a batch norm's reserve spaces in inference) answers alike
    every time. A node nothing consumes, a node of a function body and a record without
    `outputs` count as read (a signature may fetch any output; a body's returns are no
    edges)."""
    if found.outputs is None or s.graph is None or kind.function:
        return True
    read = outputs_read(s.graph).get(id(kind))
    return read is None or bool(read & set(found.outputs))


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
    return warning(
        Code.KERNEL_NONDETERMINISTIC,
        f"{head}{classes}: a request may get another answer than the last one with the same "
        f"inputs (memory the kernel never wrote, or a draw without a seed). "
        f"{measured}{found.evidence}.{remeasure}",
        op=found.op,
        fix=fix,
    )
