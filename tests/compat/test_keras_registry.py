"""The Keras rules are a registry of named checks, each named by the code it finds."""

from __future__ import annotations

from worker.compat.keras import CHECKS, GATES
from worker.model.findings import Code


def test_every_keras_check_is_named_by_a_keras_code_once() -> None:
    names = [name for name, _ in (*GATES, *CHECKS)]
    assert len(names) == len(set(names))
    assert set(names) <= {c.value for c in Code if c.value.startswith("keras.")}


def test_every_keras_code_has_its_check() -> None:
    names = {name for name, _ in (*GATES, *CHECKS)}
    assert {c.value for c in Code if c.value.startswith("keras.")} <= names
