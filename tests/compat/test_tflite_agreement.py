"""Every row of the TFLite fixture matrices: what a real runtime did with a real .tflite
file, against what `check_artifact` says from the file's metadata alone
(tests/tflite_truth.py reads both sets and says which rows are held out).

The op tables and the custom ops each resolver registers were measured with synthetic
one-op probes (tools/tflite/build_table.py), so no row here went into them; Flex support
per TensorFlow wheel comes from one converter model (`tf2.12/flex_det`) and the
kernel-change bounds from the converter rows. The real files PyPI packages ship
(tests/fixtures/tflite-real) were used for nothing; those marked held out are reported
apart by tools/tflite/agreement.py.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.tflite_truth import (
    CONVERTED,
    ERROR_CLASSES,
    REAL,
    Row,
    artifact,
    outcome,
    predicted,
    rows,
)
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.model.findings import Code

ROWS = rows()


def test_every_runtime_and_model_is_a_row() -> None:
    converted = Counter(r.family for r in ROWS if r.fixture_set == CONVERTED)
    real = Counter(r.family for r in ROWS if r.fixture_set == REAL)
    assert converted == {"tensorflow": 25 * 51, "tflite-runtime": 8 * 51, "ai-edge-litert": 19 * 51}
    assert real == {"tensorflow": 25 * 22, "tflite-runtime": 8 * 22, "ai-edge-litert": 19 * 22}


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_verdict_agrees_with_the_real_runtime(row: Row) -> None:
    assert predicted(row) == outcome(row), row.error


def test_every_outcome_the_matrices_show_is_predicted_somewhere() -> None:
    seen = Counter(outcome(r)[2] for r in ROWS)
    assert set(seen) == {None, *(code for _, code in ERROR_CLASSES)} | {Code.TFLITE_WRONG_VALUES}


def test_every_tflite_file_gets_an_answer_from_every_release_with_an_op_registry() -> None:
    catalog = load_catalog()
    models = sorted({(r.fixture_set, r.model) for r in ROWS})
    unknown = []
    for fixture_set, model in models:
        for consumer in catalog.range_consumers():
            found = check_artifact(artifact(fixture_set, model), consumer, catalog)
            if found.loads is None or found.serves is None:
                unknown.append((model, consumer.name))
    assert unknown == []
