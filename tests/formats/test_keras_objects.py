"""The objects a Keras file names, read from files real Keras wrote (tests/fixtures/keras)."""

from __future__ import annotations

from pathlib import Path

from worker.formats.keras_objects import compile_object_refs
from worker.formats.read import read_path
from worker.model.keras import KerasModel, KerasObjectRef

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "models"


def keras(name: str) -> KerasModel:
    (found,) = read_path(str(MODELS / name))
    assert found.keras is not None
    return found.keras


def refs(model: KerasModel, kind: str) -> list[KerasObjectRef]:
    return [o for o in model.objects if o.kind == kind]


def test_a_lambda_activation_keras_2_saved_by_its_name() -> None:
    model = keras("tf2.8/lambda_act.h5")
    assert ("<lambda>", "string", "conv1d") in [
        (o.name, o.form, o.where) for o in refs(model, "activations")
    ]
    assert not model.compiled


def test_a_keras_3_function_entry_names_its_module() -> None:
    model = keras("keras3.15/loss_fn.keras")
    (loss,) = refs(model, "losses")
    assert (loss.name, loss.form, loss.module, loss.where) == (
        "my_loss",
        "function",
        "builtins",
        "compile",
    )
    assert model.compiled


def test_a_registered_layer_keeps_its_registered_name() -> None:
    (layer,) = [
        o for o in refs(keras("keras3.15/registered_layer.keras"), "layers") if o.registered_name
    ]
    assert layer.registered_name == "Tfc>Scale2"


def test_the_h5_training_config_optimizer_and_its_arguments() -> None:
    model = keras("tf1.13/adam.h5")
    (adam,) = refs(model, "optimizers")
    assert adam.name == "Adam" and "lr" in adam.config_keys
    assert "sample_weight_mode" in model.compile_keys


def test_a_metric_wrapper_names_its_function() -> None:
    names = [(o.name, o.nested) for o in refs(keras("tf2.8/metric_fn.h5"), "metrics")]
    assert ("MeanMetricWrapper", True) in names and ("my_metric", True) in names


def test_accuracy_strings_are_compiles_own() -> None:
    # compile() resolves "accuracy"/"acc" from the outputs, never by lookup
    found = compile_object_refs({"loss": "mse", "metrics": [["accuracy", "acc", "my_metric"]]})
    assert [(o.kind, o.name, o.nested) for o in found] == [
        ("losses", "mse", False),
        ("metrics", "my_metric", True),
    ]
