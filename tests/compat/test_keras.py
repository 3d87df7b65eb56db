"""The Keras rules on constructed models: one row per rule, in the order Keras meets them.

What real releases do is checked row by row in test_keras_agreement.py; these rows pin
each rule's boundary (the Keras versions it applies to) on the smallest model that
shows it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.model.artifact import Artifact
from worker.model.findings import Code, Severity
from worker.model.keras import KerasLayer, KerasModel, PythonCode

INPUT2 = KerasLayer("InputLayer", "in", ("batch_input_shape", "dtype", "name"))
INPUT3 = KerasLayer("InputLayer", "in", ("batch_shape", "dtype", "name", "optional"))
DENSE = KerasLayer("Dense", "d", ("name", "units"))
LSTM2 = KerasLayer("LSTM", "l", ("name", "time_major", "units"))
LAMBDA37 = KerasLayer("Lambda", "f", ("function",), code=PythonCode("3.0-3.7", 110))
LAMBDA311 = KerasLayer("Lambda", "f", ("function",), code=PythonCode("3.11+", 170))
POOL = KerasLayer("GlobalAveragePooling1D", "p", ("keepdims", "name"))
CONV_GROUPS = KerasLayer("Conv1D", "c", ("filters", "groups", "kernel_size", "name"))


def model(version: str, *layers: KerasLayer, container: str = "hdf5", **extra: str) -> Artifact:
    keras = KerasModel(container, version, model_class="Sequential", layers=layers, **extra)
    fmt = "keras" if container == "keras-zip" else "keras-h5"
    return Artifact("m", fmt, 1, "0" * 64, keras=keras)


def first_error(artifact: Artifact, release: str, python: str | None = None) -> Code | None:
    consumer = replace(load_catalog().consumer(release), python=python)
    verdict = check_artifact(artifact, consumer, load_catalog())
    errors = [f.code for f in verdict.findings if f.severity == Severity.ERROR]
    assert (verdict.loads is False) == bool(errors)
    return errors[0] if errors else None


ZIP = "keras-zip"
CASES = [
    # the .keras zip: Keras 2.12 reads it, 2.11 and older take it for a SavedModel or HDF5
    (model("2.12.0", INPUT2, DENSE, container=ZIP), "2.11", None, Code.KERAS_FORMAT),
    (model("2.12.0", INPUT2, DENSE, container=ZIP), "2.12", None, None),
    # Keras 3 files: no Keras 2 rebuilds them; every Keras 3 does
    (model("3.5.0", INPUT3, DENSE), "2.15", None, Code.KERAS_NEWER_MAJOR),
    (model("3.5.0", INPUT3, DENSE), "2.16", None, None),
    # Keras 2 in Keras 3: time_major is refused; a plain Dense is not
    (model("2.15.0", INPUT2, LSTM2), "2.16", None, Code.KERAS_ARGUMENT_REMOVED),
    (model("2.15.0", INPUT2, DENSE), "2.21", None, None),
    # a Keras 2 archive loads only in its own Keras 2 minor
    (model("2.13.1", INPUT2, DENSE, container=ZIP), "2.14", None, Code.KERAS_ARCHIVE_MINOR),
    (model("2.13.1", INPUT2, DENSE, container=ZIP), "2.13", None, None),
    # keepdims came with Keras 2.6
    (model("2.10.0", INPUT2, POOL), "2.5", None, Code.KERAS_ARGUMENT_UNKNOWN),
    (model("2.10.0", INPUT2, POOL), "2.6", None, None),
    # grouped convolutions: Conv1D-3D take `groups` from Keras 2.4 (TF 2.3)
    (model("2.5.0", INPUT2, CONV_GROUPS), "2.2", None, Code.KERAS_ARGUMENT_UNKNOWN),
    (model("2.5.0", INPUT2, CONV_GROUPS), "2.3", None, None),
    # marshalled Lambdas: Keras 3 asks for safe_mode; Keras 2 H5 loads where Python agrees
    (model("2.15.0", INPUT2, LAMBDA311), "2.18", "3.11", Code.KERAS_LAMBDA_SAFE_MODE),
    (model("2.15.0", INPUT2, LAMBDA311), "2.15", "3.11", None),
    (model("2.15.0", INPUT2, LAMBDA311), "2.15", "3.10", Code.KERAS_LAMBDA_PYTHON),
    (model("2.4.0", INPUT2, LAMBDA37), "2.12", None, Code.KERAS_LAMBDA_PYTHON),  # 3.8-3.11 only
]
EMBEDDING2 = KerasLayer("Embedding", "e", ("input_dim", "input_length", "name", "output_dim"))


# Embedding's input_length: Keras 3.0-3.1 reject it, 3.2 accepts it again
@pytest.mark.parametrize(
    ("keras", "expected"), [("3.0.5", Severity.ERROR), ("3.1.1", Severity.ERROR), ("3.2.1", None)]
)
def test_an_argument_keras3_accepts_again_only_later(keras: str, expected: Severity | None) -> None:
    consumer = replace(load_catalog().consumer("2.21"), keras=keras)
    verdict = check_artifact(model("2.15.0", INPUT2, EMBEDDING2), consumer, load_catalog())
    found = [f.severity for f in verdict.findings if f.code == Code.KERAS_ARGUMENT_REMOVED]
    assert found == ([expected] if expected else [])


def test_a_release_that_may_run_an_older_keras3_warns() -> None:
    # TF 2.16 without `keras:` may run any Keras 3 from 3.0
    verdict = check_artifact(
        model("2.15.0", INPUT2, EMBEDDING2), load_catalog().consumer("2.16"), load_catalog()
    )
    (finding,) = [f for f in verdict.findings if f.code == Code.KERAS_ARGUMENT_REMOVED]
    assert finding.severity == Severity.WARNING and verdict.loads is True


@pytest.mark.parametrize(("artifact", "release", "python", "expected"), CASES)
def test_each_rule_at_its_boundary(
    artifact: Artifact, release: str, python: str | None, expected: Code | None
) -> None:
    assert first_error(artifact, release, python) == expected


def test_an_undeclared_python_that_only_some_wheels_match_is_a_warning() -> None:
    # 2.12 has wheels for 3.8-3.11: 3.11 bytecode loads on one of them
    verdict = check_artifact(
        model("2.12.0", INPUT2, LAMBDA311), load_catalog().consumer("2.12"), load_catalog()
    )
    (finding,) = [f for f in verdict.findings if f.code == Code.KERAS_LAMBDA_PYTHON]
    assert finding.severity == Severity.WARNING and verdict.serves is True


def test_tf_serving_reads_no_keras_file_and_an_unknown_keras_is_unknown() -> None:
    artifact = model("2.15.0", INPUT2, DENSE)
    consumer = load_catalog().consumer("2.15")
    serving = check_artifact(artifact, replace(consumer, tf_serving=True), load_catalog())
    assert serving.loads is False and serving.findings[0].code == Code.KERAS_NOT_SERVABLE
    unknown = check_artifact(artifact, replace(consumer, keras=None), load_catalog())
    assert unknown.loads is None and unknown.findings[0].code == Code.KERAS_VERSION_UNKNOWN


INPUT3_K2 = KerasLayer("InputLayer", "in", ("batch_input_shape", "dtype", "name", "optional"))
ENGINE215 = "keras.src.engine.functional"
ENGINE212 = "keras.engine.functional"
CLASS_UNKNOWN = Code.KERAS_CLASS_UNKNOWN


# tf-keras: a TF 2.16+ consumer declared `keras==2.16`..`2.21` runs Keras 2 (tf_keras,
# TF_USE_LEGACY_KERAS=1), whose versions follow TensorFlow's minors
@pytest.mark.parametrize(
    ("artifact", "expected"),
    [
        (model("2.15.0", INPUT2, LSTM2), None),  # time_major is Keras 2's own argument
        (model("2.15.0", INPUT2, LAMBDA311), None),  # H5: no safe_mode question in Keras 2
        (model("3.5.0", INPUT3, DENSE), Code.KERAS_NEWER_MAJOR),
        # archives: Keras 2.15's weights' paths and module are tf-keras's too; 2.12's are not
        (model("2.15.0", INPUT2, DENSE, container=ZIP), None),
        (model("2.12.0", INPUT2, DENSE, container=ZIP), Code.KERAS_ARCHIVE_MINOR),
        (model("2.15.0", INPUT2, DENSE, container=ZIP, model_module=ENGINE215), None),
        (model("2.12.0", INPUT2, DENSE, container=ZIP, model_module=ENGINE212), CLASS_UNKNOWN),
        (model("2.21.0", INPUT2, DENSE, container=ZIP), None),
    ],
)
def test_a_tf_keras_consumer_runs_keras_2(artifact: Artifact, expected: Code | None) -> None:
    consumer = replace(load_catalog().consumer("2.21"), keras="2.21", python="3.11")
    verdict = check_artifact(artifact, consumer, load_catalog())
    errors = [f.code for f in verdict.findings if f.severity == Severity.ERROR]
    assert (errors[0] if errors else None) == expected
    assert Code.KERAS_VERSION_UNKNOWN not in [f.code for f in verdict.findings]


# tf-keras 2.21's InputLayer writes `optional`, which every older Keras 2 rejects
@pytest.mark.parametrize(("keras", "expected"), [("2.15", True), ("2.20", True), ("2.21", False)])
def test_tf_keras_2_21_input_layer_optional(keras: str, expected: bool) -> None:
    written = model("2.21.0", INPUT3_K2, DENSE)
    consumer = replace(load_catalog().consumer("2.21"), keras=keras, python="3.11")
    if keras == "2.15":
        consumer = replace(load_catalog().consumer("2.15"), python="3.11")
    verdict = check_artifact(written, consumer, load_catalog())
    codes = [f.code for f in verdict.findings if f.severity == Severity.ERROR]
    assert (codes[:1] == [Code.KERAS_ARGUMENT_UNKNOWN]) is expected


def _embedding(initializer: str) -> KerasLayer:
    return KerasLayer(
        "Embedding",
        "e",
        ("batch_input_shape", "dtype", "embeddings_initializer", "input_dim", "name"),
        batch_input_shape=(None, 20),
        integer_dtype="int32",
        drawing_initializers=(f"embeddings_initializer:{initializer}",) if initializer else (),
    )


@pytest.mark.parametrize(
    ("initializer", "release", "expected"),
    [
        # Keras 2.0 wrote the input's dtype on the first layer; tf.keras builds the weights
        # in it, and a drawing initializer fails (real ethnicolr 0.4.0 files)
        ("RandomUniform", "1.15", Code.KERAS_LAYER_DTYPE),
        ("RandomUniform", "2.15", Code.KERAS_LAYER_DTYPE),
        ("", "2.15", None),  # zeros and ones fit an integer variable
    ],
)
def test_an_integer_layer_dtype_fails_where_its_initializer_draws(
    initializer: str, release: str, expected: Code | None
) -> None:
    artifact = model("2.0.2", _embedding(initializer), DENSE)
    assert first_error(artifact, release) == expected


def test_the_reader_keeps_an_integer_layer_dtype_and_its_drawing_initializers() -> None:
    from worker.formats.keras import _integer_dtype

    config = {
        "dtype": "int32",
        "embeddings_initializer": {"class_name": "RandomUniform", "config": {}},
        "bias_initializer": {"class_name": "Zeros", "config": {}},
    }
    assert _integer_dtype(config) == ("int32", ("embeddings_initializer:RandomUniform",))
    assert _integer_dtype({**config, "dtype": "float32"}) == ("", ())
