"""Ops on a request's path whose kernel in the consumer's release computes something
else than the newest release's, as measured (catalog `kernel_changes`).

A model that loads and serves can still answer differently: Max and Min ignoring
NaN, another rounding mode, a resize that moved its sample points. The catalog
records, per op and dtype, the releases where a probe on the same inputs got other
results; an op of that dtype on the request path is a named hazard (`at-risk`)
for a consumer of such a release, or an error where the fleet or the consumer says
`same_answer: strict` (`worker.compat.policy`), when the change was met on inputs a
served model meets (`met_on: ordinary`). A change met only on extreme or special
inputs (NaN and infinities, overflowing magnitudes, tiny values, empty tensors, a
special value against an ordinary one, INT_MIN / -1) is information with the same
evidence (`kernel.results-extremes`), under strict too: a model fed such values is
rare, and marking every model at-risk for them would hide the changes that matter.
Differences within the stated tolerance (4 ULPs) are rounding, not a change. An op
of a dtype nobody ran is neither: it is listed, once per verdict, as not verified
(`kernel.results-unmeasured`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from worker.compat.memo import Identity, ObjectTable, identity, per_object, remembered
from worker.compat.nodes import where_of
from worker.compat.serving import request_kinds
from worker.compat.subject import History, Subject
from worker.model.artifact import Graph, NodeKind
from worker.model.effects import KernelChange
from worker.model.findings import Code, Finding, Fix, FixKind, info, warning

# Ops whose outputs are their inputs, a stored or fed value, or what a called function
# computes (its body's ops are on the request path themselves): no kernel of theirs
# computes a value, so "not measured" would say nothing about results, nor "changed"
# (the sweep feeds Merge two live inputs, which a well-formed graph never does).
COMPUTES_NO_VALUES = frozenset(
    {
        "Const",
        "Placeholder",
        "PlaceholderWithDefault",
        "NoOp",
        "Identity",
        "IdentityN",
        "VarHandleOp",
        "VariableV2",
        "Variable",
        "ReadVariableOp",
        "PartitionedCall",
        "StatefulPartitionedCall",
        "While",
        "StatelessWhile",
        "If",
        "StatelessIf",
        "Case",
        "StatelessCase",
        "Enter",
        "Exit",
        "Merge",
        "Switch",
        "NextIteration",
        "LoopCond",
        "_Arg",
        "_Retval",
    }
)
LISTED = 12  # ops named in the unmeasured finding; the rest are counted
ROUNDING_ULPS = 4.0  # the sweep's stated tolerance (tools/kernels/sweep.py)


def dtype_of(kind: NodeKind) -> str | None:
    """The node's type as the hand cases key it: `T`, `Tparams`, or `SrcT->DstT`."""
    attrs = kind.attrs
    if "SrcT" in attrs and "DstT" in attrs:
        src, dst = attrs["SrcT"].get("type"), attrs["DstT"].get("type")
        return f"{src}->{dst}" if src and dst else None
    for name in ("T", "Tparams"):
        found = attrs.get(name, {}).get("type")
        if found:
            return str(found)
    return None


def _short(dtype: str) -> str:
    return dtype.removeprefix("DT_").lower().replace("->dt_", "->")


def kernel_change_findings(s: Subject) -> Iterable[Finding]:
    release = s.consumer.tensorflow
    if release is None or s.graph is None or s.scope is None:
        return []
    plan = _plan(s)
    history = s.history
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    unmeasured: dict[str, frozenset[str]] = plan.unmeasured  # copied before a change
    added = False
    for kind, keys, measured in plan.changeable:
        if any((kind.op, k) in seen for k in keys):
            continue
        changes = [c for k in keys if (c := history.kernel_change(kind.op, k, release))]
        if changes:  # what the graph reads of the kind, only where a change was measured
            read = _read(s, kind)
            changes = [c for c in changes if _reaches(c, read)]
        # a change met on ordinary inputs under any key outweighs one met on extremes only
        change = next((c for c in changes if not c.extremes_only), changes[0] if changes else None)
        if change is None:
            if not measured:
                if not added:
                    unmeasured, added = dict(unmeasured), True
                unmeasured[kind.op] = unmeasured.get(kind.op, frozenset()) | {keys[-1]}
            continue
        seen.add((kind.op, change.dtype))
        remeasure = f" Re-measure: {change.remeasure}." if change.remeasure else ""
        if change.extremes_only:
            findings.append(_extremes(kind, change, remeasure))
            continue
        findings.append(
            warning(
                Code.KERNEL_CHANGED,
                f"{kind.op} ({_short(change.dtype)}, {where_of(kind)}) computes other results "
                f"in TensorFlow {change.release} than in {change.newest} on the same inputs"
                f"{_met(change)}. Measured ({change.measured_by}): {change.evidence}."
                f"{remeasure}",
                op=kind.op,
                fix=Fix(FixKind.UPGRADE_TO, release=change.same_from),
            )
        )
    if history.kernel_release_measured(release) is False:
        # the sweep never ran in this minor: every op it compared is unmeasured here too
        unmeasured = {**plan.first_keys, **unmeasured}
        added = True
    if unmeasured:
        named = None if added else plan.named
        if named is None:
            named = _named(history, unmeasured)
            if not added:
                plan.named = named
        findings.append(_unmeasured(s, len(unmeasured), named))
    return findings


