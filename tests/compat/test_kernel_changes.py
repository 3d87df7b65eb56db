"""An op whose kernel computes differently in the consumer's release is a named hazard."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tests.truth import FIXTURE_SETS
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.kernel_changes import dtype_of, kernel_change_findings
from worker.compat.memo import forget_all
from worker.compat.policy import Policy
from worker.compat.subject import NO_HISTORY, subject_for
from worker.compat.verdict_class import verdict_class
from worker.formats.read import read_path
from worker.model.artifact import (
    ArgDef,
    Artifact,
    AttrDef,
    Edge,
    Graph,
    NodeKind,
    OpDef,
    VersionDef,
)
from worker.model.consumer import Consumer, Loader, Registry
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
SORT = OpDef(
    "Sort", inputs=(ArgDef("x", type_attr="T"),), outputs=(ArgDef("y", type_attr="T"),),
    attrs=(AttrDef("T", "type"),),
)  # fmt: skip
OPS = {op.name: op for op in (MAX, PLACEHOLDER, CONST, SORT)}
F = {"type": "DT_FLOAT"}


class Measured:
    """A history that measured Max on floats and int32 (differently in 1.15 than in 2.21
    on floats), and nothing else."""

    def __getattr__(self, name: str) -> object:
        return getattr(NO_HISTORY, name)

    def kernel_changed_ops(self) -> frozenset[str]:
        return frozenset({"Max"})

    def kernel_dtypes(self, op: str, attrs: Mapping[str, Any]) -> list[str]:
        found = attrs.get("T", {}).get("type")
        return [found] if found else []

    def kernel_measured(self, op: str, dtype: str) -> bool | None:
        return (op, dtype) in {("Max", "DT_FLOAT"), ("Max", "DT_INT32")}

    def kernel_unbuildable(self, op: str) -> str | None:
        return "attr k (int) has no default" if op == "Sort" else None

    def kernel_release_measured(self, release: str) -> bool | None:
        return not release.startswith("2.9.")

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


def frozen_max(dtype: dict[str, str], *more: NodeKind) -> Artifact:
    kinds = (
        NodeKind("Placeholder", {"dtype": dtype}, 0, 1, "x"),
        NodeKind("Const", {"dtype": {"type": "DT_INT32"}, "value": {"tensor": {}}}, 0, 1, "axis"),
        NodeKind("Max", {"T": dtype, "Tidx": {"type": "DT_INT32"}}, 2, 1, "max"),
        *more,
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


# Ops no comparison ran: one information finding per verdict, never a silent pass
def test_an_unmeasured_op_on_the_request_path_is_listed_once_as_not_verified() -> None:
    artifact = frozen_max(
        {"type": "DT_HALF"},
        NodeKind("Sort", {"T": F}, 1, 1, "sort"),
        NodeKind("Sort", {"T": F}, 1, 1, "sort_1"),
    )
    verdict = check_artifact(artifact, consumer("2.4.4"), Measured())  # type: ignore[arg-type]
    (found,) = [f for f in verdict.findings if f.code == Code.KERNEL_RESULTS_UNMEASURED]
    assert found.severity == Severity.INFO
    assert "Max (half)" in found.message and "Sort (float; not built by the sweep" in found.message
    assert "Placeholder" not in found.message and "Const" not in found.message
    assert verdict.status == Status.COMPATIBLE


def test_measured_ops_give_no_unmeasured_finding() -> None:
    verdict = check_artifact(frozen_max(F), consumer("2.4.4"), Measured())  # type: ignore[arg-type]
    assert Code.KERNEL_RESULTS_UNMEASURED not in {f.code for f in verdict.findings}


def test_without_a_kernel_table_nothing_is_listed_as_unmeasured() -> None:
    verdict = check_artifact(frozen_max(F), consumer("2.4.4"), NO_HISTORY)
    assert Code.KERNEL_RESULTS_UNMEASURED not in {f.code for f in verdict.findings}


# same_answer: strict, for the fleet or for one consumer
def test_strict_fleet_makes_a_measured_change_incompatible() -> None:
    policy = Policy(same_answer_strict=True)
    verdict = check_artifact(frozen_max(F), consumer("1.15.5"), Measured(), policy)  # type: ignore[arg-type]
    (found,) = [f for f in verdict.findings if f.code == Code.KERNEL_CHANGED]
    assert found.severity == Severity.ERROR and "same_answer: strict" in found.message
    assert verdict.status == Status.INCOMPATIBLE and verdict.serves is False


def test_strict_consumer_alone_is_incompatible_and_others_stay_at_risk() -> None:
    strict = replace(consumer("1.15.5"), same_answer_strict=True)
    history = Measured()
    assert check_artifact(frozen_max(F), strict, history).status == Status.INCOMPATIBLE  # type: ignore[arg-type]
    assert check_artifact(frozen_max(F), consumer("1.15.5"), history).status == Status.AT_RISK  # type: ignore[arg-type]


def test_strict_leaves_a_consumer_without_a_measured_change_compatible() -> None:
    strict = replace(consumer("2.4.4"), same_answer_strict=True)
    assert check_artifact(frozen_max(F), strict, Measured()).status == Status.COMPATIBLE  # type: ignore[arg-type]


def test_strict_and_warned_consumers_are_classed_apart() -> None:
    history = Measured()
    warned = consumer("1.15.5")
    strict = replace(warned, name="strict", same_answer_strict=True)
    artifact = frozen_max(F)
    apart = verdict_class(artifact, strict, history)  # type: ignore[arg-type]
    assert apart is not None and apart != verdict_class(artifact, warned, history)  # type: ignore[arg-type]


def test_a_release_the_sweep_never_ran_in_lists_every_computing_op_as_unmeasured() -> None:
    verdict = check_artifact(frozen_max(F), consumer("2.9.3"), Measured())  # type: ignore[arg-type]
    (found,) = [f for f in verdict.findings if f.code == Code.KERNEL_RESULTS_UNMEASURED]
    assert "Max (float)" in found.message and "did not run in TensorFlow 2.9.3" in found.message


# severity per input class: a change met only on extreme inputs is information
class MeasuredOnExtremes(Measured):
    """Max on floats differs in 1.15 only on NaN and overflowing inputs; on int32 in 1.15
    on ordinary ones."""

    def kernel_change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        if op != "Max" or not release.startswith("1.15."):
            return None
        if dtype == "DT_FLOAT":
            return KernelChange(
                "Max", "DT_FLOAT", "1.15.5", "2.21.0", "on the special inputs ([[NaN]]), 3.0, "
                "the newest nan", same_from="2.0.4", met_on="extremes",
                classes=("large", "special"), remeasure="sweep.py --ops Max",
            )  # fmt: skip
        if dtype == "DT_INT32":
            return KernelChange(
                "Max", "DT_INT32", "1.15.5", "2.21.0", "on the ordinary inputs, 3, the newest 4",
                met_on="ordinary", classes=("ordinary",),
            )  # fmt: skip
        return None


def test_a_change_met_on_extremes_only_is_information_with_its_evidence() -> None:
    verdict = check_artifact(frozen_max(F), consumer("1.15.5"), MeasuredOnExtremes())  # type: ignore[arg-type]
    assert Code.KERNEL_CHANGED not in {f.code for f in verdict.findings}
    (found,) = [f for f in verdict.findings if f.code == Code.KERNEL_RESULTS_EXTREMES]
    assert found.severity == Severity.INFO and found.op == "Max"
    for part in ("large, special", "the newest nan", "1.15.5", "2.21.0", "4 ULPs", "--ops Max"):
        assert part in found.message
    assert verdict.status == Status.COMPATIBLE


def test_strict_does_not_turn_an_extremes_only_change_into_an_error() -> None:
    strict = replace(consumer("1.15.5"), same_answer_strict=True)
    verdict = check_artifact(frozen_max(F), strict, MeasuredOnExtremes())  # type: ignore[arg-type]
    assert verdict.status == Status.COMPATIBLE
    assert {f.severity for f in verdict.findings if f.code == Code.KERNEL_RESULTS_EXTREMES} == {
        Severity.INFO
    }


def test_a_change_met_on_ordinary_inputs_stays_at_risk_and_names_its_classes() -> None:
    artifact = frozen_max({"type": "DT_INT32"})
    verdict = check_artifact(artifact, consumer("1.15.5"), MeasuredOnExtremes())  # type: ignore[arg-type]
    (found,) = [f for f in verdict.findings if f.code == Code.KERNEL_CHANGED]
    assert "ordinary ones among them (input classes differing beyond 4 ULPs: ordinary)" in (
        found.message
    )
    assert verdict.status == Status.AT_RISK
    strict = replace(consumer("1.15.5"), same_answer_strict=True)
    assert check_artifact(artifact, strict, MeasuredOnExtremes()).status == Status.INCOMPATIBLE  # type: ignore[arg-type]


def test_an_ordinary_change_under_another_key_outweighs_an_extremes_only_one() -> None:
    class TwoKeys(MeasuredOnExtremes):
        def kernel_dtypes(self, op: str, attrs: Mapping[str, Any]) -> list[str]:
            return ["DT_FLOAT", "DT_INT32"]

    verdict = check_artifact(frozen_max(F), consumer("1.15.5"), TwoKeys())  # type: ignore[arg-type]
    assert verdict.status == Status.AT_RISK


class SecondOutputChanged(Measured):
    """Max measured to differ in 1.15 only in its output 1 (as a batch norm's batch
    statistics do in inference), not in output 0."""

    def kernel_change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        found = super().kernel_change(op, dtype, release)
        return replace(found, outputs=(1,)) if found is not None else None


def max_feeding_sort(output: int | None) -> Artifact:
    """Max's output `output` feeds a Sort (None: nothing consumes Max)."""
    artifact = frozen_max(F, NodeKind("Sort", {"T": F}, 1, 1, "sorted"))
    assert artifact.graph is not None
    edges = () if output is None else (Edge(src=2, output=output, dst=3, input=0),)
    return replace(artifact, graph=replace(artifact.graph, edges=edges))


