"""MLflow model directories: MLmodel says where the TensorFlow artifact is, and only that
artifact is read (real TensorFlow-written fixtures under each flavor's layout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.mlflow_server import (
    keras_mlmodel,
    model_directory,
    pyfunc_mlmodel,
    tensorflow_mlmodel,
)
from worker.errors import InvalidArtifact
from worker.formats.source import DirectoryTree
from worker.registries.mlmodel import (
    NoTensorFlowModel,
    Target,
    find_target,
    parse_mlmodel,
    read_registered_model,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TF221 = FIXTURES / "tf-real" / "artifacts" / "tf2.21"
KERAS = FIXTURES / "keras" / "models" / "tf2.21"
TFLITE = FIXTURES / "tflite" / "models" / "tf2.21"


# Where each flavor puts the model.
@pytest.mark.parametrize(
    ("mlmodel", "names", "target"),
    [
        (
            {
                "flavors": {
                    "tensorflow": {"saved_model_dir": "tf2model", "model_type": "tf2-module"}
                }
            },
            ["MLmodel", "tf2model/saved_model.pb", "tf2model/variables/variables.index"],
            Target("tf2model", True, "flavor tensorflow"),
        ),
        (
            {"flavors": {"tensorflow": {"model_type": "keras", "data": "data"}}},
            ["MLmodel", "data/model.keras", "data/keras_module.txt"],
            Target("data/model.keras", False, "flavor tensorflow"),
        ),
        (
            {"flavors": {"tensorflow": {"model_type": "keras", "data": "data"}}},
            ["MLmodel", "data/model.h5"],
            Target("data/model.h5", False, "flavor tensorflow"),
        ),
        (
            {"flavors": {"tensorflow": {"model_type": "keras", "data": "data"}}},
            ["MLmodel", "data/model/saved_model.pb"],
            Target("data/model", True, "flavor tensorflow"),
        ),
        (
            {"flavors": {"keras": {"data": "data", "save_exported_model": True}}},
            ["MLmodel", "data/model/saved_model.pb", "data/model/variables/variables.index"],
            Target("data/model", True, "flavor keras"),
        ),
        (
            {"flavors": {"python_function": {"loader_module": "x"}}},
            ["MLmodel", "code/wrapper.py", "artifacts/detector.tflite"],
            Target("artifacts/detector.tflite", False, "search"),
        ),
        (
            {},
            ["a/b/saved_model.pb", "a/saved_model.pb", "model.keras"],
            Target("a", True, "search"),
        ),
    ],
)
def test_target_of_each_layout(
    mlmodel: dict[str, object], names: list[str], target: Target
) -> None:
    assert find_target(mlmodel, names) == target


def test_a_directory_without_tensorflow_is_no_tensorflow_model() -> None:
    with pytest.raises(NoTensorFlowModel):
        find_target({"flavors": {"sklearn": {}}}, ["MLmodel", "model.pkl"])


@pytest.mark.parametrize("text", [b"flavors: [", b"- a list", b"\x00\xff"])
def test_an_mlmodel_that_is_not_a_yaml_mapping_is_invalid(text: bytes) -> None:
    with pytest.raises(InvalidArtifact):
        parse_mlmodel(text)


# Reading: real TensorFlow files under MLflow's layouts.
def test_a_tensorflow_flavor_savedmodel_is_read() -> None:
    root = model_directory({"tf2model": TF221 / "savedmodel_v2"}, tensorflow_mlmodel())
    artifacts, target = read_registered_model(DirectoryTree(root), "mlflow-artifacts:/m")
    assert target.path == "tf2model"
    assert [(a.path, a.format) for a in artifacts] == [
        ("mlflow-artifacts:/m/tf2model", "savedmodel")
    ]


def test_a_keras_flavor_file_is_read() -> None:
    root = model_directory({"data/model.keras": KERAS / "dense.keras"}, keras_mlmodel())
    artifacts, _ = read_registered_model(DirectoryTree(root), "m")
    assert [a.path for a in artifacts] == ["m/data/model.keras"]


def test_a_tflite_file_is_found_without_a_flavor() -> None:
    root = model_directory({"artifacts/dense.tflite": TFLITE / "dense.tflite"}, pyfunc_mlmodel())
    artifacts, target = read_registered_model(DirectoryTree(root), "m")
    assert target.found_by == "search" and artifacts[0].format == "tflite"


class CountingTree(DirectoryTree):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.opened: list[str] = []

    def open(self, name: str):  # type: ignore[no-untyped-def]
        self.opened.append(name)
        return super().open(name)


def test_only_mlmodel_and_the_artifacts_files_are_opened() -> None:
    files = {"tf2model": TF221 / "savedmodel_v2", "extra/model.keras": KERAS / "dense.keras"}
    tree = CountingTree(model_directory(files, tensorflow_mlmodel()))
    read_registered_model(tree, "m")
    assert set(tree.opened) <= {
        "MLmodel",
        "tf2model/saved_model.pb",
        "tf2model/variables/variables.index",
    }
    assert not any("variables.data" in name for name in tree.opened)
