"""Layer and model names Keras 3 refuses (keras.layer-name), on constructed models.

What real Keras 3 does with such names is checked row by row in
test_keras_names_agreement.py (every Keras 3 minor) and in the whole-model sets."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.compat.test_keras import DENSE, INPUT2, first_error, model
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.keras_names import name_findings, refused_names
from worker.model.artifact import Artifact
from worker.model.findings import Code, FixKind, Severity
from worker.model.keras import KerasLayer, KerasModel
from worker.notify.fixes import fix_text, plain

SLASHED = KerasLayer("Dense", "block1/dense", ("name", "units"))
NESTED = KerasLayer("Dense", "inner/dense", ("name", "units"), depth=2)

CASES = [
    # '/' in a layer's name: every Keras 3 refuses it, Keras 2 wrote it and reads it back
    (model("2.15.0", INPUT2, SLASHED), "2.16", Code.KERAS_LAYER_NAME),
    (model("2.15.0", INPUT2, SLASHED), "2.21", Code.KERAS_LAYER_NAME),
    (model("2.15.0", INPUT2, SLASHED), "2.15", None),
    (model("2.6.0", INPUT2, SLASHED), "2.6", None),
    # in a layer of a nested model, and in the model's own name
    (model("2.15.0", INPUT2, NESTED), "2.18", Code.KERAS_LAYER_NAME),
    (model("2.15.0", INPUT2, DENSE, model_name="net/v1"), "2.18", Code.KERAS_LAYER_NAME),
    # other characters Keras 2 writes load in Keras 3
    (model("2.15.0", INPUT2, replace(DENSE, name="dense.v1-a>b\\c")), "2.21", None),
]


@pytest.mark.parametrize(("artifact", "release", "code"), CASES)
def test_a_name_holding_a_slash_fails_only_in_keras_3(
    artifact: Artifact, release: str, code: Code | None
) -> None:
    assert first_error(artifact, release) == code


def test_the_finding_names_the_first_layer_and_the_fix_renames_it() -> None:
    artifact = model("2.15.0", INPUT2, SLASHED, replace(SLASHED, name="block2/dense"))
    consumer = replace(load_catalog().consumer("2.21.0"), keras="3.15")
    verdict = check_artifact(artifact, consumer, load_catalog())
    (found,) = [f for f in verdict.findings if f.code == Code.KERAS_LAYER_NAME]
    assert found.severity == Severity.ERROR
    assert "'block1/dense' (Dense)" in found.message and "1 other name" in found.message
    assert found.fix is not None and found.fix.kind == FixKind.RENAME_LAYERS
    assert (found.fix.name, found.fix.keras) == ("block1/dense", "2.15.0")
    text = fix_text(found.fix.to_json(), "svc", plain)
    assert "Keras 2.15.0" in text and "block1_dense" in text


def test_the_fix_says_how_to_rename_from_the_file_and_to_save_as_h5() -> None:
    keras = KerasModel("hdf5", "2.6.0", model_class="Functional", layers=(INPUT2, SLASHED))
    (found,) = name_findings(keras, [(3, 6)])
    assert found.fix is not None and found.fix.value is None
    text = fix_text(found.fix.to_json(), "svc", plain)
    assert "model_from_json" in text and 'model.save("renamed.h5")' in text
    assert "renumbered" not in text


def test_a_nested_model_gets_the_renumbering_step_in_an_h5_file_only() -> None:
    # measured (tests/fixtures/keras-rename): renamed, a nested model's call still fails
    inner = KerasLayer("Functional", "inner", ("name", "layers"))
    layers = (INPUT2, inner, replace(SLASHED, depth=2), DENSE)
    h5 = KerasModel("hdf5", "2.15.0", model_class="Functional", layers=layers)
    (found,) = name_findings(h5, [(3, 15)])
    assert found.fix is not None and found.fix.value == "nested"
    text = fix_text(found.fix.to_json(), "svc", plain)
    assert "renumbered" in text and "[name, 1, 0, {}] as [name, 0, 0, {}]" in text
    (zipped,) = name_findings(replace(h5, container="keras-zip"), [(3, 15)])
    assert zipped.fix is not None and zipped.fix.value is None


def test_a_sequential_name_is_met_before_its_layers_a_functional_one_after() -> None:
    layers = (INPUT2, SLASHED)
    sequential = KerasModel("hdf5", "2.15.0", model_class="Sequential", model_name="s/q",
                            layers=layers)  # fmt: skip
    functional = replace(sequential, model_class="Functional")
    assert refused_names(sequential)[0][0] == "s/q"
    assert refused_names(functional)[0][0] == "block1/dense"


def test_a_keras_3_no_file_with_such_a_name_was_measured_in_is_unknown() -> None:
    keras = KerasModel("hdf5", "2.15.0", layers=(INPUT2, SLASHED))
    (found,) = name_findings(keras, [(3, 99)])
    assert found.code == Code.KERAS_LAYER_UNMEASURED and found.severity == Severity.INFO
    assert name_findings(keras, [(2, 15)]) == []
