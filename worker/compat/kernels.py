"""Whether a consumer's binary has a kernel for a node: TensorFlow's kernel lookup.

When a run places a node, TensorFlow looks for a kernel registered for the
node's op on the device, whose type constraints all hold for the node's attrs
(`FindKernelDef` in `core/framework/op_kernel.cc`); a kernel registered for
`DEFAULT` serves every device. None found: "No OpKernel was registered to
support Op 'X' used by node ... with these attrs". An op can stay registered
after its kernel is gone, and a CPU build lacks GPU-only kernels.

The kernel tables are measured per release (`tools/build_kernels.py`) or per
manifest; without one, nothing is said ("not measured" is never "fine" and
never "missing").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from worker.compat.memo import Identity, identity, remembered
from worker.compat.subject import Subject
from worker.model.artifact import AttrJSON, NodeKind, OpDef
from worker.model.consumer import KernelDefs
from worker.model.findings import Code, Finding, Fix, FixKind, info

# Ops an always-on graph pass rewrites before placement, so no kernel is looked up:
# AccumulateNV2 (AccumulateNV2RemovePass, core/common_runtime/accumulate_n_optimizer.cc).
REWRITTEN_BEFORE_PLACEMENT = frozenset({"AccumulateNV2"})

# The devices a consumer without a GPU places nodes on. The tables keep only the devices
# each release creates: XLA_CPU exists up to 2.3 (where it takes bfloat16 Erf, Round,
# Tanh... that the CPU lacks; measured: 1.15 serves them, 2.4 and 2.5 do not).
CPU_DEVICES = ("CPU", "XLA_CPU", "DEFAULT")
GPU_DEVICES = ("GPU", "XLA_GPU", "DEFAULT")


def _types(value: AttrJSON | None) -> tuple[str, ...] | None:
    """The DataType names an attr value holds; None when not a type (or unknown)."""
    if not value:
        return None
    if "type" in value:
        return (str(value["type"]),)
    listed = value.get("list")
    if isinstance(listed, dict) and "type" in listed:
        return tuple(str(t) for t in listed["type"])
    return None


def _matches(kernel: Sequence[tuple[str, Sequence[str]]], kind: NodeKind, op: OpDef | None) -> bool:
    for attr, allowed in kernel:
        value = kind.attrs.get(attr)
        if value is None and op is not None:
            attr_def = op.attr(attr)
            value = attr_def.default if attr_def is not None else None
        types = _types(value)
        if types is None:
            continue  # not known from the graph: never call it missing on a guess
        if any(t not in allowed for t in types):
            return False
    return True


def has_kernel(
    kind: NodeKind, op: OpDef | None, kernels: KernelDefs, devices: Sequence[str]
) -> bool:
    by_device: Mapping[str, Sequence[Sequence[tuple[str, Sequence[str]]]]] = kernels.get(
        kind.op, {}
    )
    return any(
        _matches(kernel, kind, op) for device in devices for kernel in by_device.get(device, ())
    )


@dataclass(frozen=True)
class KernelGap:
    reason: str  # wording ready for a message
    gpu_only: bool  # kernels exist, for another device than the CPU


Gaps = dict[tuple[str, str, Identity], KernelGap | None]
_GAPS: dict[tuple[Identity, bool], Gaps] = remembered({})
_GAPS_LIMIT = 100_000  # per kernel table and devices


def kernel_gaps(kernels: KernelDefs, gpu: bool) -> Gaps:
    """`kernel_gap`'s memo for one kernel table and devices, by op, attrs and OpDef (a
    fleet asks the same few hundred kinds of every model): a caller asking of many
    kinds looks it up once."""
    key = (identity(kernels), gpu)
    found = _GAPS.get(key)
    if found is None:
        if len(_GAPS) >= 256:
            _GAPS.clear()
        found = _GAPS[key] = {}
    elif len(found) >= _GAPS_LIMIT:
        found.clear()
    return found


def kernel_gap(
    kind: NodeKind, op: OpDef | None, kernels: KernelDefs, gpu: bool, gaps: Gaps | None = None
) -> KernelGap | None:
    """Why the consumer has no kernel for this kind; None when it has one, or when the
    op is not looked up at all. Remembered in `gaps`, the `kernel_gaps` of the same
    table and devices (looked up when not given)."""
    memo = gaps if gaps is not None else kernel_gaps(kernels, gpu)
    key = (kind.op, kind.key[1], identity(op))
    if key in memo:
        return memo[key]
    found = memo[key] = _kernel_gap(kind, op, kernels, gpu)
    return found


def _kernel_gap(
    kind: NodeKind, op: OpDef | None, kernels: KernelDefs, gpu: bool
) -> KernelGap | None:
    if kind.op in REWRITTEN_BEFORE_PLACEMENT:
        return None
    devices = CPU_DEVICES + (GPU_DEVICES if gpu else ())
    if has_kernel(kind, op, kernels, devices):
        return None
    by_device = kernels.get(kind.op)
    if not by_device:
        return KernelGap("the binary registers the op and no kernel for it on any device", False)
    cpu = [k for d in CPU_DEVICES for k in by_device.get(d, ())]
    if not cpu:
        others = ", ".join(sorted(by_device))
        return KernelGap(f"the binary has kernels for {others} only, none for the CPU", True)
    attrs = sorted({attr for kernel in cpu for attr, _ in kernel})
    shown = ", ".join(f"{a}={'/'.join(_types(kind.attrs.get(a)) or ('default',))}" for a in attrs)
    allowed = sorted({t for kernel in cpu for _, types in kernel for t in types})
    return KernelGap(
        f"the binary's CPU kernels do not take these attrs ({shown}); they take "
        f"{', '.join(t.removeprefix('DT_').lower() for t in allowed[:12])}"
        + (" and more" if len(allowed) > 12 else ""),
        False,
    )


def unmeasured_kernel_findings(s: Subject) -> list[Finding]:
    """A consumer whose manifest records no kernel table (dumped before manifests had
    one): its graph's kernels are not looked up, and the answer says so instead of
    letting 'serves' read as checked."""
    registry = s.consumer.registry
    if s.graph is None or registry is None or registry.kernels is not None:
        return []
    return [
        info(
            Code.KERNEL_UNMEASURED,
            "Kernels not checked: this consumer's manifest records no kernel table, so "
            "whether its binary has a kernel for every op on the load and request paths "
            "('No OpKernel was registered to support Op ...') is not verified.",
            fix=Fix(FixKind.RECORD_MANIFEST),
        )
    ]
