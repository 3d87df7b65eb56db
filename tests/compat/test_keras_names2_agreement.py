"""Keras 2 names in Keras 3, held out: our verdict against what real Keras 3 did
(tests/fixtures/keras-names-2).

Made by `tools/keras/build_applications.py --round 4` after the name rule
(worker/compat/keras_names.py) was committed: other architectures whose layer names hold
'/' (DenseNet201, MobileNetV3Small) and hand-named models (scoped transformer-style names,
Inception-style towers, a nested Sequential backbone, a model named with '/' only, a
Bidirectional LSTM and a TimeDistributed Dense named with '/', and a control whose names
hold only '.', '-' and '>'), written as H5 by the Keras 2 of TF 2.6.5, 2.11.0 and 2.15.1,
loaded whole by Keras 3.0.5, 3.3.3, 3.6.0, 3.9.2, 3.12.4 and 3.15.1 (jax backend).
tests/fixtures/held_out.json has the figure as first measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_keras_apps_agreement import disagreement, rows_of

NAMES_2 = Path(__file__).resolve().parents[1] / "fixtures" / "keras-names-2"


def rows() -> list[dict[str, Any]]:
    return rows_of(NAMES_2)


def names2_disagreement(row: dict[str, Any]) -> str | None:
    """Why our `loads` differs from what Keras 3 did (None: it agrees)."""
    return disagreement(NAMES_2, row)


def test_the_matrix_has_several_writers_and_keras_3_minors() -> None:
    found = rows()
    assert len({r["consumer"] for r in found}) >= 6
    assert len({r["model"].split("/")[0] for r in found}) >= 3


@pytest.mark.parametrize("row", rows(), ids=lambda r: f"{r['consumer']}:{r['model']}")
def test_verdict_agrees_with_keras_3_on_held_out_keras_2_names(row: dict[str, Any]) -> None:
    assert names2_disagreement(row) is None
