"""Ops on a request's path whose kernel in the consumer's release computes something
else than the newest release's, as measured (catalog `kernel_changes`).

A model that loads and serves can still answer differently: Max and Min ignoring
NaN, another rounding mode, a resize that moved its sample points. The catalog
records, per op and dtype, the releases where a probe on the same inputs got other
results; an op of that dtype on the request path is a named hazard (`at-risk`)
for a consumer of such a release. What was not compared says nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from worker.compat.nodes import where_of
from worker.compat.serving import request_kinds
from worker.compat.subject import Subject
from worker.model.artifact import NodeKind
from worker.model.findings import Code, Finding, Fix, FixKind, warning


def dtype_of(kind: NodeKind) -> str | None:
    """The node's type as the kernel table keys it: `T`, `Tparams`, or `SrcT->DstT`."""
    attrs = kind.attrs
    if "SrcT" in attrs and "DstT" in attrs:
        src, dst = attrs["SrcT"].get("type"), attrs["DstT"].get("type")
        return f"{src}->{dst}" if src and dst else None
    for name in ("T", "Tparams"):
        found = attrs.get(name, {}).get("type")
        if found:
            return str(found)
    return None


def kernel_change_findings(s: Subject) -> Iterable[Finding]:
    release = s.consumer.tensorflow
    if release is None:
        return []
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    changed = s.history.kernel_changed_ops()
    for kind in request_kinds(s):
        if kind.op not in changed:
            continue
        dtype = dtype_of(kind)
        if dtype is None or (kind.op, dtype) in seen:
            continue
        change = s.history.kernel_change(kind.op, dtype, release)
        if change is None:
            continue
        seen.add((kind.op, dtype))
        findings.append(
            warning(
                Code.KERNEL_CHANGED,
                f"{kind.op} ({dtype.removeprefix('DT_').lower()}, {where_of(kind)}) computes "
                f"other results in TensorFlow {change.release} than in {change.newest} on the "
                f"same inputs. Measured (tools/attrs/kernels.py): {change.evidence}.",
                op=kind.op,
                fix=Fix(FixKind.UPGRADE_TO, release=change.same_from),
            )
        )
    return findings
