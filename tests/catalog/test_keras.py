"""The Keras each TensorFlow release brings, and the Pythons its wheels run on."""

from __future__ import annotations

import pytest

from worker.catalog.catalog import load_catalog
from worker.catalog.keras import keras_of_release, pythons_of_release


# TF <= 2.15 brings Keras 2 of its own minor; TF >= 2.16 Keras 3 (at least the wheel's minimum).
@pytest.mark.parametrize(
    ("release", "keras"),
    [("1.15.5", "2.2.4-tf"), ("2.4.4", "2.4.0"), ("2.12.1", "2.12"), ("2.15.1", "2.15"),
     ("2.16.2", "3.0"), ("2.17.1", "3.2"), ("2.18.1", "3.5"), ("2.21.0", "3.12"), ("1.4.0", None)],
)  # fmt: skip
def test_each_release_brings_its_keras(release: str, keras: str | None) -> None:
    assert keras_of_release(release) == keras


def test_catalog_consumers_carry_their_keras_and_pythons() -> None:
    consumer = load_catalog().consumer("2.17")
    assert (consumer.keras, consumer.python_range, consumer.python) == (
        "3.2",
        ("3.9", "3.12"),
        None,
    )
    assert pythons_of_release("1.15.5") == ("3.5", "3.7")
