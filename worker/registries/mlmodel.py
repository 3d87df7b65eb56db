"""An MLflow model directory: its `MLmodel` file says where the TensorFlow artifact is.

MLflow's flavors lay a TensorFlow model out in a few ways (`mlflow.tensorflow`
and `mlflow.keras` in MLflow 3.x):
- `tensorflow`, `model_type: tf2-module` or `tf1-estimator`: a SavedModel
  directory named by `saved_model_dir` (`tf2model` by default);
- `tensorflow`, `model_type: keras`: under `data` (default `data`),
  `model.keras`, `model.h5`, or a SavedModel directory `model/`;
- `keras` (Keras 3): under `data`, `model.keras`, or `model/` (a SavedModel
  exported with `save_exported_model`).
A model logged another way (a `.tflite` or `.keras` file logged with a pyfunc
wrapper, say) has no such flavor: then the first TensorFlow file found in the
directory is read, and the report says so.

Only `MLmodel` and the files the chosen artifact needs are opened; the tree is
listed once, and nothing else is read.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from worker.errors import InvalidArtifact, UnsupportedArtifact
from worker.formats.read import read_saved_model_dir, read_source
from worker.formats.source import Tree
from worker.model.artifact import Artifact

MLMODEL = "MLmodel"
MAX_MLMODEL_BYTES = 1 << 20
SAVED_MODEL_GRAPHS = ("saved_model.pb", "saved_model.pbtxt")
MODEL_FILE_SUFFIXES = (".keras", ".h5", ".hdf5", ".tflite")


class NoTensorFlowModel(UnsupportedArtifact):
    """The model directory holds no TensorFlow artifact (a scikit-learn model, say):
    nothing of ours to check or tag."""


@dataclass(frozen=True)
class Target:
    """Where the TensorFlow artifact is in the model directory: a SavedModel directory
    (`saved_model`, '' for the top) or one file, and how it was found."""

    path: str
    saved_model: bool
    found_by: str  # "flavor tensorflow", "flavor keras" or "search"


def parse_mlmodel(text: bytes) -> dict[str, Any]:
    """The MLmodel YAML as a mapping; InvalidArtifact for anything else."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidArtifact(f"MLmodel is not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidArtifact("MLmodel is not a YAML mapping")
    return data


def _is_saved_model(names: set[str], folder: str) -> bool:
    prefix = f"{folder}/" if folder else ""
    return any(f"{prefix}{graph}" in names for graph in SAVED_MODEL_GRAPHS)


def _data_target(names: set[str], data: str, found_by: str) -> Target | None:
    for candidate in ("model.keras", "model.h5", "model"):
        path = posixpath.join(data, candidate)
        if candidate != "model" and path in names:
            return Target(path, False, found_by)
        if candidate == "model" and _is_saved_model(names, path):
            return Target(path, True, found_by)
    if _is_saved_model(names, data):
        return Target(data, True, found_by)
    return None


def find_target(mlmodel: dict[str, Any], names: Sequence[str]) -> Target:
    """The TensorFlow artifact an MLmodel describes among the directory's `names`.

    UnsupportedArtifact when the directory holds none (a scikit-learn model, say)."""
    listed = set(names)
    flavors = mlmodel.get("flavors")
    flavors = flavors if isinstance(flavors, dict) else {}
    tensorflow = flavors.get("tensorflow")
    if isinstance(tensorflow, dict):
        folder = tensorflow.get("saved_model_dir")
        if isinstance(folder, str) and _is_saved_model(listed, folder.strip("/")):
            return Target(folder.strip("/"), True, "flavor tensorflow")
        data = tensorflow.get("data", "data")
        if isinstance(data, str) and (found := _data_target(listed, data, "flavor tensorflow")):
            return found
    keras = flavors.get("keras")
    if isinstance(keras, dict):
        data = keras.get("data", "data")
        if isinstance(data, str) and (found := _data_target(listed, data, "flavor keras")):
            return found
    return search_target(listed)


def search_target(names: set[str]) -> Target:
    """A directory without a TensorFlow flavor: its shallowest SavedModel, else its first
    model file (sorted by depth, then name)."""
    graphs = sorted(
        (n for n in names if posixpath.basename(n) in SAVED_MODEL_GRAPHS),
        key=lambda n: (n.count("/"), n),
    )
    if graphs:
        return Target(posixpath.dirname(graphs[0]), True, "search")
    files = sorted(
        (n for n in names if n.lower().endswith(MODEL_FILE_SUFFIXES)),
        key=lambda n: (n.count("/"), n),
    )
    if files:
        return Target(files[0], False, "search")
    raise NoTensorFlowModel(
        "the MLflow model holds no TensorFlow artifact (no SavedModel, .keras, .h5 or .tflite)"
    )


def read_mlmodel(tree: Tree) -> dict[str, Any]:
    """The directory's MLmodel; an empty mapping when it has none (a version registered
    from a plain directory: its files are searched)."""
    if MLMODEL not in tree.names():
        return {}
    source = tree.open(MLMODEL)
    if source.size > MAX_MLMODEL_BYTES:
        raise InvalidArtifact(f"{tree.name}/MLmodel: {source.size} bytes, over the 1 MiB cap")
    return parse_mlmodel(source.read_at(0, source.size))


def read_registered_model(tree: Tree, display: str) -> tuple[list[Artifact], Target]:
    """The TensorFlow artifacts of the MLflow model directory `tree` (named `display`),
    and where they were found."""
    target = find_target(read_mlmodel(tree), tree.names())
    shown = posixpath.join(display, target.path) if target.path else display
    if target.saved_model:
        return [read_saved_model_dir(tree, target.path, shown)], target
    return read_source(tree.open(target.path), shown), target
