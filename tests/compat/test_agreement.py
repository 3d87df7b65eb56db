"""Every prediction agrees with what real TensorFlow did (every fixture matrix: the
shared set, ours, and tests/fixtures/tf-serve for the loader's steps and the request).

For every row, with no skips: `loads` equals TensorFlow's `ok`, `serves` equals
`ok and ran` (it loaded and answered the fed input), and where it failed, our
first error finding's code names TensorFlow's error class. A release without
an op registry predicts `null` and fails here: every consumer in the matrices
must be answerable.
"""

from __future__ import annotations

import pytest

from tests.truth import FIXTURE_SETS, Row, expected_codes, predict, rows

ROWS = rows()


def test_fixture_matrices_are_present() -> None:
    assert len(FIXTURE_SETS) == 3, "every fixture matrix (shared, ours, serve) must be present"
    assert len(ROWS) >= 288 + 16988 + 1600


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_prediction_matches_real_tensorflow(row: Row) -> None:
    p = predict(row)
    said = f"TensorFlow {row.consumer_version} said ok={row.ok} ran={row.ran} ({row.failure!r})"
    assert p.loads == row.ok, f"predicted loads={p.loads}; {said}; our errors: {p.reasons}"
    assert p.serves == row.serves, f"predicted serves={p.serves}; {said}; our errors: {p.reasons}"
    if not row.serves:
        codes = expected_codes(row)
        assert codes is not None, f"no known error class in {row.failure!r}"
        assert p.code in codes, f"first error {p.code}, expected one of {sorted(codes)}; {said}"
