"""The whole-model tolerance from a file's own sensitivity, on the committed held-out
rounds (tools/tflite/kernel_sensitivity.py, kernel_sweep.sensitive_tolerance): the
cases it was stated for, and the fifth round's first-measured figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.catalog.test_tflite_kernel_sweep import _load
from tests.held_out import held_out_set

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "tflite-kernels-heldout"
sensitivity = _load("kernel_sensitivity")


def _cells(name: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (FIXTURE / name).read_text().splitlines()]


def test_one_int16_step_behind_a_dequantize_is_rounding_not_a_difference() -> None:
    files = sensitivity.load("files")
    found = {
        sensitivity.judged(c, files[c["model"]], "sensitivity")
        for c in _cells("cells.jsonl")
        if c["model"].endswith("dense_int16x8.tflite") and c["distance"] == 1613.0
    }
    assert found == {"within rounding"}  # the depth tolerance called these 40 `differs`


def test_mobilenet_likes_changed_conv_is_beyond_its_own_rounding() -> None:
    deep = sensitivity.load("deep-dynamic")
    cells = [c for c in _cells("cells-deep-dynamic.jsonl") if "mobilenet_like" in c["model"]]
    far = [c for c in cells if c["distance"] != "not comparable" and c["distance"] > 1000]
    assert len(far) == 84
    assert {sensitivity.judged(c, deep[c["model"]], "sensitivity") for c in far} == {"differs"}
    assert {sensitivity.judged(c, deep[c["model"]], "depth") for c in far} == {"within rounding"}


def test_the_fifth_rounds_cells_give_its_first_measured_figures() -> None:
    record = held_out_set(FIXTURE / "wide")
    assert record is not None
    cells = _cells("cells-wide.jsonl")
    tp = sum(c["at_risk"] and c["answer"] == "differs" for c in cells)
    at_risk = sum(c["at_risk"] for c in cells)
    differs = sum(c["answer"] == "differs" for c in cells)
    figures = record.first_measured["figures"]
    assert figures["precision"] == [tp, at_risk]
    assert figures["recall"] == [tp, differs]
    assert figures["differs"] == [differs, len(cells)]
