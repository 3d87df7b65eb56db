"""The kernel sweep's comparison (tools/kernels/compare.py, sweep.py): what counts as the
same answer, rounding, a change or a refusal, on runs shaped as the probe writes them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(TOOLS / "kernels"))
    sys.path.insert(0, str(TOOLS))
    try:
        spec = importlib.util.spec_from_file_location(name, TOOLS / "kernels" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(TOOLS / "kernels"))
        sys.path.remove(str(TOOLS))


compare = _load("compare")
sweep = _load("sweep")


def run(
    values: list[Any], dtype: str = "float32", cls: str = "special", **more: Any
) -> dict[str, Any]:
    output = {"dtype": dtype, "shape": [len(values)], "n": len(values), "values": values}
    output["sha"] = str(hash(tuple(str(v) for v in values)))
    return {"dtype": "DT_FLOAT", "class": cls, "layout": "same", "outputs": [output], **more}


# distance: bitwise, ULPs, or a change
@pytest.mark.parametrize(
    ("newest", "other", "expected"),
    [
        (["1.0", "nan"], ["1.0", "nan"], 0.0),  # bitwise equal
        (["1.0"], ["1.0000001192092896"], 1.0),  # one float32 ULP
        (["0.0"], ["-0.0"], 0.0),  # signed zero: no distance, yet not bitwise equal
        (["nan"], ["3.0"], compare.DIFFERS),  # NaN on one side only
        (["inf"], ["3.4028234663852886e+38"], compare.DIFFERS),  # an infinity on one side
        (["2.0"], ["2.5"], 0.2 * 2.0**23),  # relative to the larger magnitude
    ],
)
def test_distance_counts_ulps_of_the_output_dtype(
    newest: list[str], other: list[str], expected: float
) -> None:
    assert compare.distance(run(newest), run(other))[0] == pytest.approx(expected)


def test_another_shape_or_an_integer_value_is_a_change() -> None:
    assert compare.distance(run(["1.0"]), run(["1.0", "2.0"]))[0] == compare.DIFFERS
    assert compare.distance(run([1], "int32"), run([2], "int32"))[0] == compare.DIFFERS


def test_unbuilt_and_nondeterministic_runs_are_not_compared() -> None:
    built = run(["1.0"])
    assert compare.differences([built], [{**run(["2.0"]), "nondeterministic": True}]) == []
    assert compare.differences([built], [{**built, "build_error": "ValueError"}]) == []
    assert compare.differences([built], [run(["2.0"])])


def _answers(**by_release: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    classes = {"DT_FLOAT": {"special": [1.0]}}
    return {
        release[1:].replace("_", "."): {
            "Op": {"op": "Op", "type_attr": "T", "runs": runs},
            "__classes__": {"classes": classes},
        }
        for release, runs in by_release.items()
    }


# the table: changes beyond the tolerance, rounding within it, refusals apart
def test_the_table_keeps_rounding_apart_from_a_change() -> None:
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["1.0000001192092896"])],
            v1_1_0=[run(["2.0"])],
            v1_2_0=[run(["1.0"])],
        ),
        tolerance=4.0,
    )
    (pair,) = table["ops"]["Op"]["dtypes"].values()
    verdicts = {g["releases"][0]: g["verdict"] for g in pair["changes"]}
    assert verdicts == {"1.0.0": "rounding", "1.1.0": "differs"}
    assert table["pairs_differ"] == 1 and table["newest"] == "1.2.0"
    distribution = dict(table["tolerance"]["distribution"])
    assert sum(distribution.values()) == 2 and distribution["<= 1"] == 1


def test_a_release_that_raises_where_the_newest_answers_is_a_refusal() -> None:
    raised = {
        "dtype": "DT_FLOAT",
        "class": "special",
        "layout": "same",
        "error": "InvalidArgumentError",
    }
    table = sweep.build_table(_answers(v1_0_0=[raised], v1_1_0=[run(["1.0"])]), tolerance=4.0)
    (pair,) = table["ops"]["Op"]["dtypes"].values()
    assert [g["verdict"] for g in pair["changes"]] == ["raises"]
    assert table["pairs_differ"] == 0 and table["tolerance"]["distribution"] == []


# severity per input class: what a served model meets, or only the extremes
def test_a_change_on_extreme_classes_only_is_met_on_extremes_with_every_class() -> None:
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["1.0"], cls="ordinary"), run(["3.0"]), run(["nan"], cls="empty")],
            v1_1_0=[run(["1.0"], cls="ordinary"), run(["nan"]), run(["1.0"], cls="empty")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert group["verdict"] == "differs" and group["met_on"] == "extremes"
    assert group["classes"] == ["empty", "special"]
    assert table["pairs_differ_on_extremes_only"] == 1


def test_an_ordinary_class_beyond_rounding_makes_it_ordinary_and_is_the_evidence() -> None:
    table = sweep.build_table(
        _answers(
            # ordinary differs by 10 ULPs, special by NaN against a number (the worst)
            v1_0_0=[run(["1.0000011920928955"], cls="ordinary"), run(["3.0"])],
            v1_1_0=[run(["1.0"], cls="ordinary"), run(["nan"])],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert group["met_on"] == "ordinary" and group["class"] == "ordinary"
    assert group["classes"] == ["ordinary", "special"]
    assert table["pairs_differ_on_extremes_only"] == 0


def test_ordinary_within_rounding_and_special_beyond_is_extremes() -> None:
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["1.0000001192092896"], cls="ordinary"), run(["3.0"], cls="large")],
            v1_1_0=[run(["1.0"], cls="ordinary"), run(["inf"], cls="large")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert (group["met_on"], group["classes"]) == ("extremes", ["large"])


def test_a_refusal_on_one_class_does_not_hide_a_change_on_another() -> None:
    raised = {"dtype": "DT_FLOAT", "class": "empty", "layout": "same", "error": "E"}
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["2.0"], cls="ordinary"), raised],
            v1_1_0=[run(["1.0"], cls="ordinary"), run(["1.0"], cls="empty")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert (group["verdict"], group["met_on"]) == ("differs", "ordinary")


def test_a_refresh_replaces_the_remeasured_ops_and_marks_missing_releases_absent() -> None:
    old = sweep.build_table(
        _answers(v1_0_0=[run(["2.0"])], v1_1_0=[run(["1.0"])], v1_2_0=[run(["1.0"])]),
        tolerance=4.0,
    )
    assert "met_on" in old["ops"]["Op"]["dtypes"]["DT_FLOAT"]["changes"][0]
    for group in old["ops"]["Op"]["dtypes"]["DT_FLOAT"]["changes"]:
        group.pop("met_on")  # a table written before the severity per class
    new = sweep.build_table(
        _answers(v1_0_0=[run(["2.0"], cls="ordinary")], v1_2_0=[run(["1.0"], cls="ordinary")]),
        tolerance=4.0,
    )
    merged = sweep.merge_refresh(old, new, ["Op", "Gone"])
    pair = merged["ops"]["Op"]["dtypes"]["DT_FLOAT"]
    assert pair["changes"][0]["met_on"] == "ordinary" and pair["absent_in"] == ["1.1.0"]
    assert merged["releases"] == old["releases"] and merged["remeasured"]["ops"] == ["Op"]
    assert merged["pairs_differ"] == 1 and merged["tolerance"] == old["tolerance"]


def test_an_output_of_unwritten_memory_is_left_out_of_the_comparison() -> None:
    # output 0 takes a new value in every release: memory nothing wrote, not a change
    by_release = {
        f"v1_{n}_0": [run([f"{n}.5"], cls="ordinary"), run([f"{n}.25"], cls="halves")]
        for n in range(6)
    }
    table = sweep.build_table(_answers(**by_release), tolerance=4.0)
    entry = table["ops"]["Op"]
    assert entry["unstable_outputs"] == [
        "DT_FLOAT halves same output 0",
        "DT_FLOAT ordinary same output 0",
    ]
    assert table["pairs_differ"] == 0


# nondeterminism: a release whose own two runs disagree is not compared
def test_a_release_whose_own_runs_disagree_is_nondeterministic_not_a_change() -> None:
    unwritten = {**run(["3.1e-27"], cls="ordinary"), "nondeterministic": True}
    table = sweep.build_table(
        _answers(
            # 1.0.0 kept the same garbage twice on one node and not on the other
            v1_0_0=[unwritten, run(["-6656.0"], cls="halves")],
            v1_1_0=[run(["0.0"], cls="ordinary"), run(["0.0"], cls="halves")],
        ),
        tolerance=4.0,
    )
    pair = table["ops"]["Op"]["dtypes"]["DT_FLOAT"]
    assert pair["nondeterministic_in"] == ["1.0.0"] and "changes" not in pair
    assert table["pairs_differ"] == 0


def test_a_release_whose_own_runs_disagree_keeps_the_class_and_both_answers() -> None:
    second = {"outputs": [{"dtype": "float32", "shape": [1], "values": ["0.0"], "n": 1}]}
    unwritten = {**run(["3.1e-27"], cls="ordinary"), "nondeterministic": True, "second": second}
    special = {**run(["nan"], cls="special"), "nondeterministic": True}
    table = sweep.build_table(
        _answers(
            v1_0_0=[unwritten, special, run(["-6656.0"], cls="halves")],
            v1_1_0=[run(["0.0"], cls="ordinary"), run(["nan"]), run(["0.0"], cls="halves")],
        ),
        tolerance=4.0,
    )
    (group,) = table["ops"]["Op"]["dtypes"]["DT_FLOAT"]["nondeterministic"]
    assert group["releases"] == ["1.0.0"] and group["classes"] == ["ordinary", "special"]
    assert (group["met_on"], group["class"], group["nodes"]) == ("ordinary", "ordinary", 2)
    assert group["first"]["outputs"][0]["values"] == ["3.1e-27"]
    assert group["second"]["outputs"][0]["values"] == ["0.0"]


def test_a_release_unsteady_on_special_inputs_alone_is_met_on_extremes() -> None:
    special = {**run(["nan"], cls="special"), "nondeterministic": True}
    table = sweep.build_table(
        _answers(v1_0_0=[special, run(["1.0"], cls="ordinary")], v1_1_0=[run(["nan"])]),
        tolerance=4.0,
    )
    (group,) = table["ops"]["Op"]["dtypes"]["DT_FLOAT"]["nondeterministic"]
    assert (group["met_on"], group["classes"], group["second"]) == ("extremes", ["special"], None)


def test_a_deterministic_release_is_still_compared() -> None:
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["2.0"], cls="ordinary")],
            v1_1_0=[run(["1.0"], cls="ordinary")],
        ),
        tolerance=4.0,
    )
    pair = table["ops"]["Op"]["dtypes"]["DT_FLOAT"]
    assert "nondeterministic_in" not in pair and pair["changes"][0]["met_on"] == "ordinary"


# a change of which non-finite value a pole gives: met on extremes, whatever the class
@pytest.mark.parametrize(
    ("newest", "other", "finite"),
    [
        (["nan", "1.5"], ["inf", "1.5"], False),  # a pole: NaN against an infinity
        (["-inf"], ["inf"], False),  # both infinite
        (["nan", "1.5"], ["inf", "2.5"], True),  # and a number changed beside it
        (["nan"], ["1.0"], True),  # NaN against a number
        (["1.0"], ["1.0000001192092896"], False),  # within the tolerance: no change at all
    ],
)
def test_a_finite_change_has_a_number_on_one_side(
    newest: list[str], other: list[str], finite: bool
) -> None:
    assert compare.finite_change(run(newest), run(other), 4.0) is finite


def test_an_integer_or_a_shape_change_is_finite() -> None:
    assert compare.finite_change(run([1], "int32"), run([2], "int32"), 4.0)
    assert compare.finite_change(run(["1.0"]), run(["1.0", "2.0"]), 4.0)


def test_nan_against_an_infinity_on_an_ordinary_class_is_met_on_extremes() -> None:
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["inf", "1.5"], cls="indices"), run(["1.0"], cls="ordinary")],
            v1_1_0=[run(["nan", "1.5"], cls="indices"), run(["1.0"], cls="ordinary")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert (group["met_on"], group["classes"]) == ("extremes", ["indices"])
    assert group["poles"] == ["indices"]


def test_nan_against_a_number_on_integer_inputs_is_met_on_extremes() -> None:
    # SqrtGrad at 0 (NaN in 1.13, 0 in 2.21), BesselI0 at 100 (a number, then inf)
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["0.0", "inf", "1.5"], cls="indices"), run(["1.0"], cls="ordinary")],
            v1_1_0=[run(["nan", "9e36", "1.5"], cls="indices"), run(["1.0"], cls="ordinary")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert (group["met_on"], group["poles"]) == ("extremes", ["indices"])


def test_two_numbers_apart_on_integer_inputs_stay_ordinary() -> None:
    # Igamma at 100: two numbers 55 ULPs apart, beside a NaN against a number
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["0.5132983", "0.0"], cls="indices"), run(["1.0"], cls="ordinary")],
            v1_1_0=[run(["0.5133017", "nan"], cls="indices"), run(["1.0"], cls="ordinary")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert group["met_on"] == "ordinary" and "poles" not in group


def test_a_binary_op_on_two_different_ordinary_operands_is_met_on_ordinary() -> None:
    # TruncateDiv float: x against x gives 1 everywhere; 0.651 / -1.094 does not truncate
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["1.0"], cls="ordinary"), run(["-0.595"], cls="ordinary_pair")],
            v1_1_0=[run(["1.0"], cls="ordinary"), run(["-0.0"], cls="ordinary_pair")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert (group["met_on"], group["classes"]) == ("ordinary", ["ordinary_pair"])


def test_ops_remeasured_by_name_keep_the_last_refresh_record() -> None:
    old = sweep.build_table(_answers(v1_0_0=[run(["2.0"])], v1_1_0=[run(["1.0"])]), 4.0)
    old["remeasured"] = {"ops": ["Other"]}
    new = sweep.build_table(_answers(v1_0_0=[run(["1.0"])], v1_1_0=[run(["1.0"])]), 4.0)
    merged = sweep.merge_refresh(old, new, ["Op"], named=True)
    assert merged["remeasured"] == {"ops": ["Other"]}
    assert merged["remeasured_named"][-1]["ops"] == ["Op"] and merged["pairs_differ"] == 0


def test_nan_against_an_infinity_on_real_ordinary_values_stays_ordinary() -> None:
    # Erfinv beyond 1: a region outside the domain that ordinary values reach
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(["inf", "0.5"], cls="ordinary")],
            v1_1_0=[run(["nan", "0.5"], cls="ordinary")],
        ),
        tolerance=4.0,
    )
    ((group,),) = [p["changes"] for p in table["ops"]["Op"]["dtypes"].values()]
    assert group["met_on"] == "ordinary" and "poles" not in group


# the scale of a ULP: the element's own, or the output's for an op combining elements
def test_an_op_combining_elements_is_measured_at_the_outputs_scale() -> None:
    # LogSoftmax bfloat16 in 1.14: -0.0383 against -0.0459 beside -5.09 (21 ULPs of the
    # element, 0.19 of the output's largest magnitude)
    newest = run(["-3.359375", "-0.0458984375", "-5.09375"], "bfloat16", cls="ordinary")
    other = run(["-3.359375", "-0.038330078125", "-5.09375"], "bfloat16", cls="ordinary")
    assert compare.distance(newest, other)[0] == pytest.approx(21.106, abs=1e-3)
    assert compare.distance(newest, other, scaled=True)[0] == pytest.approx(0.19, abs=1e-3)
    assert compare.finite_change(newest, other, 4.0)
    assert not compare.finite_change(newest, other, 4.0, scaled=True)
    assert compare.outputs_beyond(newest, other, 4.0, scaled=True) == []
    # NaN or an infinity on one side stays a change at any scale
    assert compare.distance(newest, run(["nan", "-0.04", "-5.0"]), scaled=True)[0] == (
        compare.DIFFERS
    )


def _scalar(shape: list[int] | None) -> dict[str, Any]:
    """The newest's node of the rank-0 `scalar` class: answered with `shape`, or refused."""
    if shape is None:
        return {"dtype": "DT_FLOAT", "class": "scalar", "layout": "same", "build_error": "E"}
    return {
        **run(["0.5"], cls="scalar"),
        "outputs": [{**run(["0.5"])["outputs"][0], "shape": shape}],
    }


