"""Layer configs split into the features the Keras 3 layer-config table is keyed by, on
files real Keras 2 releases wrote (tests/fixtures/keras/models)."""

from __future__ import annotations

from pathlib import Path

from worker.formats.keras_features import config_features
from worker.formats.read import read_path
from worker.model.keras import KerasLayer

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "models"


def layer(path: str, class_name: str) -> KerasLayer:
    (artifact,) = read_path(str(MODELS / path))
    assert artifact.keras is not None
    return next(x for x in artifact.keras.layers if x.class_name == class_name)


def test_every_argument_is_a_feature_and_booleans_carry_their_value() -> None:
    lstm = layer("tf2.15/lstm.h5", "LSTM")
    assert {"time_major", "time_major=false", "units", "return_sequences=false"} <= set(
        lstm.features
    )


def test_an_object_entry_names_its_class_and_its_arguments() -> None:
    # TF 1.15's Keras writes a dtype into each initializer's config
    dense = layer("tf1.15/dense.h5", "Dense")
    assert "kernel_initializer=GlorotUniform" in dense.features
    assert "kernel_initializer=GlorotUniform.dtype" in dense.features
    assert (
        "kernel_initializer=GlorotUniform.dtype" not in layer("tf2.15/dense.h5", "Dense").features
    )


def test_a_sequentials_batch_input_shape_is_left_to_the_input_rule() -> None:
    dense = layer("tf1.15/dense.h5", "Dense")
    assert "batch_input_shape" in dense.config_keys
    assert "batch_input_shape" not in dense.features


def test_dtype_policies_strings_and_enumerated_values() -> None:
    mixed = {"dtype": {"class_name": "Policy", "config": {"name": "mixed_float16"}}}
    assert config_features(mixed) == ("dtype", "dtype=Policy", "dtype=Policy.name")
    assert config_features({"dtype": "float64"}) == ("dtype", "dtype=float64")
    assert config_features({"padding": "causal", "implementation": 1, "merge_mode": None}) == (
        "implementation",
        "implementation=1",
        "merge_mode",
        "merge_mode=null",
        "padding",
        "padding=causal",
    )
    # a name is an argument, never a value feature
    assert config_features({"name": "dense_7", "units": 3}) == ("name", "units")


def test_a_nested_layer_without_a_module_is_a_feature_of_its_wrapper() -> None:
    # Keras 3 wrappers rebuild the nested entry with serialization_lib, which finds an
    # unregistered class only by its module (Keras 2.13+ writes one)
    old = {"layer": {"class_name": "Dense", "config": {"units": 2}}, "name": "td"}
    new = {"layer": {"module": "keras.layers", "class_name": "Dense", "config": {}}}
    assert config_features(old) == ("layer", "layer.module=none", "name")
    assert config_features(new) == ("layer",)
    wrapped = layer("tf2.10/bidirectional.h5", "Bidirectional")
    assert "layer.module=none" in wrapped.features
