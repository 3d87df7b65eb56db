"""Every loads prediction agrees with what real TensorFlow did (matrix.jsonl)."""

from __future__ import annotations

import pytest

from tests.truth import FIXTURE_SETS, Row, has_registry, predict, rows

ROWS = rows()


def test_fixture_matrices_are_present() -> None:
    assert FIXTURE_SETS, "no fixture matrix found"
    assert len(ROWS) >= 288


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_prediction_matches_real_tensorflow(row: Row) -> None:
    if not has_registry(row.consumer_version):
        pytest.skip(f"no op registry for TensorFlow {row.consumer_version} in the catalog")
    loads, reasons = predict(row)
    assert loads == row.ok, (
        f"predicted loads={loads} but TensorFlow {row.consumer_version} said ok={row.ok}"
        f" ({row.error!r}); our errors: {reasons}"
    )
