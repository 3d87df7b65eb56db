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
    assert len(FIXTURE_SETS) == 4, (
        "every fixture matrix (shared, ours, serve, real) must be present"
    )
    assert len(ROWS) >= 288 + 16988 + 1600 + 40


# Held-out real models where the rules still disagree with TensorFlow, each with why.
# Strict: a row here that starts to agree fails, so the list only shrinks.
KNOWN_MISSES: dict[tuple[str, str], str] = {
    (f"musicnn-0.1.0/{name}", release): (
        "the Python importer checks `_output_shapes` (written by TF 1.12) against the "
        "consumer's shape functions: FusedBatchNormGrad's reserve-space outputs changed "
        "from [0] to [C]; no rule models shape inference yet"
    )
    for name in ("MTT_musicnn", "MSD_musicnn", "MTT_vgg", "MSD_vgg")
    for release in ("2.4.4", "2.5.3", "2.8.4", "2.12.1", "2.15.1", "2.16.2", "2.21.0")
}


def _marks(row: Row) -> list[pytest.MarkDecorator]:
    why = KNOWN_MISSES.get((row.artifact, row.consumer_version))
    return [pytest.mark.xfail(reason=why, strict=True)] if why else []


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id, marks=_marks(r)) for r in ROWS])
def test_prediction_matches_real_tensorflow(row: Row) -> None:
    p = predict(row)
    said = f"TensorFlow {row.consumer_version} said ok={row.ok} ran={row.ran} ({row.failure!r})"
    assert p.loads == row.ok, f"predicted loads={p.loads}; {said}; our errors: {p.reasons}"
    assert p.serves == row.serves, f"predicted serves={p.serves}; {said}; our errors: {p.reasons}"
    if not row.serves:
        codes = expected_codes(row)
        assert codes is not None, f"no known error class in {row.failure!r}"
        assert p.code in codes, f"first error {p.code}, expected one of {sorted(codes)}; {said}"
