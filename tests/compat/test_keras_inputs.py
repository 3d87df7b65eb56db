"""`keras.input-shape`: a Keras 2 Sequential's declared input, as Keras 3 rebuilds it.

Rows built from the rule's source (keras/src/legacy/saving/saving_utils.py renames a
non-InputLayer's `batch_input_shape` to `input_shape`); what real releases did is
checked row by row in test_keras_agreement.py."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.keras_inputs import request_shape, shown
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Code, Severity, Stage
from worker.model.keras import KerasLayer, KerasModel
from worker.model.verdict import Verdict
from worker.notify.fixes import fix_text, plain

SHAPE = "batch_input_shape"


def layer(cls: str, shape: tuple[int | None, ...] | None = None, **extra: object) -> KerasLayer:
    keys = ("name", SHAPE) if shape is not None else ("name",)
    return KerasLayer(cls, cls.lower(), keys, batch_input_shape=shape, **extra)  # type: ignore[arg-type]


INPUT = layer("InputLayer", (None, 4))
DENSE4 = layer("Dense", (None, 4))


def verdict(*layers: KerasLayer, release: str = "2.21", version: str = "2.1.6-tf",
            model_class: str = "Sequential") -> Verdict:  # fmt: skip
    keras = KerasModel("hdf5", version, model_class=model_class, layers=layers)
    artifact = Artifact("m", "keras-h5", 1, "0" * 64, keras=keras)
    return check_artifact(artifact, load_catalog().consumer(release), load_catalog())


def shape_finding(v: Verdict) -> tuple[Severity, Stage] | None:
    found = [f for f in v.findings if f.code == Code.KERAS_INPUT_SHAPE]
    return (found[0].severity, found[0].stage) if found else None


ERROR_AT_REQUEST = (Severity.ERROR, Stage.REQUEST)
ERROR_AT_LOAD = (Severity.ERROR, Stage.LOAD)
CASES = [
    # a first layer carrying batch_input_shape, no InputLayer (TF 1.x, 2.0-2.2): Keras 3 only
    ((DENSE4, layer("Dense")), "2.21", ERROR_AT_REQUEST),
    ((DENSE4, layer("Dense")), "2.16", ERROR_AT_REQUEST),
    ((DENSE4, layer("Dense")), "2.15", None),
    # an InputLayer first (TF 2.3+): Keras 3 reads its batch_input_shape as batch_shape
    ((INPUT, DENSE4), "2.21", None),
    # a fixed-rank layer on the deeper input fails the load; through Dense/Embedding too
    ((layer("LSTM", (None, 5, 2)), layer("Dense")), "2.21", ERROR_AT_LOAD),
    ((layer("Conv1D", (None, 8, 2)), layer("GlobalMaxPooling1D")), "2.21", ERROR_AT_LOAD),
    ((layer("Embedding", (None, 6)), layer("GlobalAveragePooling1D")), "2.21", ERROR_AT_LOAD),
    # BatchNormalization/LayerNormalization's positive axis names the added one (tuned)
    ((layer("BatchNormalization", (None, 4)), layer("Dense")), "2.21", ERROR_AT_LOAD),
    ((layer("Dense", (None, 4)), layer("LayerNormalization")), "2.21", ERROR_AT_LOAD),
    # a declared last axis of 1: Keras 3 expands the request; it serves, one axis more
    ((layer("Dense", (None, 1)), layer("Dense")), "2.21", (Severity.WARNING, Stage.LOAD)),
    # a layer of unmeasured rank behaviour: the request still fails on the input's rank
    ((layer("Embedding", (None, 6)), layer("Lambda"), layer("LSTM")), "2.21", ERROR_AT_REQUEST),
    # Flatten leaves the last axis unknown: a Dense after it fails the load (tuned)
    ((layer("Embedding", (None, 6)), layer("Flatten"), layer("Dense")), "2.21", ERROR_AT_LOAD),
]


@pytest.mark.parametrize(("layers", "release", "expected"), CASES)
def test_the_declared_input_as_each_keras_rebuilds_it(
    layers: tuple[KerasLayer, ...], release: str, expected: tuple[Severity, Stage] | None
) -> None:
    assert shape_finding(verdict(*layers, release=release)) == expected


def test_a_request_error_loads_and_does_not_serve() -> None:
    v = verdict(DENSE4, layer("Dense"))
    assert v.loads is True and v.serves is False


def test_the_message_and_fix_carry_the_declared_shape_and_the_failing_request() -> None:
    (finding,) = [f for f in verdict(DENSE4).findings if f.code == Code.KERAS_INPUT_SHAPE]
    assert "(None, None, 4)" in finding.message and "(1, 4)" in finding.message
    assert finding.fix is not None and finding.fix.shape == "(None, 4)"


def test_only_keras2_sequentials_read_by_the_legacy_path() -> None:
    # Keras 3 files, functional models and entries naming their module are not renamed
    assert shape_finding(verdict(DENSE4, version="3.5.0")) is None
    assert shape_finding(verdict(DENSE4, model_class="Functional")) is None
    archived = replace(DENSE4, has_module=True)
    assert shape_finding(verdict(archived, version="2.12.0")) is None


def test_nested_layers_are_not_the_model_input() -> None:
    nested = replace(layer("Dense", (None, 4)), depth=2)
    assert shape_finding(verdict(layer("Sequential"), nested)) is None


@pytest.mark.parametrize(
    ("shape", "text", "served"),
    [
        ((None, 4), "(None, 4)", (1, 4)),
        ((None,), "(None,)", (1,)),
        ((8, None, 3), "(8, None, 3)", (8, 1, 3)),
    ],
)
def test_shapes_are_shown_as_python_tuples(
    shape: tuple[int | None, ...], text: str, served: tuple[int, ...]
) -> None:
    assert shown(shape) == text and request_shape(shape) == served


def test_the_fix_names_the_shape_to_declare() -> None:
    (finding,) = [f for f in verdict(DENSE4).findings if f.code == Code.KERAS_INPUT_SHAPE]
    assert finding.fix is not None
    text = fix_text(finding.fix.to_json(), "svc", plain)
    assert "keras.Input(batch_shape=(None, 4))" in text and "Keras 2.4" in text


# The facts each Keras was measured to have (tools/keras/build_inputs.py: a TF 2.2-style
# Sequential H5 loaded and asked (1, 4); Embedding.from_config with input_length), against
# what the rules predict for a consumer running exactly that Keras.
MEASURED = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "keras_inputs.json").read_text()
)["keras"]
EMBEDDING = KerasLayer(
    "Embedding", "e", ("input_dim", "input_length", "name", "output_dim"), batch_input_shape=None
)


def keras_consumer(version: str) -> Consumer:
    release = "2.21" if version.startswith("3") else "2.15"
    return replace(load_catalog().consumer(release), keras=version.removesuffix("-tf"))


def test_every_keras_measured_is_covered() -> None:
    majors = {version.split(".")[0] for version in MEASURED}
    assert majors == {"2", "3"} and len(MEASURED) >= 20


@pytest.mark.parametrize("version", sorted(MEASURED))
def test_the_rule_predicts_what_each_measured_keras_does(version: str) -> None:
    facts = MEASURED[version]
    sequential = facts["sequential_first_layer"]
    keras = KerasModel(
        "hdf5",
        "2.3.0-tf",
        model_class="Sequential",
        layers=(layer("Activation", tuple(sequential["declared"])),),
    )
    artifact = Artifact("m", "keras-h5", 1, "0" * 64, keras=keras)
    v = check_artifact(artifact, keras_consumer(version), load_catalog())
    predicted = shape_finding(v)
    assert (predicted == ERROR_AT_REQUEST) == (sequential["request"] == "fails")
    rebuilt = tuple(sequential["rebuilt"])
    assert (predicted is not None) == (rebuilt != tuple(sequential["declared"]))
    embedding = KerasModel("hdf5", "2.15.0", model_class="Sequential", layers=(INPUT, EMBEDDING))
    artifact = Artifact("m", "keras-h5", 1, "0" * 64, keras=embedding)
    v = check_artifact(artifact, keras_consumer(version), load_catalog())
    removed = any(f.code == Code.KERAS_ARGUMENT_REMOVED for f in v.findings)
    assert removed == (facts["embedding_input_length"] == "rejected")
