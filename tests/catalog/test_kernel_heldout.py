"""at-risk on the kernel sweep's held-out models: the figures held_out.json records.

tests/fixtures/kernels-heldout holds models made after the sweep's table was committed
(tools/kernels/heldout.py: ops picked at random from the table's changes and from the
fixtures' ops, feeds drawn apart from the sweep's inputs), each run by the releases
(tools/attrs/outcomes.py). tools/attrs/precision.py scores `tfcompat check`'s status
for every cell; the figures must be the ones recorded, so a rule change that moves
them is seen and recorded as tuning, never silently."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from tests.held_out import held_out_set

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "tests" / "fixtures" / "kernels-heldout"


def _precision() -> ModuleType:
    spec = importlib.util.spec_from_file_location("precision", ROOT / "tools/attrs/precision.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not SET.exists(), reason="no kernel held-out set yet")
def test_the_held_out_figures_are_the_recorded_ones() -> None:
    record = held_out_set(SET, held_out_after="b49bee3")
    assert record is not None
    expected = (record.after_tuning or record.first_measured)["figures"]
    precision = _precision()
    found = precision.score(precision.cells(SET, rounding=True))
    tp, fp, fn = found["true_positive"], found["false_positive"], found["false_negative"]
    assert {"precision": [tp, tp + fp], "recall": [tp, tp + fn]} == {
        k: expected[k] for k in ("precision", "recall")
    }
    if "precision_ordinary_feed" in expected:  # the truth on the ordinary feed alone
        found = precision.score(precision.cells(SET, rounding=True, feed=0))
        tp, fp, fn = found["true_positive"], found["false_positive"], found["false_negative"]
        assert [[tp, tp + fp], [tp, tp + fn]] == [
            expected["precision_ordinary_feed"],
            expected["recall_ordinary_feed"],
        ]


SECOND = ROOT / "tests" / "fixtures" / "kernels-heldout-2"


@pytest.mark.skipif(not SECOND.exists(), reason="no second kernel held-out set yet")
def test_the_second_held_out_figures_are_the_recorded_ones() -> None:
    """Cases made by three producers, scored against the newest release's answers (the
    table compares every release with it); on every feed and on the ordinary one."""
    record = held_out_set(SECOND, held_out_after="756cd1d")
    assert record is not None
    expected = (record.after_tuning or record.first_measured)["figures"]
    precision = _precision()
    found = {}
    for name, feed in (("", None), ("_ordinary_feed", 0)):
        score = precision.score(
            precision.cells(SECOND, rounding=True, feed=feed, reference="2.21.0")
        )
        tp, fp, fn = score["true_positive"], score["false_positive"], score["false_negative"]
        found[f"precision{name}"] = [tp, tp + fp]
        found[f"recall{name}"] = [tp, tp + fn]
    assert found == {k: expected[k] for k in found}
