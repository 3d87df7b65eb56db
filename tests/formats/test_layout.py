"""Which files make the model an object key belongs to (`formats.layout`), read from
any Tree the same way: a local folder here, an object store in the pipeline tests."""

from __future__ import annotations

import pytest

from tests.truth import SHARED
from worker.formats.layout import in_saved_model, is_saved_model_part, model_folder, read_object
from worker.formats.read import read_path
from worker.formats.source import DirectoryTree

A = SHARED / "artifacts"


# The folder a Tree is opened at for a key, and whether the key brings a SavedModel.
@pytest.mark.parametrize(
    ("key", "folder", "saved_model"),
    [
        ("ranking/1/saved_model.pb", "ranking/1", True),
        ("ranking/1/saved_model.pbtxt", "ranking/1", True),
        ("ranking/1/variables/variables.index", "ranking/1", True),
        ("variables/variables.index", "", True),
        ("saved_model.pb", "", True),
        ("edge/frozen.pb", "edge", False),
        ("frozen.pb", "", False),
        ("ckpt/model.ckpt-1.index", "ckpt", False),
        ("models/model.tar.gz", "models", False),
    ],
)
def test_model_folder(key: str, folder: str, saved_model: bool) -> None:
    assert (model_folder(key), in_saved_model(key)) == (folder, saved_model)


# Files inside a SavedModel that are no model of their own.
@pytest.mark.parametrize(
    ("key", "part"),
    [
        ("m/1/fingerprint.pb", True),
        ("m/1/keras_metadata.pb", True),
        ("m/1/assets/vocab.pb", True),
        ("m/1/assets.extra/tf_serving_warmup_requests", True),
        ("m/1/saved_model.pb", False),
        ("m/frozen.pb", False),
    ],
)
def test_is_saved_model_part(key: str, part: bool) -> None:
    assert is_saved_model_part(key) is part


@pytest.mark.parametrize("name", ["saved_model.pb", "variables/variables.index"])
def test_a_saved_model_file_brings_its_folder(name: str) -> None:
    root = A / "tf2.12/savedmodel_v1_stripped"
    (artifact,) = read_object(DirectoryTree(root), name, str(root))
    assert artifact == read_path(str(root))[0]


def test_any_other_file_is_read_alone() -> None:
    root = A / "tf2.21/frozen_graph"
    (artifact,) = read_object(DirectoryTree(root), "frozen_graph.pb", str(root))
    assert artifact == read_path(str(root / "frozen_graph.pb"))[0]
