"""A kernel whose own two runs disagree in the consumer's release is named: a model with it
on its request path may answer otherwise from request to request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.kernel_nondeterminism import _body_reads
from worker.compat.policy import Policy
from worker.compat.subject import NO_HISTORY
from worker.compat.verdict_class import verdict_class
from worker.formats.read import read_path
from worker.model.artifact import ArgDef, Artifact, Edge, Graph, NodeKind, OpDef
from worker.model.consumer import Registry
from worker.model.effects import KernelNondeterminism
from worker.model.findings import Code, Severity
from worker.model.verdict import Status
from worker.proto import tensorflow_subset_pb2 as pb

DT_FLOAT, DT_INT32 = 1, 3
# measured by tools/kernels/sweep.py (worker/catalog/data/kernel_changes.json.gz)
LISTED = "2.12"  # DynamicStitch int32: the two runs of an ordinary node disagree
ON_EXTREMES = "2.10"  # only nodes fed a special operand against an ordinary one
UNLISTED = "2.11"  # its runs agree there


def stitch_graph(path: Path, dtype: int = DT_INT32, op: str = "DynamicStitch") -> Artifact:
    """A frozen GraphDef feeding DynamicStitch indices and data through placeholders."""
    g = pb.GraphDef()
    g.versions.producer = 1205
    indices = g.node.add(name="indices", op="Placeholder")
    indices.attr["dtype"].type = DT_INT32
    data = g.node.add(name="data", op="Placeholder")
    data.attr["dtype"].type = dtype
    stitch = g.node.add(name="stitch", op=op, input=["indices", "data"])
    stitch.attr["N"].i = 1
    stitch.attr["T"].type = dtype
    path.write_bytes(g.SerializeToString())
    (artifact,) = read_path(str(path))
    return artifact


@pytest.fixture
def stitch(tmp_path: Path) -> Artifact:
    return stitch_graph(tmp_path / "stitch.pb")


def _found(artifact: Artifact, release: str, policy: Policy | None = None) -> list[Any]:
    catalog = load_catalog()
    verdict = check_artifact(artifact, catalog.consumer(release), catalog, policy)
    return [verdict, [f for f in verdict.findings if f.code == Code.KERNEL_NONDETERMINISTIC]]


# the shipped table, on a GraphDef holding DynamicStitch int32
def test_a_listed_release_is_told_with_the_class_and_both_runs(stitch: Artifact) -> None:
    verdict, (found,) = _found(stitch, LISTED)
    assert (found.severity, found.op) == (Severity.INFO, "DynamicStitch")
    assert verdict.status == Status.COMPATIBLE  # not at-risk: no held-out model showed it
    assert "a request may get another answer" in found.message
    assert "DynamicStitch (int32, node stitch)" in found.message
    assert "on the ordinary inputs" in found.message and "on its second" in found.message
    assert "--ops DynamicStitch" in found.message


def test_an_unlisted_release_gets_no_finding(stitch: Artifact) -> None:
    verdict, found = _found(stitch, UNLISTED)
    assert found == [] and verdict.status == Status.COMPATIBLE


def test_strict_leaves_it_information(stitch: Artifact) -> None:
    strict = Policy(same_answer_strict=True)
    verdict, (found,) = _found(stitch, LISTED, strict)
    assert found.severity == Severity.INFO and "same_answer: strict" not in found.message
    assert verdict.status == Status.COMPATIBLE and verdict.serves is True
    assert _found(stitch, UNLISTED, strict)[0].status == Status.COMPATIBLE


def test_the_verdict_class_tells_a_listed_release_from_an_unlisted_one(
    stitch: Artifact,
) -> None:
    catalog = load_catalog()
    base = catalog.consumer(LISTED)
    ops = dict(base.registry.ops) if base.registry else {}

    def of(release: str) -> object:  # each release its own registry, as the catalog's are
        registry = Registry(dict(ops), f"test {release}")
        return verdict_class(stitch, replace(base, tensorflow=release, registry=registry), catalog)

    assert of("2.12.1") != of("2.11.0")
    assert of("2.10.1") != of("2.11.0")  # information only, still another verdict
    assert of("2.11.0") == of("2.8.4")  # neither listed: one class


# severity per input class
def test_one_met_only_on_extreme_inputs_is_information_under_strict_too(
    stitch: Artifact,
) -> None:
    verdict, (found,) = _found(stitch, ON_EXTREMES, Policy(same_answer_strict=True))
    assert found.severity == Severity.INFO and "only on extreme or special" in found.message
    assert "mixed_swapped" in found.message and verdict.status == Status.COMPATIBLE


class UnsteadyInOutput3:
    """DynamicStitch's runs disagree in 2.12 in outputs 3 and 4 alone, as a batch norm's
    reserve spaces do (FusedBatchNormV3 half in 2.9 to 2.15)."""

    def __getattr__(self, name: str) -> object:
        return getattr(NO_HISTORY, name)

    def kernel_changed_ops(self) -> frozenset[str]:  # the ops measured nondeterministic
        return frozenset({"DynamicStitch"})

    def kernel_dtypes(self, op: str, attrs: Mapping[str, Any]) -> list[str]:
        found = attrs.get("T", {}).get("type")
        return [found] if found else []

    def kernel_nondeterminism(
        self, op: str, dtype: str, release: str
    ) -> KernelNondeterminism | None:
        if op != "DynamicStitch" or not release.startswith("2.12."):
            return None
        return KernelNondeterminism(op, dtype, "2.12.1", "evidence", outputs=(3, 4))


def test_a_node_whose_read_outputs_never_disagree_gets_no_finding(tmp_path: Path) -> None:
    g = pb.GraphDef()
    for name in ("indices", "data"):
        node = g.node.add(name=name, op="Placeholder")
        node.attr["dtype"].type = DT_INT32
    stitch = g.node.add(name="stitch", op="DynamicStitch", input=["indices", "data"])
    stitch.attr["N"].i = 1
    stitch.attr["T"].type = DT_INT32
    g.node.add(name="out", op="Identity", input=["stitch:0"]).attr["T"].type = DT_INT32
    (tmp_path / "read.pb").write_bytes(g.SerializeToString())
    (artifact,) = read_path(str(tmp_path / "read.pb"))
    history = UnsteadyInOutput3()
    read_0 = check_artifact(artifact, load_catalog().consumer(LISTED), history)  # type: ignore[arg-type]
    assert Code.KERNEL_NONDETERMINISTIC not in {f.code for f in read_0.findings}
    # nothing consumes it: a signature may fetch any output
    alone = check_artifact(
        stitch_graph(tmp_path / "s.pb"), load_catalog().consumer(LISTED), history
    )  # type: ignore[arg-type]
    assert Code.KERNEL_NONDETERMINISTIC in {f.code for f in alone.findings}


# which outputs a function body's node has read: by the OpDef arg its edges name
BN = OpDef(
    "FusedBatchNormV3",
    outputs=tuple(
        ArgDef(n, type_attr="T")
        for n in ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2")
    ),
)


def _body(*edges: Edge, function: str = "f") -> tuple[Graph, NodeKind]:
    bn = NodeKind("FusedBatchNormV3", {"T": {"type": "DT_FLOAT"}}, 5, 1, "bn", function)
    relu = NodeKind("Relu", {"T": {"type": "DT_FLOAT"}}, 1, 1, "relu", function)
    return Graph(None, 2, (bn, relu), edges), bn


def test_a_body_node_read_at_its_y_output_reads_position_0_only() -> None:
    graph, bn = _body(Edge(0, 0, 1, 0, output_arg="y"))
    assert _body_reads(graph, bn, BN) == frozenset({0})
    graph, bn = _body(Edge(0, 0, 1, 0, output_arg="y"), Edge(0, 0, 1, 0, "reserve_space_2"))
    assert _body_reads(graph, bn, BN) == frozenset({0, 4})


def test_a_body_node_read_by_no_edge_or_with_a_list_output_counts_every_output() -> None:
    graph, bn = _body()
    assert _body_reads(graph, bn, BN) is None  # a body may return any output
    listed = OpDef("Unpack", outputs=(ArgDef("output", type_attr="T", number_attr="num"),))
    graph, bn = _body(Edge(0, 0, 1, 0, output_arg="output"))
    assert _body_reads(graph, bn, listed) is None
