"""Data types the consumer's `DataType` enum does not hold (the float8 types, int4, ...).

TensorFlow validates each node it imports or instantiates against its OpDef
(`ValidateNodeDef` -> `ValidateAttrValue` -> `AttrValueHasType`, in
`core/framework/attr_value_util.cc`): a `type` or `list(type)` attr whose value
`DataType_IsValid` rejects fails with "AttrValue has invalid DataType enum: N".
`DataType_IsValid` is the release's own generated enum check, so a type newer than
the consumer fails wherever the consumer validates the node:
- a top-level node: at import (the v1 loader, a graph import); `tf.saved_model.load`
  of a TF2 SavedModel meets the same types in the object graph's variables and the
  functions' signatures, and fails at load;
- a node in a function body: when the function is instantiated, i.e. at load by
  `tf.saved_model.load`, at the first request (or the restore) by the v1 loader and a
  graph import (`worker.compat.order.place`).
What each release's enum holds is measured (`data/data_types.json`); a release the
measurements do not bound makes the answer unknown, never "loads". A release that
knows the type can still lack a kernel for an op on it: the kernel tables say so
(`worker.compat.kernels`, `kernel.missing`).
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from worker.compat.kernels import kernel_gap
from worker.compat.memo import ObjectTable, per_kind_attrs
from worker.compat.order import place
from worker.compat.serving import request_kinds
from worker.compat.subject import Subject
from worker.model.artifact import AttrJSON, Graph, NodeKind
from worker.model.consumer import DataTypes, minor
from worker.model.findings import Code, Finding, Fix, FixKind, Stage, error, info

# Every release from 1.13 holds these (the enum up to DT_UINT64 = 23, measured): a graph
# holding nothing else needs no lookup.
_ALWAYS_KNOWN = frozenset(
    {
        "DT_INVALID", "DT_FLOAT", "DT_DOUBLE", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_INT8",
        "DT_STRING", "DT_COMPLEX64", "DT_INT64", "DT_BOOL", "DT_QINT8", "DT_QUINT8",
        "DT_QINT32", "DT_BFLOAT16", "DT_QINT16", "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128",
        "DT_HALF", "DT_RESOURCE", "DT_VARIANT", "DT_UINT32", "DT_UINT64",
    }
)  # fmt: skip

# Casts a release knows the types of and whose CPU kernel refuses them when it is built at
# the first run ("Cast float to int4 is not supported", UnimplementedError): measured in
# 2.15.1 and 2.21.0 (float32 -> int4, in the main graph and in a function; both loaders).
# The releases between them are taken to share the kernel; others are not judged.
CAST_UNSUPPORTED_RELEASES = ("2.15", "2.21")
_NARROW_INTS = frozenset({"DT_INT4", "DT_UINT4"})
_FLOATS = frozenset({"DT_FLOAT", "DT_HALF", "DT_DOUBLE", "DT_BFLOAT16"})

# (kind index, attr, DataType name) of every type value outside `_ALWAYS_KNOWN`
_Uses = tuple[tuple[int, str, str], ...]
_USES: ObjectTable[str, _Uses] = ObjectTable("data_type_uses")


def _names(value: AttrJSON) -> list[str]:
    if "type" in value:
        return [str(value["type"])]
    tensor = value.get("tensor")
    if isinstance(tensor, dict) and "dtype" in tensor:
        return [str(tensor["dtype"])]
    listed = value.get("list")
    if isinstance(listed, dict):
        found = [str(t) for t in listed.get("type", ())]
        found += [str(t["dtype"]) for t in listed.get("tensor", ()) if isinstance(t, dict)]
        return found
    return []


def data_type_uses(graph: Graph) -> _Uses:
    """Where the graph holds a data type newer than 1.13's enum, once per graph."""
    memo = _USES.of(graph)
    found = memo.get("")
    if found is None:
        uses = []
        for index, kind in enumerate(graph.kinds):
            uses += [(index, attr, name) for attr, name in _kind_uses(kind)]
        found = memo[""] = tuple(uses)
    return found


@per_kind_attrs(100_000)
def _kind_uses(kind: NodeKind) -> tuple[tuple[str, str], ...]:
    """(attr, type name) of every newer type the kind's attrs hold, in attr order."""
    return tuple(
        (attr, name)
        for attr, value in sorted(kind.attrs.items())
        for name in _names(value)
        if name not in _ALWAYS_KNOWN
    )


def data_type_findings(s: Subject) -> list[Finding]:
    """One finding per data type the consumer's enum lacks (or was not measured for),
    at the first node TensorFlow validates that holds it."""
    graph, registry = s.graph, s.consumer.registry
    if graph is None or registry is None or registry.data_types is None:
        return []
    uses = data_type_uses(graph)
    if not uses:
        return []
    if not any(
        registry.data_types.lacks(n) or registry.data_types.unmeasured(n) for _, _, n in uses
    ):
        return restore_kernel_findings(s) + cast_findings(s)
    types = registry.data_types
    scope = s.scope.reachable if s.scope is not None else frozenset()
    # tf.saved_model.load meets the top-level graph's types in the object graph's
    # variables and signatures, which it builds at load.
    seen: set[str] = set()
    found: list[tuple[bool, Finding]] = []
    for index, attr, name in uses:
        kind = graph.kinds[index]
        if name in seen or (kind.function is not None and kind.function not in scope):
            continue
        if types.lacks(name):
            seen.add(name)
            finding = place(
                s,
                _lacks(s, types, kind.op, kind.where, attr, name),
                kind.function,
                checked_at_load=s.instantiates_at_load,
            )
            found.append((kind.function is None, finding))
        elif types.unmeasured(name):
            seen.add(name)
            found.append((kind.function is None, _unmeasured(s, types, kind.op, attr, name)))
    found.sort(key=lambda item: not item[0])  # the top-level graph's first
    return [f for _, f in found] + restore_kernel_findings(s) + cast_findings(s)


