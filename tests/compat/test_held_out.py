"""Held-out figures are the first-measured ones; rows tuned on since are in-sample.

tests/fixtures/held_out.json records, per held-out set of every agreement matrix, the
figure as first measured (and the commit whose message recorded it), the commits that
then tuned on its rows, and the figure after tuning, so the held-out headline is
reproducible from the repository and never replaced by an after-tuning figure.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.compat.test_keras_agreement import FAMILIES
from tests.held_out import HELD_OUT, ROOT, HeldOutSet, held_out_set, held_out_sets
from tests.truth import (
    KERAS3_EXPORT,
    OWN,
    REAL,
    SERVE,
    SHAPES,
    SIGNATURES,
    XLA,
    Row,
    sample_label,
)

SETS = held_out_sets()
TRUTH_SETS = (OWN, SERVE, SHAPES, XLA, REAL, SIGNATURES, KERAS3_EXPORT)


def markers(fixture: Path) -> set[str]:
    doc = json.loads((fixture / "artifacts.json").read_text())
    return {str(a["held_out_after"]) for a in doc if a.get("held_out_after")}


@pytest.mark.parametrize("fixture", TRUTH_SETS, ids=[p.name for p in TRUTH_SETS])
def test_every_held_out_marker_has_a_first_measured_record(fixture: Path) -> None:
    missing = [m for m in markers(fixture) if held_out_set(fixture, held_out_after=m) is None]
    assert not missing, f"{fixture.name}: no held_out.json record for {missing}"


def test_every_tflite_feature_round_has_a_first_measured_record() -> None:
    fixture = ROOT / "tests" / "fixtures" / "tflite-features"
    doc = json.loads((fixture / "models.json").read_text())
    rounds = {str(m["held_out_after"]) for m in doc.values() if m.get("held_out_after")}
    assert rounds, "no later held-out round in tflite-features"
    missing = [m for m in rounds if held_out_set(fixture, held_out_after=m) is None]
    assert not missing, f"tflite-features: no held_out.json record for {missing}"
    assert held_out_set(fixture, held_out=True) is not None  # the first round


def test_every_keras_family_but_the_one_the_rules_came_from_has_a_record() -> None:
    keras = ROOT / "tests" / "fixtures" / "keras"
    assert [f for f in FAMILIES if held_out_set(keras, family=f) is None] == ["tuned"]


def test_the_rows_of_a_set_tuned_on_are_in_sample() -> None:
    row = Row(SHAPES, "2.8.4", "tf1.13/bn_inference_only_meta", "import_meta_graph", True, "")
    label = sample_label(row)
    assert label.startswith("in-sample: tf-shapes, built after the rule, tuned on in 2819f32")
    assert "first measured: rows 176 of 187" in label


def test_the_rows_of_a_set_never_tuned_on_stay_held_out_with_their_first_figure() -> None:
    (found,) = [s for s in SETS if s.name == "tf-xla, built after the tuning"]
    assert not found.tuned
    assert found.label().startswith("held-out: tf-xla, built after the tuning")
    assert "serves 136 of 140" in found.label()


# What each record claims: figures that add up, and commits the history holds.
@pytest.mark.parametrize("found", SETS, ids=[s.name for s in SETS])
def test_a_record_names_figures_within_their_totals_or_says_why_none(found: HeldOutSet) -> None:
    for record in (found.first_measured, found.after_tuning or {}):
        assert record.get("not_recorded") or record.get("figures") or not record
        for agree, total in record.get("figures", {}).values():
            assert 0 <= agree <= total


@pytest.mark.parametrize("found", SETS, ids=[s.name for s in SETS])
def test_every_commit_a_record_names_is_in_the_history(found: HeldOutSet) -> None:
    commits = [*found.tuned_on]
    for record in (found.first_measured, found.after_tuning or {}):
        commits += [c for c in (record.get("commit"), record.get("against")) if c]
    for commit in commits:
        done = subprocess.run(
            ["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=ROOT, capture_output=True
        )
        assert done.returncode == 0, f"{commit} is not a commit of this repository"


def test_the_record_file_says_where_its_figures_came_from() -> None:
    source = json.loads(HELD_OUT.read_text())["source"]
    assert source["read"] and source["date"] and "git log" in source["how"]
