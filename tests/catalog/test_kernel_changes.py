"""The measured kernel table: every (op, dtype) compared, each change with its evidence."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from worker.catalog.catalog import DATA, load_catalog
from worker.catalog.kernel_changes import ShippedKernelChanges, hand_met_on

RAW = (DATA / "kernel_changes.json.gz").read_bytes()
DOC = json.loads(gzip.decompress(RAW))
HAND = DOC["hand"]
HAND_CHANGES: list[dict[str, Any]] = [c for c in HAND["changes"] if c["differs_in"]]
SWEEP_CHANGES = [
    (op, dtype, group)
    for op, entry in sorted(DOC["ops"].items())
    for dtype, pair in sorted(entry["dtypes"].items())
    for group in pair.get("changes", [])
    if group["verdict"] == "differs"
]


def test_the_newest_release_is_the_reference_and_every_release_is_catalogued() -> None:
    assert DOC["newest"] == max(DOC["releases"], key=lambda v: [int(p) for p in v.split(".")])
    assert set(DOC["releases"]) <= set(load_catalog().registry_releases())


def test_the_sweep_compared_hundreds_of_ops_and_says_why_it_skipped_the_rest() -> None:
    assert DOC["ops_compared"] >= 400 and DOC["pairs_compared"] >= 1000
    assert all(reason for reason in DOC["unbuildable"].values())
    assert DOC["tolerance"]["ulps"] > 0 and DOC["tolerance"]["distribution"]


@pytest.mark.parametrize("row", HAND_CHANGES, ids=[c["id"] for c in HAND_CHANGES])
def test_a_hand_case_carries_its_input_and_the_first_difference(row: dict[str, Any]) -> None:
    assert row["inputs"] and row["evidence"]["first_difference"]
    assert row["evidence"]["release"] in row["differs_in"]
    assert row["evidence"]["result"] != row["newest_result"]


def test_a_sweep_change_carries_its_input_class_and_both_outputs() -> None:
    assert SWEEP_CHANGES
    for op, dtype, group in SWEEP_CHANGES:
        assert group["class"] in DOC["classes"][dtype], (op, dtype)
        assert group["result"] != group["newest_result"] and group["where"], (op, dtype)
        assert DOC["newest"] not in group["releases"]


def test_a_release_is_matched_by_its_minor_and_the_newest_has_no_change() -> None:
    table = ShippedKernelChanges(RAW)
    row = HAND_CHANGES[0]
    release = row["differs_in"][0]
    minor = ".".join(release.split(".")[:2])
    found = table.change(row["op"], row["dtype"], f"{minor}.0")
    assert found is not None and found.release == release
    assert table.change(row["op"], row["dtype"], DOC["newest"]) is None


def test_a_sweep_change_is_found_with_its_evidence_and_the_command_to_remeasure() -> None:
    table = ShippedKernelChanges(RAW)
    op, dtype, group = next(c for c in SWEEP_CHANGES if (c[0], c[1]) not in table_hand_pairs())
    found = table.change(op, dtype, group["releases"][0])
    assert found is not None and found.measured_by == "tools/kernels/sweep.py"
    assert group["class"] in found.evidence and "ULPs counts as rounding" in found.evidence
    assert f"--ops {op}" in found.remeasure
    assert table.measured(op, dtype)


def table_hand_pairs() -> set[tuple[str, str]]:
    return {(c["op"], c["dtype"]) for c in HAND_CHANGES}


def test_format_1_alone_is_still_read() -> None:
    table = ShippedKernelChanges(json.dumps(HAND).encode())
    row = HAND_CHANGES[0]
    assert table.change(row["op"], row["dtype"], row["differs_in"][0]) is not None
    assert table.newest == HAND["newest"]


def test_an_unknown_format_is_refused_on_first_use() -> None:
    table = ShippedKernelChanges(b'{"format": "tfcompat-kernel-changes/9"}')
    with pytest.raises(ValueError, match="unknown format"):
        table.change("Max", "DT_FLOAT", "2.4.4")


# severity per input class
def _one_change(group: dict[str, Any]) -> bytes:
    doc = {
        "format": "tfcompat-kernel-changes/2",
        "newest": "2.21.0",
        "releases": ["2.0.4", "2.21.0"],
        "classes": {"DT_FLOAT": {"special": [[1.0]], "ordinary": [[1.0]]}},
        "tolerance": {"ulps": 4.0},
        "ops": {
            "Minimum": {
                "type_attr": "T",
                "dtypes": {
                    "DT_FLOAT": {
                        "changes": [
                            {
                                "verdict": "differs",
                                "layout": "same",
                                "releases": ["2.0.4"],
                                "result": {"error": "E"},
                                "newest_result": {"error": "F"},
                                "where": "output 0",
                                "ulps": None,
                                **group,
                            }
                        ]
                    }
                },
            }
        },
    }
    return json.dumps(doc).encode()


def test_a_change_met_on_extremes_only_is_read_as_such_with_its_classes() -> None:
    table = ShippedKernelChanges(
        _one_change({"class": "special", "classes": ["mixed", "special"], "met_on": "extremes"})
    )
    found = table.change("Minimum", "DT_FLOAT", "2.0.4")
    assert found is not None and found.extremes_only
    assert found.classes == ("mixed", "special")


def test_a_change_without_a_severity_counts_as_ordinary() -> None:
    found = ShippedKernelChanges(_one_change({"class": "special"})).change(
        "Minimum", "DT_FLOAT", "2.0.4"
    )
    assert found is not None and not found.extremes_only


def test_hand_cases_are_extremes_only_when_every_difference_is_nan_or_inf_on_a_side() -> None:
    row: dict[str, Any] = {
        "inputs": [{"tensor": {"value": [0.5, float("nan")]}}],
        "evidence": {"result": {"outputs": [{"dtype": "float32", "values": ["1.0", "3.0"]}]}},
        "newest_result": {"outputs": [{"dtype": "float32", "values": ["1.0", "nan"]}]},
    }
    assert hand_met_on(row) == "extremes"
    # a second value apart by far more than 4 ULPs: met on an ordinary input
    row["evidence"]["result"]["outputs"][0]["values"] = ["1.5", "3.0"]
    assert hand_met_on(row) == "ordinary"
    # within 4 ULPs of float32 is rounding
    row["evidence"]["result"]["outputs"][0]["values"] = ["1.0000001192092896", "3.0"]
    assert hand_met_on(row) == "extremes"
    # no extreme value among the inputs: whatever differs was met on ordinary ones
    row["inputs"] = [{"tensor": {"value": [0.5, 2.0]}}]
    assert hand_met_on(row) == "ordinary"


def test_every_sweep_change_records_its_classes_and_whether_ordinary_inputs_meet_it() -> None:
    ordinary = set(DOC["input_classes"]["ordinary"])
    extremes = set(DOC["input_classes"]["extremes"])
    assert not ordinary & extremes and {"special", "large", "empty", "mixed"} <= extremes
    for op, dtype, group in SWEEP_CHANGES:
        classes = set(group["classes"])
        assert group["class"] in classes <= ordinary | extremes, (op, dtype)
        # an ordinary class differing only in NaN against an infinity (a pole) is extremes
        met = classes & ordinary - set(group.get("poles", []))
        assert group["met_on"] == ("ordinary" if met else "extremes"), (op, dtype)
        if group["met_on"] == "ordinary":
            assert group["class"] in ordinary, (op, dtype)  # the evidence a model meets


def test_binary_ops_met_mixed_operands_and_int_min_by_minus_one() -> None:
    assert DOC["classes"]["DT_INT32"]["int_min_by_minus_one"][1][0] == [-1, 1, -1]
    assert "mixed" in DOC["classes"]["DT_FLOAT"] and "FloorDiv" in DOC["remeasured"]["ops"]


# nondeterministic kernels: a release whose own two runs of a node disagree
def _unsteady(pair: dict[str, Any]) -> ShippedKernelChanges:
    doc = {
        "format": "tfcompat-kernel-changes/2",
        "newest": "2.21.0",
        "releases": ["2.11.0", "2.12.1", "2.13.1", "2.21.0"],
        "classes": {"DT_INT32": {"ordinary": [[1, 2]], "special": [[0]]}},
        "ops": {"DynamicStitch": {"type_attr": "T", "dtypes": {"DT_INT32": pair}}},
    }
    return ShippedKernelChanges(json.dumps(doc).encode())


def test_a_release_whose_runs_disagree_is_read_with_its_classes_and_both_answers() -> None:
    answer = {"outputs": [{"dtype": "int32", "shape": [2], "values": [7, -3]}]}
    group = {
        "releases": ["2.12.1"],
        "classes": ["ordinary", "special"],
        "met_on": "ordinary",
        "class": "ordinary",
        "layout": "same",
        "first": answer,
        "second": {"outputs": [{"dtype": "int32", "shape": [2], "values": [0, -3]}]},
        "nodes": 2,
    }
    table = _unsteady({"nondeterministic_in": ["2.12.1"], "nondeterministic": [group]})
    found = table.nondeterminism("DynamicStitch", "DT_INT32", "2.12.0")  # by its minor
    assert found is not None and not found.extremes_only
    assert found.classes == ("ordinary", "special") and found.steady_from == "2.13.1"
    assert "int32[2] [7, -3] on its first run and int32[2] [0, -3]" in found.evidence
    assert "--ops DynamicStitch" in found.remeasure
    assert table.nondeterminism("DynamicStitch", "DT_INT32", "2.11.0") is None
    assert "DynamicStitch" in table.ops  # its findings differ by release


def test_a_table_with_only_nondeterministic_in_counts_it_as_met_on_ordinary_inputs() -> None:
    found = _unsteady({"nondeterministic_in": ["2.12.1"]}).nondeterminism(
        "DynamicStitch", "DT_INT32", "2.12.1"
    )
    assert found is not None and found.met_on == "ordinary" and found.classes == ()
    assert "neither which nor the input class" in found.evidence


def test_every_shipped_nondeterministic_pair_records_its_classes_and_both_answers() -> None:
    ordinary = set(DOC["input_classes"]["ordinary"])
    groups = [
        (op, dtype, g)
        for op, entry in DOC["ops"].items()
        for dtype, pair in entry["dtypes"].items()
        for g in pair.get("nondeterministic", [])
    ]
    assert groups, "the re-measured ops record their own runs' disagreements"
    for op, dtype, g in groups:
        assert g["class"] in g["classes"], (op, dtype)
        assert g["met_on"] == ("ordinary" if set(g["classes"]) & ordinary else "extremes")
        assert g["first"] != g["second"], (op, dtype)
