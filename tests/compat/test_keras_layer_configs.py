"""`keras.layer-config`: a Keras 2 H5 file's layer configs against the measured Keras 3
table, on constructed tables (the rule's boundaries) and on the shipped one.

What real Keras 3 did with whole models: test_keras_apps_agreement.py (held out)."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any

from worker.catalog.catalog import load_catalog
from worker.catalog.keras_layer_configs import layer_config_tables
from worker.compat.check import check_artifact
from worker.compat.keras_layer_configs import judge_layer, layer_config_findings
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Code, FixKind, Severity
from worker.model.keras import (
    FeatureFailure,
    KerasLayer,
    KerasModel,
    LayerConfigs,
    LayerConfigTable,
)

POLICY = FeatureFailure(
    "AttributeError: 'str' object has no attribute 'quantization_mode'",
    "AttributeError: 'str' object has no attribute 'quantization_mode'",
    "rebuild",
    "dtype=mixed_float16",
    "2.15.1",
)
DENSE = LayerConfigs(
    loads=frozenset({"name", "units", "dtype", "dtype=float32", "use_bias", "use_bias=true"}),
    fails={"dtype=Policy": POLICY},
)


def table(keras: str, **classes: LayerConfigs) -> LayerConfigTable:
    return LayerConfigTable(keras, f"keras {keras}", classes)


def dense(*features: str, name: str = "dense") -> KerasLayer:
    return KerasLayer("Dense", name, (), features=("name", "units", *features))


def model(*layers: KerasLayer, version: str = "2.15.0", container: str = "hdf5") -> KerasModel:
    return KerasModel(container, version, model_class="Functional", layers=layers)


def consumer(keras: str = "3.15.1") -> Consumer:
    return replace(load_catalog().consumer("2.21.0"), keras=keras, python="3.11")


def findings(m: KerasModel, *tables: LayerConfigTable, keras: str = "3.15.1") -> list:  # type: ignore[type-arg]
    objects = load_catalog().keras_tables(keras, None)
    return layer_config_findings(m, consumer(keras), list(tables), objects)


# judge_layer: a failing feature wins; what no file had is unmeasured
def test_a_feature_measured_to_fail_fails_the_layer() -> None:
    answer = judge_layer(dense("dtype", "dtype=Policy"), table("3.15.1", Dense=DENSE))
    assert answer.failure == POLICY and answer.feature == "dtype=Policy"


def test_a_failure_wins_over_unmeasured_features() -> None:
    answer = judge_layer(dense("dtype=Policy", "groups"), table("3.15.1", Dense=DENSE))
    assert answer.failure == POLICY


def test_features_no_file_had_are_unmeasured_never_loads() -> None:
    answer = judge_layer(dense("kernel_regularizer=L2"), table("3.15.1", Dense=DENSE))
    assert answer.failure is None and answer.unmeasured == ("kernel_regularizer=L2",)
    assert judge_layer(dense("use_bias=true"), table("3.15.1", Dense=DENSE)).unmeasured == ()


def test_a_class_not_in_the_table_is_unmeasured() -> None:
    conv = KerasLayer("Conv2D", "conv", (), features=("name",))
    assert judge_layer(conv, table("3.15.1", Dense=DENSE)).unmeasured == ("Conv2D",)


def test_a_failing_combination_needs_all_its_features() -> None:
    both = LayerConfigs(
        loads=frozenset({"name", "units", "a", "b"}),
        fails={},
        combinations=((frozenset({"a", "b"}), POLICY),),
    )
    assert judge_layer(dense("a"), table("3.15.1", Dense=both)).failure is None
    assert judge_layer(dense("a", "b"), table("3.15.1", Dense=both)).failure == POLICY


# layer_config_findings: which files, which consumers, and what the finding says
def test_a_failing_layer_is_an_error_with_the_measured_error_and_a_fix() -> None:
    (found,) = findings(model(dense("dtype", "dtype=Policy")), table("3.15.1", Dense=DENSE))
    assert found.code == Code.KERAS_LAYER_CONFIG and found.severity == Severity.ERROR
    assert "quantization_mode" in found.message and "tf-keras" in found.message
    assert found.fix is not None and found.fix.kind == FixKind.RESAVE_AS_KERAS3
    assert found.attr == "dtype=Policy"


def test_failing_in_some_keras_the_consumer_may_run_is_a_warning() -> None:
    fine = LayerConfigs(loads=DENSE.loads | {"dtype=Policy"}, fails={})
    (found,) = findings(
        model(dense("dtype=Policy")), table("3.0.5", Dense=fine), table("3.15.1", Dense=DENSE)
    )
    assert found.severity == Severity.WARNING and "3.15.1" in found.message


def test_an_unmeasured_layer_says_unknown() -> None:
    (found,) = findings(model(dense("kernel_regularizer=L2")), table("3.15.1", Dense=DENSE))
    assert found.code == Code.KERAS_LAYER_UNMEASURED and found.severity == Severity.INFO


def test_only_keras_2_h5_files_are_judged() -> None:
    bad = dense("dtype=Policy")
    assert findings(model(bad, version="3.15.1"), table("3.15.1", Dense=DENSE)) == []
    assert findings(model(bad, container="keras-zip"), table("3.15.1", Dense=DENSE)) == []


def test_custom_and_model_classes_are_left_to_their_own_rules() -> None:
    custom = KerasLayer("MyLayer", "mine", (), features=("name",))
    seq = KerasLayer("Sequential", "inner", (), features=("name",))
    assert findings(model(custom, seq), table("3.15.1", Dense=DENSE)) == []


# The shipped table and the whole check
def test_the_shipped_table_covers_every_keras_3_minor() -> None:
    tables = layer_config_tables("3.0", "2.16.2")  # TF 2.16's own Keras: any Keras 3
    assert {t.keras.rsplit(".", 1)[0] for t in tables} >= {f"3.{m}" for m in range(16)}


def test_a_tf215_lstm_fails_in_every_keras_3_on_what_the_error_names() -> None:
    # charged by the error: Keras 3.0 to 3.3 cannot rebuild the Orthogonal recurrent
    # initializer; later minors refuse `time_major`; the other keys were taken
    for t in layer_config_tables("3.0", "2.16.2"):
        lstm = t.classes["LSTM"]
        if t.keras.split(".")[1] in ("0", "1", "2", "3"):
            assert "recurrent_initializer=Orthogonal" in lstm.fails, t.keras
        else:
            assert "time_major" in lstm.fails and "units" in lstm.loads, t.keras
        assert "return_sequences" not in lstm.fails, t.keras


def test_a_keras_20_separable_conv_is_not_charged_with_a_tf215_configs_keys() -> None:
    # fer's emotion_model (Keras 2.0.5): no groups, no kernel_initializer; every tf.keras
    # writer measured wrote both, and Keras 3 refuses them (and nothing else of the layer)
    written = (
        "activation", "bias_initializer", "bias_initializer=Zeros", "depth_multiplier",
        "depthwise_initializer", "depthwise_initializer=VarianceScaling",
        "depthwise_initializer=VarianceScaling.mode", "filters", "kernel_size", "name",
        "padding", "padding=same", "use_bias", "use_bias=false",
    )  # fmt: skip
    layer = KerasLayer("SeparableConv2D", "sep", (), features=written)
    tf215 = replace(layer, features=(*written, "groups", "kernel_initializer"))
    for t in layer_config_tables("3.15", None):
        assert judge_layer(layer, t).failure is None
        # keras 2.3.1's SeparableConv2D files (the same keys) measured the rest
        assert judge_layer(layer, t).unmeasured == ()
        assert judge_layer(tf215, t).feature in {"groups", "kernel_initializer"}


def test_an_object_entry_loading_in_another_class_loads_in_every_class() -> None:
    conv = LayerConfigs(loads=frozenset({"name"}), fails={})
    t = replace(
        table("3.15.1", Conv2D=conv),
        object_loads=frozenset({"initializer=VarianceScaling", "initializer=VarianceScaling.mode"}),
    )
    layer = KerasLayer(
        "Conv2D",
        "c",
        (),
        features=(
            "name",
            "kernel_initializer=VarianceScaling",
            "kernel_initializer=VarianceScaling.mode",
        ),
    )
    assert judge_layer(layer, t).unmeasured == ()
    odd = replace(layer, features=("name", "kernel_initializer=VarianceScaling.gain"))
    assert judge_layer(odd, t).unmeasured == ("kernel_initializer=VarianceScaling.gain",)
    # an object failing in the class itself is that class's failure
    failing = replace(conv, fails={"kernel_initializer=VarianceScaling": POLICY})
    assert judge_layer(layer, replace(t, classes={"Conv2D": failing})).failure == POLICY


def test_a_feature_one_of_several_keras_measured_is_judged_on_that_one() -> None:
    objects = load_catalog().keras_tables("3.0", "2.16.2")
    c = replace(load_catalog().consumer("2.16.2"), python="3.11")
    narrow = LayerConfigs(loads=frozenset({"name", "units"}), fails={})
    tables = [table("3.14.1", Dense=narrow), table("3.15.1", Dense=DENSE)]
    found = layer_config_findings(model(dense("use_bias=true")), c, tables, objects)
    assert [f.code for f in found] == [Code.KERAS_LAYER_CONFIG, Code.KERAS_LAYER_CONFIG]
    assert "Dense: Keras 3.14.1" in found[1].message
    neither = layer_config_findings(model(dense("use_bias=false")), c, tables, objects)
    assert neither[-1].code == Code.KERAS_LAYER_UNMEASURED


def test_a_mixed_precision_dense_fails_in_the_check_of_a_real_consumer() -> None:
    policy = ("dtype", "dtype=Policy", "dtype=Policy.name")
    layer = dense(*policy, "use_bias", "use_bias=true")
    artifact = Artifact("m", "keras-h5", 1, "0" * 64, keras=model(layer))
    verdict = check_artifact(artifact, consumer("3.15.1"), load_catalog())
    assert verdict.loads is False
    assert [f.code for f in verdict.findings if f.fails_load] == [Code.KERAS_LAYER_CONFIG]


def test_a_consumer_that_may_run_unmeasured_keras_3_is_judged_on_the_measured_ones() -> None:
    # TF 2.16.2 without a pinned Keras may run any Keras 3 from 3.0: only 3.15 measured here
    objects = load_catalog().keras_tables("3.0", "2.16.2")
    c = replace(load_catalog().consumer("2.16.2"), python="3.11")
    (note,) = layer_config_findings(
        model(dense("use_bias=true")), c, [table("3.15.1", Dense=DENSE)], objects
    )
    assert note.code == Code.KERAS_LAYER_CONFIG and note.severity == Severity.INFO
    assert "3.0" in note.message
    bad = layer_config_findings(
        model(dense("dtype=Policy")), c, [table("3.15.1", Dense=DENSE)], objects
    )
    assert [f.severity for f in bad] == [Severity.INFO, Severity.ERROR]


def test_a_consumer_whose_keras_3_has_no_table_is_unknown() -> None:
    objects = load_catalog().keras_tables("3.15.1", None)
    (found,) = layer_config_findings(model(dense("use_bias=true")), consumer(), [], objects)
    assert found.code == Code.KERAS_LAYER_UNMEASURED


# What a failure is charged to (tools/keras/layer_config_table.py), from Keras 3's errors
def _table_tool() -> Any:
    path = Path(__file__).resolve().parents[2] / "tools" / "keras" / "layer_config_table.py"
    spec = importlib.util.spec_from_file_location("layer_config_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SEP = (
    "activation", "groups", "kernel_initializer", "kernel_initializer=GlorotUniform",
    "padding", "padding=valid", "use_bias", "use_bias=true",
)  # fmt: skip


def test_unrecognized_arguments_charge_the_keys_named_and_the_rest_were_taken() -> None:
    charged = _table_tool().charged
    said = (
        "ValueError: Unrecognized keyword arguments passed to SeparableConv2D: {'groups': 1, "
        "'kernel_initializer': {'module': 'keras.initializers', 'class_name': 'GlorotUniform', "
        "'config': {'seed': None}, 'registered_name': None}}"
    )
    picked, taken = charged("SeparableConv2D", SEP, said)
    assert picked == {"groups", "kernel_initializer", "kernel_initializer=GlorotUniform"}
    assert taken == {"activation", "padding", "use_bias"}
    # a repr cut short proves nothing taken; a nested layer's error charges nothing here
    assert charged("SeparableConv2D", SEP, said[:120])[1] == set()
    assert charged("Bidirectional", ("layer",), said.replace("SeparableConv2D", "LSTM")) == (
        set(),
        set(),
    )


def test_object_errors_charge_the_object_entry() -> None:
    charged = _table_tool().charged
    features = ("kernel_initializer=GlorotUniform.dtype", "bias_initializer=Zeros.dtype", "units")
    said = "TypeError: GlorotUniform.__init__() got an unexpected keyword argument 'dtype'"
    assert charged("Dense", features, said) == ({"kernel_initializer=GlorotUniform.dtype"}, set())
    orth = ("recurrent_initializer=Orthogonal", "recurrent_initializer=Orthogonal.gain", "units")
    said = "ValueError: Could not interpret initializer identifier: {'class_name': 'Orthogonal'}"
    assert charged("LSTM", orth, said) == (set(orth[:2]), set())
    said = "TypeError: Discretization.__init__() got an unexpected keyword argument 'trainable'"
    assert charged("Discretization", ("trainable", "trainable=true", "name"), said)[0] == {
        "trainable",
        "trainable=true",
    }
    # an error naming nothing is left to the feature-difference rule
    assert charged("Dense", features, "AttributeError: 'str' object has no attribute 'x'") is None


def test_a_nested_class_not_located_charges_the_nested_entry_without_a_module() -> None:
    charged = _table_tool().charged
    said = "TypeError: Could not locate class 'Dense'. Make sure custom classes are decorated"
    assert charged("TimeDistributed", ("layer", "layer.module=none", "name"), said) == (
        {"layer.module=none"},
        set(),
    )
    # in the shipped table: TF 2.12's TimeDistributed(Dense) fails in every Keras 3, on that
    for t in layer_config_tables("3.0", "2.16.2"):
        assert "layer.module=none" in t.classes["TimeDistributed"].fails, t.keras
        assert "layer" in t.classes["TimeDistributed"].loads, t.keras
