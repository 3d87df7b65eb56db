"""`keras.unknown-object` and the compile configuration on constructed models.

Real files and what real Keras did with them: test_keras_agreement.py (the `objects`
family). These rows pin each boundary on the smallest model that shows it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.model.artifact import Artifact
from worker.model.findings import Code, FixKind, Severity
from worker.model.keras import KerasLayer, KerasModel, KerasObjectRef
from worker.model.verdict import Status

INPUT2 = KerasLayer("InputLayer", "in", ("batch_input_shape", "dtype", "name"))
CONV = KerasLayer("Conv1D", "conv1d", ("activation", "filters", "name"))
LAMBDA_ACT = KerasObjectRef("activations", "<lambda>", "string", "conv1d")
RELU = KerasObjectRef("activations", "relu", "string", "conv1d")
CUSTOM_LAYER = KerasObjectRef("layers", "MyLayer", "class", "my_layer")
CONV_CLASS = KerasObjectRef("layers", "Conv1D", "class", "conv1d")
MY_LOSS = KerasObjectRef("losses", "my_loss", "string", "compile")
MY_METRIC = KerasObjectRef("metrics", "my_metric", "string", "compile", nested=True)
ADAM_LR = KerasObjectRef(
    "optimizers", "Adam", "class", "compile", config_keys=("amsgrad", "beta_1", "decay", "lr")
)
ADAM_OK = KerasObjectRef(
    "optimizers", "Adam", "class", "compile", config_keys=("decay", "learning_rate", "name")
)
CUSTOM_ADAM = KerasObjectRef(
    "optimizers", "Custom>Adam", "class", "compile", config_keys=("learning_rate", "name")
)
TF1_KEYS = ("loss", "metrics", "optimizer_config", "sample_weight_mode")


def model(
    version: str, *objects: KerasObjectRef, compiled: bool = False, keys: tuple[str, ...] = ()
) -> Artifact:
    keras = KerasModel(
        "hdf5",
        version,
        model_class="Sequential",
        layers=(INPUT2, CONV),
        objects=objects,
        compiled=compiled,
        compile_keys=keys,
    )
    return Artifact("m", "keras-h5", 1, "0" * 64, keras=keras)


def verdict(artifact: Artifact, release: str, **pins: object):  # type: ignore[no-untyped-def]
    consumer = replace(load_catalog().consumer(release), **pins)
    return check_artifact(artifact, consumer, load_catalog())


def errors(artifact: Artifact, release: str, **pins: object) -> list[Code]:
    found = verdict(artifact, release, **pins)
    codes = [f.code for f in found.findings if f.severity == Severity.ERROR]
    assert (found.loads is False) == bool(codes)
    return codes


CASES = [
    # a lambda Keras 2 saved by its name resolves nowhere: Keras 2.2.4-tf to Keras 3
    (model("2.15.0", CONV_CLASS, LAMBDA_ACT), "1.15", [Code.KERAS_UNKNOWN_OBJECT]),
    (model("2.15.0", CONV_CLASS, LAMBDA_ACT), "2.8", [Code.KERAS_UNKNOWN_OBJECT]),
    (model("2.15.0", CONV_CLASS, LAMBDA_ACT), "2.21", [Code.KERAS_UNKNOWN_OBJECT]),
    # built-ins resolve
    (model("2.15.0", CONV_CLASS, RELU), "1.15", []),
    (model("2.15.0", CONV_CLASS, RELU), "2.21", []),
    # a custom layer by name, unless the consumer registers it
    (model("2.8.0", CUSTOM_LAYER), "2.8", [Code.KERAS_UNKNOWN_OBJECT]),
    # a compile configuration is read only when the file has one
    (model("2.8.0", MY_LOSS), "2.8", []),
    (model("2.8.0", MY_LOSS, compiled=True), "2.8", [Code.KERAS_UNKNOWN_OBJECT]),
    # Keras 3 reading H5: metrics are built lazily, one loss string is not
    (model("2.8.0", MY_METRIC, compiled=True), "2.8", [Code.KERAS_UNKNOWN_OBJECT]),
    (model("2.8.0", MY_METRIC, compiled=True), "2.21", []),
    (model("2.8.0", MY_LOSS, compiled=True), "2.21", [Code.KERAS_UNKNOWN_OBJECT]),
    # Keras 2's `lr` in Keras 3; `decay` alone is ignored there
    (model("2.2.4-tf", ADAM_LR, compiled=True), "2.21", [Code.KERAS_COMPILE_ARGUMENT]),
    (model("2.2.4-tf", ADAM_LR, compiled=True, keys=TF1_KEYS), "1.15", []),
    # Keras 2.9+ register their new optimizers as "Custom>Adam", the name their H5 files write
    (model("2.16.0", CUSTOM_ADAM, compiled=True), "2.15", []),
    (model("2.16.0", CUSTOM_ADAM, compiled=True), "2.8", [Code.KERAS_UNKNOWN_OBJECT]),
    # TF 1.13-2.2 read training_config's sample_weight_mode, which Keras 2.3+ do not write
    (model("2.4.0", ADAM_OK, compiled=True), "1.15", [Code.KERAS_COMPILE_ARGUMENT]),
    (model("2.4.0", ADAM_OK, compiled=True), "2.3", []),
    (model("2.4.0", ADAM_OK, compiled=True), "2.21", []),
]


@pytest.mark.parametrize(("artifact", "release", "expected"), CASES)
def test_objects_rule(artifact: Artifact, release: str, expected: list[Code]) -> None:
    assert errors(artifact, release) == expected


def test_a_declared_custom_object_resolves() -> None:
    found = model("2.8.0", CUSTOM_LAYER, LAMBDA_ACT)
    assert errors(found, "2.8", custom_objects=("MyLayer",)) == [Code.KERAS_UNKNOWN_OBJECT]
    assert errors(found, "2.8", custom_objects=("MyLayer", "<lambda>")) == []


def test_the_message_is_the_consumers_keras_text() -> None:
    found = model("2.15.0", CONV_CLASS, LAMBDA_ACT)
    (old,) = [f for f in verdict(found, "2.8").findings if f.code == Code.KERAS_UNKNOWN_OBJECT]
    (new,) = [f for f in verdict(found, "2.21").findings if f.code == Code.KERAS_UNKNOWN_OBJECT]
    assert "Unknown activation function: <lambda>" in old.message
    assert "Could not interpret activation function identifier: <lambda>" in new.message
    assert old.fix is not None and old.fix.kind == FixKind.REGISTER_CUSTOM_OBJECT


def test_a_compile_only_failure_says_compile_false_loads_it() -> None:
    found = verdict(model("2.2.4-tf", ADAM_LR, compiled=True), "2.21")
    codes = [f.code for f in found.findings]
    assert Code.KERAS_COMPILE_ONLY in codes
    (arg,) = [f for f in found.findings if f.code == Code.KERAS_COMPILE_ARGUMENT]
    assert "'lr'" in arg.message and arg.fix is not None
    assert arg.fix.kind == FixKind.LOAD_WITHOUT_COMPILE


def test_a_layer_failure_is_not_called_compile_only() -> None:
    found = verdict(model("2.8.0", CUSTOM_LAYER, MY_LOSS, compiled=True), "2.8")
    assert Code.KERAS_COMPILE_ONLY not in [f.code for f in found.findings]


def test_a_keras_nobody_measured_is_unknown_never_loads() -> None:
    found = verdict(model("2.8.0", CUSTOM_LAYER), "2.21", keras="9.1")
    (note,) = [f for f in found.findings if f.code == Code.KERAS_VERSION_UNKNOWN]
    assert note.severity == Severity.INFO
    assert found.status == Status.UNKNOWN and found.loads is None


def test_a_newer_keras_3_constructor_argument_in_an_older_keras_3() -> None:
    # Keras 3.15's Dense takes quantization_config; Keras 3.0's does not (measured chains)
    dense = KerasLayer("Dense", "dense", ("name", "quantization_config", "units"))
    ref = KerasObjectRef("layers", "Dense", "class", "dense", module="keras.layers")
    keras = KerasModel("keras-zip", "3.15.1", model_class="Sequential", layers=(dense,),
                       objects=(ref,))  # fmt: skip
    found = Artifact("m", "keras", 1, "0" * 64, keras=keras)
    assert errors(found, "2.21", keras="3.0") == [Code.KERAS_ARGUMENT_UNKNOWN]
    assert errors(found, "2.21", keras="3.15") == []
