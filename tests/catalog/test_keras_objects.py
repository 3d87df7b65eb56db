"""The measured table of what each Keras deserializes by name (tools/keras/build_objects.py)."""

from __future__ import annotations

import pytest

from worker.catalog.keras import keras_of_release
from worker.catalog.keras_objects import KINDS, keras_objects, keras_tables, measured_versions

VERSIONS = measured_versions()


def test_every_keras_line_was_measured() -> None:
    # the bundled tf.keras of the TF 1.x and early 2.x releases, the Keras 2 packages,
    # tf-keras (Keras 2 for TF 2.16+) and Keras 3 from 3.0 to the newest wheel
    assert {"tf-1.13", "tf-1.15", "tf-2.5", "2.6", "2.8", "2.16", "2.21", "3.0", "3.15"} <= set(
        VERSIONS
    )


@pytest.mark.parametrize("key", VERSIONS)
def test_each_table_has_every_kind_and_says_where_it_was_measured(key: str) -> None:
    release = key.removeprefix("tf-") + ".0" if key.startswith("tf-") else None
    keras = keras_of_release(release) if release else key
    table = keras_objects(keras, release)
    assert table is not None
    assert table.measured_in
    assert set(KINDS) <= set(table.kinds)
    for kind in KINDS:
        assert "{name}" in table.kinds[kind].unknown_message, (key, kind)
    # built-ins every Keras has, and names none can have
    assert table.kinds["activations"].knows("relu")
    assert table.kinds["layers"].knows("Dense")
    assert table.kinds["optimizers"].knows("Adam") or table.kinds["optimizers"].knows("adam")
    assert not table.kinds["activations"].knows("<lambda>")
    assert not table.kinds["layers"].knows("MyLayer")


def test_messages_are_each_keras_own() -> None:
    old = keras_objects("2.2.4-tf", "1.15.5")
    new = keras_objects("3.15")
    assert old is not None and new is not None
    assert (
        old.kinds["activations"]
        .message("<lambda>")
        .startswith("ValueError: Unknown activation function")
    )
    assert new.kinds["activations"].message("f") == (
        "ValueError: Could not interpret activation function identifier: f"
    )
    assert "Could not locate function 'f'" in new.kinds["losses"].message("f", archive=True)


def test_keras_3_optimizers_keep_their_constructor_arguments() -> None:
    table = keras_objects("3.15.1")
    assert table is not None
    adam = table.kinds["optimizers"].objects["Adam"]
    assert adam.args is not None and "learning_rate" in adam.args and "lr" not in adam.args


def test_lookups() -> None:
    # the release's own bundled Keras is filed by release; a pinned Keras by its minor
    one = keras_objects("2.2.4-tf", "1.13.2")
    assert one is not None and "1.13" in one.measured_in
    pinned = keras_objects("3.6.0", "2.21.0")
    assert pinned is not None and pinned.keras.startswith("3.6")
    assert keras_objects("9.1") is None
    assert keras_objects("2.2.4-tf") is None  # which release's is not said
    # TF 2.17 without a pinned Keras may run any Keras 3 from 3.2 on
    may_run = [t.keras for t in keras_tables(keras_of_release("2.17.1"), "2.17.1")]
    assert may_run[0].startswith("3.2") and may_run[-1].startswith("3.15")
    (pinned_only,) = keras_tables("3.6", "2.17.1")
    assert pinned_only.keras.startswith("3.6")
    # a TF 2.16+ release declared with keras==2.21 runs tf-keras 2.21, measured in itself
    (tf_keras,) = keras_tables("2.21", "2.21.0")
    assert tf_keras.keras.startswith("2.21") and "tf-keras 2.21" in tf_keras.measured_in