def test_a_change_only_in_an_output_nothing_reads_is_no_hazard() -> None:
    history = SecondOutputChanged()
    codes = [
        [f.code for f in check_artifact(max_feeding_sort(n), consumer("1.15.5"), history).findings]  # type: ignore[arg-type]
        for n in (0, 1, None)
    ]
    assert Code.KERNEL_CHANGED not in codes[0]  # output 0 read: the change never reaches it
    assert Code.KERNEL_CHANGED in codes[1]  # output 1 read
    assert Code.KERNEL_CHANGED in codes[2]  # nothing consumes Max: a signature may fetch any


def test_the_sweep_records_which_outputs_differ() -> None:
    from worker.catalog.catalog import load_catalog

    change = load_catalog().kernel_change("FusedBatchNormV3", "DT_FLOAT", "2.4.4")
    assert change is not None and change.outputs == (5,)  # reserve space only


class SeverityByRelease(Measured):
    """Max differs in 1.15 on ordinary inputs and in 1.14 only on extremes, and in 1.13
    only in output 1: three releases the one pair (Max, float) cannot tell apart."""

    def kernel_change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        found = super().kernel_change(op, dtype, "1.15.5")
        if found is None:
            return None
        if release.startswith("1.14."):
            return replace(found, release="1.14.0", met_on="extremes")
        if release.startswith("1.13."):
            return replace(found, release="1.13.2", outputs=(1,))
        return found if release.startswith("1.15.") else None