@pytest.mark.parametrize(
    ("scalar", "combines"),
    [
        (_scalar([]), False),  # a cwise op: a scalar in, a scalar out
        (_scalar(None), True),  # needs an axis or a matrix (Softmax, Qr)
        (_scalar([1]), True),  # answered with another shape
        (None, False),  # nothing measured to tell: per element
    ],
)
def test_the_scalar_class_tells_whether_an_op_combines_elements(
    scalar: dict[str, Any] | None, combines: bool
) -> None:
    runs = [run(["1.0"], cls="ordinary"), *([scalar] if scalar else [])]
    assert compare.combines_elements(runs) is combines


def test_an_op_only_the_structured_builders_run_combines_elements() -> None:
    structured = {**run(["1.0"], cls="ordinary"), "layout": "s:inference"}
    assert compare.combines_elements([structured])
    # the generic probe's nodes refused by the shape function (a batch norm on 2-D)
    refused = {"dtype": "DT_FLOAT", "class": "ordinary", "layout": "same", "build_error": "E"}
    assert compare.combines_elements([refused, _scalar(None), structured])
    assert not compare.combines_elements([refused])


def test_a_cancelled_element_of_a_combining_op_is_rounding_and_says_its_scale() -> None:
    refused = _scalar(None)
    wide = ["-3.359375", "-0.0458984375", "-5.09375"]
    near = ["-3.359375", "-0.038330078125", "-5.09375"]
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(near, "bfloat16", cls="ordinary"), refused],
            v1_1_0=[run(wide, "bfloat16", cls="ordinary"), refused],
        ),
        tolerance=4.0,
    )
    (pair,) = table["ops"]["Op"]["dtypes"].values()
    assert pair["scale"] == "output"
    assert [g["verdict"] for g in pair["changes"]] == ["rounding"]
    # the same values from a cwise op (a scalar answered as a scalar): a change
    table = sweep.build_table(
        _answers(
            v1_0_0=[run(near, "bfloat16", cls="ordinary"), _scalar([])],
            v1_1_0=[run(wide, "bfloat16", cls="ordinary"), _scalar([])],
        ),
        tolerance=4.0,
    )
    (pair,) = table["ops"]["Op"]["dtypes"].values()
    assert "scale" not in pair
    assert [(g["verdict"], g["met_on"]) for g in pair["changes"]] == [("differs", "ordinary")]
