"""TensorFlow's kernel lookup over measured kernel tables (worker.compat.kernels)."""

from __future__ import annotations

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.kernels import has_kernel, kernel_gap
from worker.model.artifact import AttrDef, NodeKind, OpDef
from worker.model.consumer import KernelDefs

ERF = OpDef("Erf", attrs=(AttrDef("T", "type"),))
TABLE: KernelDefs = {
    "Erf": {"CPU": ((("T", ("DT_FLOAT",)),), (("T", ("DT_DOUBLE",)),))},
    "NoOp": {"DEFAULT": ((),)},
    "GpuOnly": {"GPU": ((),)},
    "Registered": {},
}


def _kind(op: str, **types: str) -> NodeKind:
    return NodeKind(op, {k: {"type": v} for k, v in types.items()}, 1, 1, op.lower())


# Which (kind, table) pairs have a kernel, and why not.
@pytest.mark.parametrize(
    ("kind", "gpu", "missing"),
    [
        (_kind("Erf", T="DT_FLOAT"), False, False),  # a CPU kernel takes the type
        (_kind("Erf", T="DT_BFLOAT16"), False, True),  # none takes it
        (_kind("Erf"), False, False),  # the type is not known from the graph: no guess
        (_kind("NoOp"), False, False),  # DEFAULT serves every device
        (_kind("GpuOnly"), False, True),  # no CPU kernel
        (_kind("GpuOnly"), True, False),  # a consumer with a GPU places it there
        (_kind("Registered"), False, True),  # registered op, no kernel at all
        (_kind("AccumulateNV2"), False, False),  # rewritten before placement
    ],
)
def test_kernel_lookup_follows_device_and_type_constraints(
    kind: NodeKind, gpu: bool, missing: bool
) -> None:
    assert (kernel_gap(kind, ERF if kind.op == "Erf" else None, TABLE, gpu) is not None) is missing


def test_a_type_left_out_of_the_node_is_the_opdefs_default() -> None:
    op = OpDef("Erf", attrs=(AttrDef("T", "type", default={"type": "DT_BFLOAT16"}),))
    assert not has_kernel(_kind("Erf"), op, TABLE, ("CPU",))


def test_a_gpu_only_gap_says_so() -> None:
    gap = kernel_gap(_kind("GpuOnly"), None, TABLE, False)
    assert gap is not None and gap.gpu_only


# Facts of the measured tables (tools/build_kernels.py from each release's CPU wheel).
def test_every_release_with_an_op_registry_has_a_kernel_table() -> None:
    catalog = load_catalog()
    for version in catalog.registry_releases():
        registry = catalog.registry(catalog.resolve(version))
        assert registry is not None and registry.kernels is not None, version
        assert "MatMul" in registry.kernels and "NoOp" in registry.kernels, version


@pytest.mark.parametrize(
    ("release", "op", "dtype", "has"),
    [
        ("2.4", "Erf", "DT_BFLOAT16", False),  # measured: 2.4 fails bfloat16 Erf
        ("2.12", "Erf", "DT_BFLOAT16", True),
        ("1.15", "Erf", "DT_BFLOAT16", True),  # on XLA_CPU, which 1.15 creates
        ("1.15", "Cumsum", "DT_UINT32", False),
        ("2.12", "ApproxTopK", "DT_FLOAT", False),  # registered, no CPU kernel
        ("2.15", "ApproxTopK", "DT_FLOAT", True),
    ],
)
def test_measured_kernels_match_what_releases_ran(
    release: str, op: str, dtype: str, has: bool
) -> None:
    catalog = load_catalog()
    registry = catalog.registry(catalog.resolve(release))
    assert registry is not None and registry.kernels is not None
    kind = _kind(op, T=dtype)
    devices = ("CPU", "XLA_CPU", "DEFAULT")
    assert has_kernel(kind, registry.ops.get(op), registry.kernels, devices) is has


def test_a_consumer_without_a_kernel_table_is_told_its_kernels_were_not_checked() -> None:
    # a manifest dumped before manifests recorded kernels: nothing is looked up, and the
    # answer says so (information: no hazard is known)
    from dataclasses import replace

    from tests.truth import OWN
    from worker.compat.check import check_artifact
    from worker.formats.read import read_path
    from worker.model.findings import Code, Severity

    catalog = load_catalog()
    (artifact,) = read_path(str(OWN / "artifacts" / "tf2.15" / "savedmodel_v1"))
    measured = catalog.consumer("2.15")
    assert measured.registry is not None and measured.registry.kernels is not None
    bare = replace(measured, name="old-manifest", registry=replace(measured.registry, kernels=None))
    codes = {f.code: f for f in check_artifact(artifact, bare, catalog).findings}
    assert codes[Code.KERNEL_UNMEASURED].severity == Severity.INFO
    assert Code.KERNEL_UNMEASURED not in {
        f.code for f in check_artifact(artifact, measured, catalog).findings
    }