def cast_findings(s: Subject) -> list[Finding]:
    """A float <-> int4/uint4 Cast a request runs, in a release whose Cast kernel refuses it."""
    release = s.consumer.tensorflow
    if s.graph is None or release is None or not data_type_uses(s.graph):
        return []
    try:
        low, high = (Version(v) for v in CAST_UNSUPPORTED_RELEASES)
        if not low <= Version(minor(release)) <= high:
            return []
    except InvalidVersion:
        return []
    for kind in request_kinds(s):
        if kind.op != "Cast":
            continue
        src = str(kind.attrs.get("SrcT", {}).get("type", ""))
        dst = str(kind.attrs.get("DstT", {}).get("type", ""))
        if (src in _FLOATS and dst in _NARROW_INTS) or (dst in _FLOATS and src in _NARROW_INTS):
            return [
                error(
                    Code.KERNEL_MISSING,
                    f"Cast {src} to {dst} is not supported ({kind.where}): {_release(s)}'s Cast "
                    "kernel refuses it when the request first runs it (measured in 2.15.1 and "
                    "2.21.0). The model loads and every request fails.",
                    op="Cast",
                    fix=Fix(FixKind.REEXPORT_WITHOUT_OP, op="Cast"),
                    stage=Stage.REQUEST,
                )
            ]
    return []


def restore_kernel_findings(s: Subject) -> list[Finding]:
    """tf.saved_model.load restores each variable by assigning it (AssignVariableOp of the
    variable's dtype) at load: a release that knows a new type may have no kernel to assign
    it (measured: 2.12.1 loading a float8_e5m2 variable: "No OpKernel was registered to
    support Op 'AssignVariableOp'"). The v1 loader's restore is judged with the whole graph
    (`worker.compat.runs`)."""
    registry = s.consumer.registry
    if s.graph is None or registry is None or registry.kernels is None or not s.tf2_load:
        return []
    for index, attr, name in data_type_uses(s.graph):
        kind = s.graph.kinds[index]
        if kind.op != "VarHandleOp" or attr != "dtype" or kind.function is not None:
            continue
        if registry.data_types is not None and name not in registry.data_types.known:
            continue  # the enum check speaks for it
        assign = NodeKind("AssignVariableOp", {"dtype": {"type": name}}, 2, 1, kind.example)
        gap = kernel_gap(
            assign, registry.ops.get("AssignVariableOp"), registry.kernels, s.consumer.gpu
        )
        if gap is not None:
            return [
                error(
                    Code.KERNEL_MISSING,
                    f"No OpKernel was registered to support Op 'AssignVariableOp' with dtype "
                    f"{name}: tf.saved_model.load restores variable {kind.example} by assigning "
                    f"it, and {gap.reason}. The load fails.",
                    op="AssignVariableOp",
                    fix=Fix(FixKind.UPGRADE_TO, release=None, op="AssignVariableOp"),
                )
            ]
    return []


def _release(s: Subject) -> str:
    """The consumer's minor: the patch releases of a minor share a verdict class, so the
    same words (`worker.compat.verdict_class`)."""
    return f"TensorFlow {minor(s.consumer.tensorflow)}" if s.consumer.tensorflow else "this build"


def _lacks(s: Subject, types: DataTypes, op: str, where: str, attr: str, name: str) -> Finding:
    first = types.first.get(name)
    since = f"; TensorFlow knows it from {minor(first)}" if first else ""
    return error(
        Code.DTYPE_UNKNOWN,
        f"AttrValue has invalid DataType enum: attr '{attr}' of {where} holds {name}, "
        f"which {_release(s)}'s DataType enum does not have{since}. Upgrade the consumer, "
        "or re-export the model with a data type it knows (e.g. cast to float16/bfloat16 "
        "or int8 before saving).",
        op=op,
        attr=attr,
        fix=Fix(FixKind.UPGRADE_TO, release=first, op=op) if first else Fix(FixKind.REEXPORT_WITH),
    )


def _unmeasured(s: Subject, types: DataTypes, op: str, attr: str, name: str) -> Finding:
    return info(
        Code.DTYPE_UNMEASURED,
        f"Attr '{attr}' of {op} holds {name}; whether {_release(s)}'s DataType enum has it "
        f"was not measured ({types.source}), so whether it loads the model is unknown.",
        op=op,
        attr=attr,
        fix=Fix(FixKind.RECORD_MANIFEST),
    )


def data_types_unknown(findings: list[Finding]) -> bool:
    return any(f.code == Code.DTYPE_UNMEASURED for f in findings)
