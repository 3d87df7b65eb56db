"""Which drops a copy gets and what each consumer makes of it, on real TensorFlow files."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.truth import OWN
from worker.catalog.catalog import load_catalog
from worker.fix.plan import NO_EFFECT, Drop, plan_fix, safe_for
from worker.formats.read import read_path
from worker.model.artifact import AttrDef, OpDef
from worker.model.consumer import Loader
from worker.model.findings import Code

A = OWN / "artifacts"

# (artifact, consumer, state, drops that must be in the plan, blocker codes left)
CASES = [
    # 2.15+ SavedModels: VarHandleOp.debug_name (measured: no effect) plus unstripped defaults
    ("tf2.21/savedmodel_v1", "2.4", "fixed", {"VarHandleOp.debug_name", "MatMul.grad_a"}, set()),
    ("tf2.15/savedmodel_v1_stripped", "1.15", "fixed", {"VarHandleOp.debug_name"}, set()),
    # a default-valued new attr inside a function body, where no loader strips it
    (
        "tf2.8/function_attr_default_unstripped",
        "2.4",
        "fixed",
        {"TridiagonalSolve.perturb_singular"},
        set(),
    ),
    # frozen graphs: producer defaults from the catalog release the producer number dates
    ("tf2.21/fixable_frozen/frozen_graph.pb", "2.4", "fixed", {"MatMul.grad_a"}, set()),
    # what no safe rewrite fixes
    ("tf2.21/new_op", "2.15", "unfixable", set(), {Code.OP_NOT_REGISTERED}),
    ("tf2.8/new_attr_nondefault", "2.4", "unfixable", set(), {Code.ATTR_UNKNOWN}),
    ("tf2.15/min_consumer_raised", "2.4", "unfixable", set(), {Code.MIN_CONSUMER}),
    ("tf2.21/savedmodel_v2", "2.4", "unfixable", set(), {Code.OP_NOT_REGISTERED}),
    # nothing to do
    ("tf2.21/savedmodel_v1", "2.21", "serves", set(), set()),
]


@pytest.mark.parametrize(("path", "release", "state", "drops", "blockers"), CASES)
def test_plan_on_real_models(
    path: str, release: str, state: str, drops: set[str], blockers: set[Code]
) -> None:
    catalog = load_catalog()
    (artifact,) = read_path(str(A / path))
    plan = plan_fix(artifact, [catalog.consumer(release)], catalog)
    (fix,) = plan.consumers
    assert fix.state == state, [f.message for f in fix.blockers]
    assert drops <= {f"{d.op}.{d.attr}" for d in plan.drops}
    assert {f.code for f in fix.blockers} >= blockers
    if state == "unfixable":
        assert fix.instead, "an unfixable consumer is told what to do instead"


def test_a_plan_never_drops_a_non_default_value_that_changes_results() -> None:
    # TridiagonalSolve perturb_singular=true: measured to change results (attr table)
    catalog = load_catalog()
    (artifact,) = read_path(str(A / "tf2.8/new_attr_nondefault"))
    plan = plan_fix(artifact, [catalog.consumer("2.4")], catalog)
    assert "TridiagonalSolve.perturb_singular" not in {f"{d.op}.{d.attr}" for d in plan.drops}
    (fix,) = plan.consumers
    assert fix.state == "unfixable"


def test_a_plan_drops_a_non_default_hint_measured_to_change_nothing() -> None:
    # MatMul grad_a=true: a gradient hint, measured to change no results (attr table)
    catalog = load_catalog()
    (artifact,) = read_path(str(A / "tf2.18/new_attr_nondefault"))
    plan = plan_fix(artifact, [catalog.consumer("2.4")], catalog)
    assert "MatMul.grad_a" in {f"{d.op}.{d.attr}" for d in plan.drops}
    assert {d.rule for d in plan.drops if d.attr == "grad_a"} == {NO_EFFECT}


def test_a_plan_never_drops_a_non_default_type_attr_measured_to_change_nothing() -> None:
    # TensorListGetItem Tshape=int64 (2.21): measured to change no results, but it types
    # the element_shape input; a copy without it failed the import in 1.14-2.20 ("Input 2 of
    # node TensorListGetItem was passed int64 ... incompatible with expected int32")
    catalog = load_catalog()
    (artifact,) = read_path(str(A / "tf2.21/new_attr_nondefault"))
    plan = plan_fix(artifact, [catalog.consumer("2.12")], catalog)
    assert "TensorListGetItem.Tshape" not in {f"{d.op}.{d.attr}" for d in plan.drops}
    (fix,) = plan.consumers
    assert fix.state == "unfixable"
    assert {f.code for f in fix.blockers} == {Code.EDGE_TYPE}


def test_a_copy_whose_function_body_node_has_an_input_too_many_is_not_fixed() -> None:
    # 1.13's TensorListGetItem takes 2 inputs; 2.21's body node has 3 (element_shape): the
    # copy dropping Tshape at its default failed every request in 1.13 ("Expected
    # input[2] == 'Const_2:output:0' to be a control input")
    catalog = load_catalog()
    (artifact,) = read_path(str(A / "tf2.21/function_attr_default_unstripped"))
    plan = plan_fix(artifact, [catalog.consumer("1.13")], catalog)
    (fix,) = plan.consumers
    assert fix.state == "unfixable"
    assert Code.INPUTS_MISMATCH in {f.code for f in fix.blockers}


def test_one_copy_serves_several_consumers_and_loaders() -> None:
    catalog = load_catalog()
    (artifact,) = read_path(str(A / "tf2.21/savedmodel_v1"))
    consumers = [
        catalog.consumer("1.15"),
        replace(catalog.consumer("2.4", Loader.GRAPH_IMPORT), name="import"),
        catalog.consumer("2.21"),
    ]
    plan = plan_fix(artifact, consumers, catalog)
    assert [c.state for c in plan.consumers] == ["fixed", "fixed", "serves"]
    assert plan.writable


# safe_for: a drop is kept only if every named binary then means the same
OP = OpDef("MatMul", attrs=(AttrDef("grad_a", "bool", {"b": False}),))
SAFETY = [
    (Drop.producer_default("MatMul", "grad_a", {"b": False}), {"MatMul": OP}, True),
    (Drop.producer_default("MatMul", "grad_a", {"b": True}), {"MatMul": OP}, False),
    (Drop.producer_default("MatMul", "grad_a", {"b": False}), {}, True),
    (Drop("MatMul", "grad_a", NO_EFFECT), {"MatMul": OP}, True),
    (
        Drop("MatMul", "grad_a", NO_EFFECT),
        {"MatMul": OpDef("MatMul", attrs=(AttrDef("grad_a", "bool"),))},
        False,
    ),
]


@pytest.mark.parametrize(("drop", "ops", "safe"), SAFETY)
def test_safe_for(drop: Drop, ops: dict[str, OpDef], safe: bool) -> None:
    assert safe_for(drop, ops) is safe