def test_releases_whose_change_differs_in_severity_or_outputs_are_classed_apart() -> None:
    history = SeverityByRelease()
    artifact = max_feeding_sort(0)
    classes = {  # each release its own registry, as the catalog's minors have
        r: verdict_class(
            artifact,
            replace(consumer(r), registry=Registry(dict(OPS), f"test {r}")),
            history,  # type: ignore[arg-type]
        )
        for r in ("1.13.2", "1.14.0", "1.15.5")
    }
    assert len(set(classes.values())) == 3, classes


# real fixtures: what is kept across releases, loaders and models (each request path's
# release-free part, each kind's keys, the ops a finding names) changes no finding
def test_kept_facts_give_each_consumer_the_findings_of_a_cold_check() -> None:
    catalog = load_catalog()
    paths = sorted(
        p.parent if p.name == "saved_model.pb" else p
        for s in FIXTURE_SETS
        for p in (s / "artifacts").glob("*/*/*.pb")
        if p.name not in ("fingerprint.pb", "keras_metadata.pb")
    )[::4]
    artifacts = [a for p in paths for a in read_path(str(p))]
    releases = [r.version for r in catalog.releases][::4]
    consumers = [catalog.consumer(r, loader) for r in releases for loader in Loader]
    forget_all()
    warm = [
        [kernel_change_findings(subject_for(a, c, catalog)) for c in consumers] for a in artifacts
    ]
    cold = []
    for artifact in artifacts:
        row = []
        for c in consumers:
            forget_all()
            row.append(kernel_change_findings(subject_for(artifact, c, catalog)))
        cold.append(row)
    assert warm == cold
    codes = {f.code for row in warm for findings in row for f in findings}
    assert {Code.KERNEL_CHANGED, Code.KERNEL_RESULTS_UNMEASURED} <= codes
    assert any(catalog.kernel_release_measured(r) is False for r in releases)