@dataclass
class _Plan:
    """What `kernel_change_findings` reads of a graph's request path whatever the release:
    a fleet change checks a model against a few releases, and most kinds on the path are
    of ops no release changed, whose only finding is whether they were measured."""

    # kinds of ops with a measured change in some release, in path order, with their
    # keys and whether one of the keys was measured
    changeable: tuple[tuple[NodeKind, list[str], bool], ...]
    # op -> keys no release comparison covers, from the kinds of the other ops
    unmeasured: dict[str, frozenset[str]]
    # op -> the first kind's last key (none: no key), for a release the sweep never ran in
    first_keys: dict[str, frozenset[str]]
    named: str | None = None  # `_named` of `unmeasured`, once asked


_PLANS: ObjectTable[tuple[frozenset[str], bool, Identity], _Plan] = ObjectTable(
    "kernel_change_plans"
)


def _plan(s: Subject) -> _Plan:
    """The graph's `_Plan` for the request path the subject runs, once per graph, path
    and history."""
    assert s.graph is not None and s.scope is not None
    memo = _PLANS.of(s.graph)
    key = (s.scope.request, s.tf2_load, identity(s.history))
    found = memo.get(key)
    if found is None:
        found = memo[key] = _planned(request_kinds(s), s.history)
    return found


# Per history, per kind (`NodeKind.key`: op and attrs): its keys, and whether one was
# measured (no key: whether there is a table). Models share most kinds.
_MEASURED_KEYS: dict[Identity, dict[tuple[str, str, int, bool], tuple[list[str], bool]]] = (
    remembered({})
)
_MEASURED_KEYS_LIMIT = 100_000


def _planned(kinds: Iterable[NodeKind], history: History) -> _Plan:
    changed = history.kernel_changed_ops()
    changeable: list[tuple[NodeKind, list[str], bool]] = []
    unmeasured: dict[str, frozenset[str]] = {}
    first_keys: dict[str, frozenset[str]] = {}
    measured_keys = _MEASURED_KEYS.get(identity(history))
    if measured_keys is None:
        if len(_MEASURED_KEYS) >= 64:
            _MEASURED_KEYS.clear()
        measured_keys = _MEASURED_KEYS[identity(history)] = {}
    elif len(measured_keys) >= _MEASURED_KEYS_LIMIT:
        measured_keys.clear()
    for kind in kinds:
        op = kind.op
        if op in COMPUTES_NO_VALUES:
            continue  # Merge "changes" only which of two live inputs it forwards
        found = measured_keys.get(kind.key)
        if found is None:
            keys = history.kernel_dtypes(op, kind.attrs)
            found = measured_keys[kind.key] = (
                keys,
                any(history.kernel_measured(op, k) for k in keys)
                if keys
                else history.kernel_measured(op, "") is not None,
            )
        keys, measured = found
        if op not in first_keys:
            first_keys[op] = frozenset(keys[-1:])
        if not keys:
            if measured:  # some table: the op is listed, without a type
                unmeasured.setdefault(op, frozenset())
            continue
        if op in changed:
            changeable.append((kind, keys, measured))
        elif not measured:
            unmeasured[op] = unmeasured.get(op, frozenset()) | {keys[-1]}
    return _Plan(tuple(changeable), unmeasured, first_keys)


