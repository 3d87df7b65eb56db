"""Node validation and edge types against synthetic OpDefs, table-driven.

Each OpDef here is a small, real-shaped OpDef (the shapes TensorFlow uses for
TopKV2, Cast, ConcatV2, Xlogy), so every rule is exercised with one change at
a time.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from worker.compat.check import check_artifact
from worker.compat.subject import NO_HISTORY
from worker.model.artifact import (
    ArgDef,
    Artifact,
    AttrDef,
    Edge,
    Graph,
    MetaGraph,
    NodeKind,
    OpDef,
    VersionDef,
)
from worker.model.consumer import Consumer, Loader, Registry
from worker.model.effects import AttrEffect, Effect
from worker.model.findings import Code, Finding, FixKind, Severity

T = {"type": "DT_FLOAT"}
TOPK = OpDef(
    "TopKV2",
    inputs=(ArgDef("input", type_attr="T"), ArgDef("k", type="DT_INT32")),
    outputs=(ArgDef("values", type_attr="T"), ArgDef("indices", type="DT_INT32")),
    attrs=(AttrDef("sorted", "bool", {"b": True}), AttrDef("T", "type")),
)
TOPK_NEW = replace(
    TOPK,
    outputs=(ArgDef("values", type_attr="T"), ArgDef("indices", type_attr="index_type")),
    attrs=(
        *TOPK.attrs,
        AttrDef(
            "index_type", "type", {"type": "DT_INT32"}, {"list": {"type": ["DT_INT32", "DT_INT64"]}}
        ),
    ),
)
CAST = OpDef(
    "Cast",
    inputs=(ArgDef("x", type_attr="SrcT"),),
    outputs=(ArgDef("y", type_attr="DstT"),),
    attrs=(
        AttrDef("SrcT", "type"),
        AttrDef("DstT", "type"),
        AttrDef("Truncate", "bool", {"b": False}),
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
CONCAT = OpDef(
    "ConcatV2",
    inputs=(ArgDef("values", type_attr="T", number_attr="N"), ArgDef("axis", type_attr="Tidx")),
    outputs=(ArgDef("output", type_attr="T"),),
    attrs=(
        AttrDef("N", "int", has_minimum=True, minimum=2),
        AttrDef("T", "type"),
        AttrDef("Tidx", "type", {"type": "DT_INT32"}),
    ),
)
XLOGY = OpDef(
    "Xlogy",
    inputs=(ArgDef("x", type_attr="T"), ArgDef("y", type_attr="T")),
    outputs=(ArgDef("z", type_attr="T"),),
    attrs=(AttrDef("T", "type", None, {"list": {"type": ["DT_HALF", "DT_FLOAT", "DT_DOUBLE"]}}),),
)
OLD = {op.name: op for op in (TOPK, CAST, PLACEHOLDER, CONST, CONCAT, XLOGY)}
NEW = {**OLD, "TopKV2": TOPK_NEW}


def consumer(
    rejects: bool, loader: Loader = Loader.SAVED_MODEL_V1, ops: dict[str, OpDef] | None = None
) -> Consumer:
    ops = ops or OLD
    every_kernel = {op: {"DEFAULT": ((),)} for op in ops}  # measured: nothing missing
    return Consumer(
        "c",
        "2.x",
        1395,
        registry=Registry(ops, "test", kernels=every_kernel),
        loader=loader,
        rejects_unknown_attrs=rejects,
    )


def saved_model(
    kinds: list[NodeKind],
    edges: list[Edge] = (),  # type: ignore[assignment]
    producer_ops: dict[str, OpDef] | None = None,
    producer: int = 1395,
) -> Artifact:
    graph = Graph(VersionDef(producer), sum(k.count for k in kinds), tuple(kinds), tuple(edges))
    meta = MetaGraph(("serve",), graph, producer_ops=producer_ops or NEW)
    return Artifact("m", "savedmodel", 0, "", meta_graphs=(meta,))


def kind(op: str, attrs: dict[str, object], inputs: int = 0, name: str = "n") -> NodeKind:
    return NodeKind(op, attrs, inputs, 1, name)  # type: ignore[arg-type]


def codes(artifact: Artifact, c: Consumer) -> tuple[bool, list[Code]]:
    verdict = check_artifact(artifact, c)
    return verdict.loads, sorted(f.code for f in verdict.findings)


TOPK_GRAPH = [
    kind("Placeholder", {"dtype": T}, name="x"),
    kind("Const", {"dtype": {"type": "DT_INT32"}, "value": {"tensor": {}}}, name="k"),
]

CASES = [
    # unknown attr at the producer's default: the SavedModel loader drops it before validation
    (
        "default dropped, rejecting release",
        {"index_type": {"type": "DT_INT32"}},
        Loader.SAVED_MODEL_V1,
        True,
        (True, [Code.ATTR_DEFAULT_DROPPED]),
    ),
    # ... a bare graph import does not drop it: an old release rejects the node
    (
        "default kept by graph import, rejecting release",
        {"index_type": {"type": "DT_INT32"}},
        Loader.GRAPH_IMPORT,
        True,
        (False, [Code.ATTR_UNKNOWN]),
    ),
    # ... a release that ignores unknown attrs loads it either way, silently
    (
        "default ignored",
        {"index_type": {"type": "DT_INT32"}},
        Loader.GRAPH_IMPORT,
        False,
        (True, []),
    ),
    # non-default value: rejected by old releases, ignored with a warning by newer ones
    (
        "non-default rejected",
        {"index_type": {"type": "DT_INT64"}},
        Loader.SAVED_MODEL_V1,
        True,
        (False, [Code.ATTR_UNKNOWN]),
    ),
    (
        "non-default ignored",
        {"index_type": {"type": "DT_INT64"}},
        Loader.SAVED_MODEL_V1,
        False,
        (True, [Code.ATTR_UNVERIFIED]),
    ),
]


@pytest.mark.parametrize(
    ("label", "extra", "loader", "rejects", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_unknown_attr_handling(
    label: str,
    extra: dict[str, object],
    loader: Loader,
    rejects: bool,
    expected: tuple[bool, list[Code]],
) -> None:
    topk = kind("TopKV2", {"T": T, **extra}, inputs=2, name="topk")
    artifact = saved_model([*TOPK_GRAPH, topk], [Edge(0, 0, 2, 0), Edge(1, 0, 2, 1)])
    assert codes(artifact, consumer(rejects, loader)) == expected


def test_ignored_attr_that_changes_a_type_fails_on_the_edge() -> None:
    # TopKV2 index_type=int64 feeding Cast(SrcT=int64): the old OpDef makes indices int32.
    topk = kind("TopKV2", {"T": T, "index_type": {"type": "DT_INT64"}}, inputs=2, name="topk")
    cast = kind("Cast", {"SrcT": {"type": "DT_INT64"}, "DstT": T}, inputs=1, name="Cast")
    artifact = saved_model(
        [*TOPK_GRAPH, topk, cast], [Edge(0, 0, 2, 0), Edge(1, 0, 2, 1), Edge(2, 1, 3, 0)]
    )
    loads, found = codes(artifact, consumer(rejects=False))
    assert not loads
    assert Code.EDGE_TYPE in found
    message = next(
        f.message
        for f in check_artifact(artifact, consumer(False)).findings
        if f.code == Code.EDGE_TYPE
    )
    assert (
        "Input 0 of node Cast was passed int32 from topk:1 incompatible with expected int64"
        in message
    )
    # The consumer that knows index_type loads it.
    assert codes(artifact, consumer(False, ops=NEW)) == (True, [])


NODE_CASES = [
    # a dtype outside allowed_values (dtypes are added to ops release by release)
    (kind("Xlogy", {"T": {"type": "DT_BFLOAT16"}}, inputs=2), [Code.ATTR_NOT_ALLOWED]),
    (kind("Xlogy", {"T": {"type": "DT_FLOAT"}}, inputs=2), []),
    # a required attr (no default in the consumer's OpDef) is missing
    (kind("Xlogy", {}, inputs=2), [Code.ATTR_MISSING]),
    # an attr of the wrong kind
    (kind("Xlogy", {"T": {"i": 3}}, inputs=2), [Code.ATTR_TYPE]),
    # an int below its minimum
    (kind("ConcatV2", {"N": {"i": 1}, "T": T}, inputs=2), [Code.ATTR_BELOW_MINIMUM]),
    # inputs counted the way TensorFlow counts them: N values plus the axis
    (kind("ConcatV2", {"N": {"i": 3}, "T": T}, inputs=4), []),
    (kind("ConcatV2", {"N": {"i": 3}, "T": T}, inputs=3), [Code.INPUTS_MISMATCH]),
    # internal attrs ("_class", "_output_shapes") never count; readers drop them
    (kind("Xlogy", {"T": T}, inputs=1), [Code.INPUTS_MISMATCH]),
]


@pytest.mark.parametrize(("node", "expected"), NODE_CASES)
def test_node_validation(node: NodeKind, expected: list[Code]) -> None:
    loads, found = codes(saved_model([node]), consumer(rejects=True))
    assert found == expected
    assert loads == (not expected)


def test_an_op_no_release_registers_is_custom_and_reported_once() -> None:
    artifact = saved_model([kind("NewOp", {}, name="a"), kind("NewOp", {"x": {"i": 1}}, name="b")])
    verdict = check_artifact(artifact, consumer(rejects=False))
    assert not verdict.loads
    assert [f.code for f in verdict.findings] == [Code.OP_CUSTOM]


def test_deprecated_op_fails_when_the_producer_is_at_or_past_the_deprecation() -> None:
    deprecated = replace(XLOGY, deprecation_version=1000, deprecation_explanation="Use Y.")
    ops = {**OLD, "Xlogy": deprecated}
    node = kind("Xlogy", {"T": T}, inputs=2)
    before = saved_model([node], producer=999)
    at = saved_model([node], producer=1000)
    assert codes(before, consumer(True, ops=ops)) == (True, [])
    loads, found = codes(at, consumer(True, ops=ops))
    assert (loads, found) == (False, [Code.OP_DEPRECATED])


CALL_OP = OpDef("StatefulPartitionedCall", attrs=(AttrDef("f", "func"),))
CALL_F = NodeKind("StatefulPartitionedCall", {"f": {"func": {"name": "f", "attr": {}}}}, 0, 1, "c")


def test_ops_inside_a_called_function_count_for_every_loader() -> None:
    node = NodeKind("NewOp", {}, 0, 1, "inner", function="f")
    graph = Graph(VersionDef(1395), 0, (CALL_F, node), (), functions=("f",), library_node_count=1)
    artifact = Artifact(
        "m", "savedmodel", 0, "", meta_graphs=(MetaGraph(("serve",), graph, has_object_graph=True),)
    )
    ops = {**OLD, "StatefulPartitionedCall": CALL_OP}
    for loader in Loader:
        assert not check_artifact(artifact, consumer(False, loader, ops)).loads


def test_tf2_saved_model_load_ignores_the_version_def() -> None:
    graph = Graph(VersionDef(2474, min_consumer=2000), 0, (), ())
    meta = MetaGraph(("serve",), graph, has_object_graph=True)
    artifact = Artifact("m", "savedmodel", 0, "", meta_graphs=(meta,))
    assert check_artifact(artifact, consumer(False, Loader.SAVED_MODEL_V2)).loads
    assert not check_artifact(artifact, consumer(False, Loader.SAVED_MODEL_V1)).loads


def test_function_body_attrs_fail_at_first_call_except_for_saved_model_load() -> None:
    # TopKV2 index_type inside a function, unknown to a release that rejects unknown attrs.
    node = NodeKind("TopKV2", {"T": T, "index_type": {"type": "DT_INT32"}}, 2, 1, "k", function="f")
    graph = Graph(VersionDef(1395), 0, (CALL_F, node), (), functions=("f",), library_node_count=1)
    meta = MetaGraph(("serve",), graph, producer_ops=NEW)
    artifact = Artifact("m", "savedmodel", 0, "", meta_graphs=(meta,))
    ops = {**OLD, "StatefulPartitionedCall": CALL_OP}
    for loader in (Loader.SAVED_MODEL_V1, Loader.GRAPH_IMPORT):
        verdict = check_artifact(artifact, consumer(True, loader, ops))
        (finding,) = verdict.findings
        assert finding.code == Code.ATTR_UNKNOWN  # even at its default
        assert (verdict.loads, verdict.serves) == (True, False)  # the request runs f
        assert "every request that runs f fails" in finding.message
    assert not check_artifact(artifact, consumer(True, Loader.SAVED_MODEL_V2, ops)).loads


class Measured:
    """A history whose attr table says one thing about TopKV2 index_type."""

    def __init__(self, effect: AttrEffect | None) -> None:
        self.effect = effect

    def __getattr__(self, name: str) -> object:
        return getattr(NO_HISTORY, name)

    def attr_effect(self, op: str, attr: str) -> AttrEffect | None:
        return self.effect if (op, attr) == ("TopKV2", "index_type") else None


def measured(effect: Effect) -> AttrEffect:
    return AttrEffect(
        "TopKV2",
        "index_type",
        effect,
        how="run at both values on 1 input set",
        measured_in="2.21.0",
        evidence="with index_type=DT_INT64 the op gave int64 indices; with the default, int32"
        if effect == Effect.CHANGES_RESULTS
        else "",
    )


def ignored_finding(effect: AttrEffect | None, rejects: bool = False) -> Finding:
    topk = kind("TopKV2", {"T": T, "index_type": {"type": "DT_INT64"}}, inputs=2, name="topk")
    artifact = saved_model([*TOPK_GRAPH, topk], [Edge(0, 0, 2, 0), Edge(1, 0, 2, 1)])
    verdict = check_artifact(artifact, consumer(rejects), Measured(effect))  # type: ignore[arg-type]
    (found,) = [f for f in verdict.findings if f.attr == "index_type"]
    return found


# an ignored non-default attr: its measured class decides the severity
EFFECTS = [
    (Effect.CHANGES_RESULTS, Code.ATTR_IGNORED, Severity.WARNING, "the results differ"),
    (Effect.UNVERIFIED, Code.ATTR_UNVERIFIED, Severity.WARNING, "not verified"),
    (None, Code.ATTR_UNVERIFIED, Severity.WARNING, "not in the measured table"),
    (
        Effect.NO_EFFECT,
        Code.ATTR_IGNORED,
        Severity.INFO,
        "Measured (tools/attrs/measure.py in TensorFlow 2.21.0)",
    ),
]


@pytest.mark.parametrize(("effect", "code", "severity", "said"), EFFECTS)
def test_an_ignored_attr_is_judged_by_its_measured_effect(
    effect: Effect | None, code: Code, severity: Severity, said: str
) -> None:
    found = ignored_finding(measured(effect) if effect else None)
    assert (found.code, found.severity) == (code, severity)
    assert said in found.message


def test_a_changing_attr_quotes_the_measured_difference_and_says_how_to_keep_it() -> None:
    found = ignored_finding(measured(Effect.CHANGES_RESULTS))
    assert "int64 indices" in found.message
    assert found.fix is not None and found.fix.kind == FixKind.UPGRADE_TO


def test_no_message_calls_an_unmeasured_attr_harmless() -> None:
    for effect in (None, measured(Effect.UNVERIFIED), measured(Effect.CHANGES_RESULTS)):
        message = ignored_finding(effect).message
        assert "does not change" not in message and "no effect" not in message


# a rejecting release: only an attr measured to change nothing may simply be dropped
DROPS = [
    (Effect.NO_EFFECT, FixKind.DROP_ATTR),
    (Effect.CHANGES_RESULTS, FixKind.UPGRADE_TO),
    (Effect.UNVERIFIED, FixKind.UPGRADE_TO),
]


@pytest.mark.parametrize(("effect", "fix"), DROPS)
def test_a_rejected_attr_is_offered_as_a_drop_only_when_measured_harmless(
    effect: Effect, fix: FixKind
) -> None:
    found = ignored_finding(measured(effect), rejects=True)
    assert found.code == Code.ATTR_UNKNOWN
    assert found.fix is not None and found.fix.kind == fix


def test_an_attr_that_only_adds_a_refusal_is_information_with_its_evidence() -> None:
    # AssignVariableOp validate_shape=true: the op refuses a reshaping assignment the
    # default accepts; a release ignoring it answers wherever the producer answers.
    stricter = replace(measured(Effect.CHANGES_RESULTS), refuses_only=True)
    found = ignored_finding(stricter)
    assert (found.code, found.severity) == (Code.ATTR_IGNORED, Severity.INFO)
    assert "refuse inputs the default accepts" in found.message and "int64 indices" in found.message
