"""Keras 2 names in Keras 3: our verdict against what real Keras 3 did
(tests/fixtures/keras-names, in-sample: the name rule was written from these rows).

Made by `tools/keras/build_applications.py --round 3`: small models with one unusual
layer or model name each ('/' on a layer, the input, the model, a nested model or a layer
inside one; '>', a backslash, '.' and '-'), written as H5 by the Keras 2 of TF 2.6.5 and
2.15.1 (which refuse ':', a space and non-ASCII letters in a name: "is not a valid scope
name"), loaded by the newest patch of every Keras 3 minor, 3.0 to 3.15 (jax backend).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_keras_apps_agreement import disagreement, rows_of

NAMES = Path(__file__).resolve().parents[1] / "fixtures" / "keras-names"


def rows() -> list[dict[str, Any]]:
    return rows_of(NAMES)


def names_disagreement(row: dict[str, Any]) -> str | None:
    """Why our `loads` differs from what Keras 3 did (None: it agrees)."""
    return disagreement(NAMES, row)


def test_the_matrix_has_every_keras_3_minor_and_names_that_load_and_fail() -> None:
    found = rows()
    assert len({r["consumer"] for r in found}) >= 16
    assert {r["ok"] for r in found} == {True, False}


@pytest.mark.parametrize("row", rows(), ids=lambda r: f"{r['consumer']}:{r['model']}")
def test_verdict_agrees_with_keras_3_on_a_keras_2_name(row: dict[str, Any]) -> None:
    assert names_disagreement(row) is None