def _reaches(change: KernelChange, read: frozenset[int] | None) -> bool:
    """Whether the change is in an output the model reads: one that differs only in
    outputs no edge of the graph consumes (a batch norm's batch statistics or reserve
    space in inference) cannot change what the model computes. Unknown reads count."""
    return change.outputs is None or read is None or bool(read & set(change.outputs))


def _read(s: Subject, kind: NodeKind) -> frozenset[int] | None:
    """The output positions of a top-level kind that some edge consumes (None: unknown,
    so any): a function body's return values are no edges, so what a body's node feeds
    out of the body is not known here."""
    if s.graph is None or kind.function:
        return None
    return outputs_read(s.graph).get(id(kind))


@per_object
def outputs_read(graph: Graph) -> dict[int, frozenset[int]]:
    """Per top-level kind (by identity), the output positions some edge consumes. A kind
    nothing consumes is absent: its outputs may be what a signature fetches, so every
    one counts as read."""
    found: dict[int, set[int]] = {}
    for edge in graph.edges:
        kind = graph.kinds[edge.src]
        if not kind.function and not edge.output_arg:
            found.setdefault(id(kind), set()).add(edge.output)
    return {k: frozenset(v) for k, v in found.items()}


def _met(change: KernelChange) -> str:
    """Which input classes differ beyond rounding, where measured per class."""
    if not change.classes:
        return ""
    return (
        f", ordinary ones among them (input classes differing beyond {ROUNDING_ULPS:g} ULPs: "
        f"{', '.join(change.classes)})"
    )


def _extremes(kind: NodeKind, change: KernelChange, remeasure: str) -> Finding:
    """A change measured only on extreme or special inputs: information, with the evidence."""
    classes = f" ({', '.join(change.classes)})" if change.classes else ""
    return info(
        Code.KERNEL_RESULTS_EXTREMES,
        f"{kind.op} ({_short(change.dtype)}, {where_of(kind)}) computes other results in "
        f"TensorFlow {change.release} than in {change.newest} only on extreme or special "
        f"inputs{classes}; on the ordinary inputs measured the two agree bitwise or "
        f"within {ROUNDING_ULPS:g} ULPs (rounding), so this is no hazard for a model fed "
        f"ordinary values. Measured ({change.measured_by}): {change.evidence}.{remeasure}",
        op=kind.op,
    )


# `_named`, per history and what it names: models of one exporter name the same ops.
_NAMED: dict[tuple[Identity, frozenset[tuple[str, AbstractSet[str]]]], str] = remembered({})
_NAMED_LIMIT = 10_000


def _named(history: History, ops: Mapping[str, AbstractSet[str]]) -> str:
    """The ops `_unmeasured` names, with their types and why the sweep could not build
    them, and how many more."""
    key = (identity(history), frozenset((op, frozenset(d)) for op, d in ops.items()))
    found = _NAMED.get(key)
    if found is None:
        if len(_NAMED) >= _NAMED_LIMIT:
            _NAMED.clear()
        found = _NAMED[key] = _named_now(history, ops)
    return found


def _named_now(history: History, ops: Mapping[str, AbstractSet[str]]) -> str:
    named = []
    for op in sorted(ops)[:LISTED]:
        dtypes = ", ".join(sorted(_short(d) for d in ops[op]))
        why = history.kernel_unbuildable(op)
        parts = [p for p in (dtypes, f"not built by the sweep: {why}" if why else "") if p]
        named.append(f"{op} ({'; '.join(parts)})" if parts else op)
    more = f" and {len(ops) - LISTED} more" if len(ops) > LISTED else ""
    return f"{', '.join(named)}{more}"


def _unmeasured(s: Subject, count: int, named: str) -> Finding:
    """One finding for every op of the request path no release comparison covers
    (`named`: `_named` of them)."""
    release = s.consumer.tensorflow or ""
    absent = (
        f" (the sweep did not run in TensorFlow {release}'s minor)"
        if s.history.kernel_release_measured(release) is False
        else ""
    )
    return info(
        Code.KERNEL_RESULTS_UNMEASURED,
        f"{count} op(s) on the request path were never run and compared across releases "
        f"for the types this model uses{absent}, so whether TensorFlow {release} gives "
        f"the newest release's results for them is not verified: {named}. "
        "Measure them with tools/kernels/sweep.py (an op it cannot build needs a builder in "
        "tools/kernels/structured.py).",
    )
