"""An op whose kernel computes differently in the consumer's release is a named hazard."""

from __future__ import annotations

from worker.compat.check import check_artifact
from worker.compat.kernel_changes import dtype_of
from worker.compat.subject import NO_HISTORY
from worker.model.artifact import ArgDef, Artifact, AttrDef, Graph, NodeKind, OpDef, VersionDef
from worker.model.consumer import Consumer, Registry
from worker.model.effects import KernelChange
from worker.model.findings import Code, Severity
from worker.model.verdict import Status

MAX = OpDef(
    "Max",
    inputs=(ArgDef("input", type_attr="T"), ArgDef("reduction_indices", type_attr="Tidx")),
    outputs=(ArgDef("output", type_attr="T"),),
    attrs=(
        AttrDef("keep_dims", "bool", {"b": False}),
        AttrDef("T", "type"),
        AttrDef("Tidx", "type", {"type": "DT_INT32"}),
    ),
)
PLACEHOLDER = OpDef(
    "Placeholder", outputs=(ArgDef("output", type_attr="dtype"),), attrs=(AttrDef("dtype", "type"),)
)
CONST = OpDef(
    "Const",
    outputs=(ArgDef("output", type_attr="dtype"),),
    attrs=(AttrDef("value", "tensor"), AttrDef("dtype", "type")),
)
OPS = {op.name: op for op in (MAX, PLACEHOLDER, CONST)}
F = {"type": "DT_FLOAT"}


class Measured:
    """A history that measured Max on floats differently in 1.15 than in 2.21."""

    def __getattr__(self, name: str) -> object:
        return getattr(NO_HISTORY, name)

    def kernel_changed_ops(self) -> frozenset[str]:
        return frozenset({"Max"})

    def kernel_change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        if (op, dtype) == ("Max", "DT_FLOAT") and release.startswith("1.15."):
            return KernelChange(
                "Max",
                "DT_FLOAT",
                "1.15.5",
                "2.21.0",
                "on input [[1,NaN,3]], 3.0, the newest nan",
                same_from="2.0.4",
            )
        return None


def frozen_max(dtype: dict[str, str]) -> Artifact:
    kinds = (
        NodeKind("Placeholder", {"dtype": dtype}, 0, 1, "x"),
        NodeKind("Const", {"dtype": {"type": "DT_INT32"}, "value": {"tensor": {}}}, 0, 1, "axis"),
        NodeKind("Max", {"T": dtype, "Tidx": {"type": "DT_INT32"}}, 2, 1, "max"),
    )
    graph = Graph(VersionDef(134), 3, kinds, ())
    return Artifact("m.pb", "graphdef", 0, "", graph=graph)


def consumer(release: str) -> Consumer:
    return Consumer(f"tf-{release}", release, 134, registry=Registry(OPS, "test"))


def test_an_op_measured_to_differ_makes_the_consumer_at_risk_with_the_evidence() -> None:
    verdict = check_artifact(frozen_max(F), consumer("1.15.5"), Measured())  # type: ignore[arg-type]
    (found,) = [f for f in verdict.findings if f.code == Code.KERNEL_CHANGED]
    assert found.severity == Severity.WARNING and found.op == "Max"
    assert "the newest nan" in found.message
    assert verdict.status == Status.AT_RISK


def test_another_dtype_or_release_is_not_flagged() -> None:
    history = Measured()
    for artifact, release in (
        (frozen_max({"type": "DT_INT32"}), "1.15.5"),
        (frozen_max(F), "2.4.4"),
    ):
        verdict = check_artifact(artifact, consumer(release), history)  # type: ignore[arg-type]
        assert Code.KERNEL_CHANGED not in {f.code for f in verdict.findings}


def test_the_kernel_table_keys_a_cast_by_both_types() -> None:
    cast = NodeKind("Cast", {"SrcT": F, "DstT": {"type": "DT_INT32"}}, 1, 1, "c")
    assert dtype_of(cast) == "DT_FLOAT->DT_INT32"
