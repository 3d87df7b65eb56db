"""Every prediction agrees with what real TensorFlow did (every fixture matrix: the
shared set, ours, tests/fixtures/tf-serve for the loader's steps and the request, and
tests/fixtures/tf-dtypes for data types newer than the consumer, tests/fixtures/tf-devices
for nodes pinned to devices, tests/fixtures/tf-signatures for the tags and signatures a
loader looks for, tests/fixtures/keras3-export for Keras 3 `model.export` SavedModels,
tests/fixtures/tf-assets for what a SavedModel's own assets and constants decide,
tests/fixtures/tf-bites for kernels, ops and attrs TensorFlow meets only at the request
or when a function is instantiated).

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
    assert len(FIXTURE_SETS) == 12, (
        "every fixture matrix (shared, ours, serve, real, shapes, xla, dtypes, devices, "
        "signatures, keras3-export, assets, bites) must be present"
    )
    assert len(ROWS) >= 288 + 16988 + 1600 + 40


# Held-out real models where the rules still disagree with TensorFlow, each with why:
# (artifact, consumer release), or with the loader when only that loader's row misses.
# Strict: a row here that starts to agree fails, so the list only shrinks.
_FIRST_OF_TWO_ERRORS = (
    "the first error of two TensorFlow meets in one node or across functions follows protobuf "
    "map and function-library order; both errors are reported and loads/serves agree"
)
KNOWN_MISSES: dict[tuple[str, ...], str] = {
    ("tf2.15/float8_variable", "1.15.5"): _FIRST_OF_TWO_ERRORS,
    ("tf2.21/float8_variable", "1.15.5"): _FIRST_OF_TWO_ERRORS,
    ("tf2.15/int4_in_function", "2.8.4", "v2_loader"): _FIRST_OF_TWO_ERRORS,
    ("tf2.21/int4_in_function", "2.8.4", "v2_loader"): _FIRST_OF_TWO_ERRORS,
    ("tf2.15/newattr_request_fn", "2.4.4", "v2_loader"): _FIRST_OF_TWO_ERRORS,
    ("tf2.15/newattr_unused_fn", "2.4.4", "v2_loader"): _FIRST_OF_TWO_ERRORS,
    ("tf2.21/newattr_request_fn", "2.4.4", "v2_loader"): _FIRST_OF_TWO_ERRORS,
    ("tf2.21/newattr_unused_fn", "2.4.4", "v2_loader"): _FIRST_OF_TWO_ERRORS,
    ("tf1.15/unique_axis_meta", "1.15.5"): (
        "1.15's own shape function gives UniqueV2 along an axis a rank-1 output where its "
        "kernel returns a matrix: the producer's own release imports the graph and fails "
        "the run ('Unable to broadcast tensor of shape [1,3] to tensor of shape [2,1]'); "
        "no rule compares a release's static shapes with its kernels"
    ),
    ("jax0.12.0.1-tf2.21/poly_batch", "2.20.0"): (
        "jax 0.12's polymorphic-shape module holds a shape_assertion custom call in VHLO's "
        "custom_call_v2, which 2.20-2.21 do not register ('unregistered operation "
        "vhlo.custom_call_v2'): the rules judge the module's StableHLO stamp (1.18.0, which "
        "2.20-2.21 read for jax's math ops), not which versioned ops it holds"
    ),
    ("jax0.12.0.1-tf2.21/poly_batch", "2.21.0"): (
        "jax 0.12's polymorphic-shape module holds a shape_assertion custom call in VHLO's "
        "custom_call_v2, which 2.20-2.21 do not register ('unregistered operation "
        "vhlo.custom_call_v2'): the rules judge the module's StableHLO stamp (1.18.0, which "
        "2.20-2.21 read for jax's math ops), not which versioned ops it holds"
    ),
}


def mismatch(row: Row) -> str | None:
    """Why our prediction for this row differs from what TensorFlow did; None if it agrees."""
    p = predict(row)
    said = f"TensorFlow said ok={row.ok} ran={row.ran} ({row.failure[:160]!r})"
    if p.loads != row.ok:
        return f"predicted loads={p.loads}; {said}; our errors: {p.reasons}"
    if p.serves != row.serves:
        return f"predicted serves={p.serves}; {said}; our errors: {p.reasons}"
    if not row.serves:
        codes = expected_codes(row)
        if codes is None:
            return f"no known error class in {row.failure!r}"
        if p.code not in codes:
            return f"first error {p.code}, expected one of {sorted(codes)}; {said}"
    return None


def known_miss(row: Row) -> str | None:
    """Why this row is a known miss (KNOWN_MISSES), or None."""
    return KNOWN_MISSES.get((row.artifact, row.consumer_version, row.loader)) or KNOWN_MISSES.get(
        (row.artifact, row.consumer_version)
    )


BY_ARTIFACT: dict[str, list[Row]] = {}
for _row in ROWS:
    BY_ARTIFACT.setdefault(f"{_row.fixture_set.parent.parent.name}:{_row.artifact}", []).append(
        _row
    )
KNOWN_ROWS = [row for row in ROWS if known_miss(row)]


@pytest.mark.parametrize("artifact", sorted(BY_ARTIFACT))
def test_predictions_match_real_tensorflow(artifact: str) -> None:
    """One test per artifact, every row of it judged but the known misses (each a strict
    xfail below): a failure lists each row that disagrees (consumer, loader, why)."""
    problems = []
    for row in BY_ARTIFACT[artifact]:
        why = mismatch(row)
        if why and not known_miss(row):
            problems.append(f"tf{row.consumer_version}@{row.loader}: {why}")
    assert not problems, f"{len(problems)} of {len(BY_ARTIFACT[artifact])} rows:\n" + "\n".join(
        problems
    )


def test_every_known_miss_names_rows() -> None:
    named = {
        key
        for row in KNOWN_ROWS
        for key in (
            (row.artifact, row.consumer_version, row.loader),
            (row.artifact, row.consumer_version),
        )
    }
    assert not [key for key in KNOWN_MISSES if key not in named], "no such rows"


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(row, marks=pytest.mark.xfail(strict=True, reason=known_miss(row)), id=row.id)
        for row in KNOWN_ROWS
    ],
)
def test_a_known_miss(row: Row) -> None:
    """Strict: a known miss that starts to agree fails here until it is taken off the list."""
    assert mismatch(row) is None
