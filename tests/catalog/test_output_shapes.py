"""The measured shape-function table: what each release infers, where it changed."""

from __future__ import annotations

import json

import pytest

from worker.catalog.catalog import DATA, load_catalog
from worker.catalog.output_shapes import ShippedOutputShapes
from worker.model.shapes import SHAPE_CHANGED_OPS

TABLE = load_catalog().output_shapes


def test_the_table_ships_and_names_how_it_was_measured() -> None:
    assert TABLE is not None
    assert TABLE.measured_by.startswith("tools/shapes/measure.py")
    assert "1.15.5" in TABLE.releases and "2.2.3" in TABLE.releases


def test_the_reader_keeps_the_shapes_of_exactly_the_tables_ops() -> None:
    assert TABLE is not None
    assert TABLE.ops() == SHAPE_CHANGED_OPS


def test_a_release_stands_for_its_minor_and_nothing_else() -> None:
    assert TABLE is not None
    measured = TABLE.cases("FusedBatchNormGrad", "2.2.3")
    assert measured and TABLE.cases("FusedBatchNormGrad", "2.2.0") == measured
    assert TABLE.cases("FusedBatchNormGrad", "1.12.0") is None  # not measured
    assert TABLE.cases("MatMul", "2.2.3") is None  # no change measured


def _reserve_space(release: str, case_id: str) -> object:
    assert TABLE is not None
    (case,) = [c for c in TABLE.cases("FusedBatchNormGrad", release) or () if c.case_id == case_id]
    assert case.outputs is not None
    return case.outputs[3]


# The change behind musicnn's failures: inference-mode gradients' reserve spaces
def test_fused_batch_norm_grad_reserve_space_went_from_channels_to_empty() -> None:
    case = "FusedBatchNormGrad/NHWC/inference"
    assert _reserve_space("1.15.5", case) == ("C",)
    assert _reserve_space("2.2.3", case) == (0,)
    assert _reserve_space("1.15.5", "FusedBatchNormGrad/NHWC/training") == (0,)


def test_another_format_is_refused() -> None:
    doc = json.loads((DATA / "output_shapes.json").read_text())
    doc["format"] = "tfcompat-output-shapes/0"
    with pytest.raises(ValueError, match="unknown format"):
        ShippedOutputShapes(json.dumps(doc).encode())
