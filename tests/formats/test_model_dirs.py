"""Model directories: they never read outside themselves, and shapes TensorFlow's
loaders refuse are refused here with one line. Each case is a copy of a
SavedModel TensorFlow wrote, then bent."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.truth import SHARED
from worker.errors import InvalidArtifact
from worker.formats.read import read_path

MODEL = SHARED / "artifacts/tf2.21/savedmodel_v2"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    root = tmp_path / "model"
    shutil.copytree(MODEL, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # the fixtures are read-only
    return root


def _refused(path: Path, match: str) -> None:
    with pytest.raises(InvalidArtifact, match=match) as caught:
        read_path(str(path))
    assert "\n" not in str(caught.value)


def test_the_copy_reads(model: Path) -> None:
    (artifact,) = read_path(str(model))
    assert artifact.format == "savedmodel"


def test_symlink_inside_the_directory_is_followed(model: Path) -> None:
    (model / "saved_model.pb").rename(model / "real.pb")
    (model / "saved_model.pb").symlink_to("real.pb")
    (artifact,) = [a for a in read_path(str(model)) if a.format == "savedmodel"]
    assert artifact.meta_graphs


# --- Symlinks ----------------------------------------------------------------------


def test_symlink_loop_is_refused(model: Path) -> None:
    (model / "assets").mkdir()
    (model / "assets" / "a").symlink_to("b")
    (model / "assets" / "b").symlink_to("a")
    _refused(model, "assets/[ab] is a dangling or looping symlink")


def test_dangling_saved_model_symlink_is_refused(model: Path) -> None:
    (model / "saved_model.pb").unlink()
    (model / "saved_model.pb").symlink_to("gone.pb")
    _refused(model, "saved_model.pb is a dangling")


@pytest.mark.parametrize("via", ["directory", "file"])
def test_saved_model_symlink_pointing_outside_is_refused(
    model: Path, tmp_path: Path, via: str
) -> None:
    outside = tmp_path / "elsewhere.pb"
    (model / "saved_model.pb").rename(outside)
    (model / "saved_model.pb").symlink_to(outside)
    _refused(model if via == "directory" else model / "saved_model.pb", "points outside")


def test_symlinked_directory_pointing_outside_is_refused(model: Path, tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (model / "assets").symlink_to(tmp_path / "secrets")
    _refused(model, "assets points outside")


# --- Directory shapes ---------------------------------------------------------------


def _saved_model_is_a_directory(root: Path) -> None:
    (root / "saved_model.pb").unlink()
    (root / "saved_model.pb").mkdir()


def _variables_is_a_file(root: Path) -> None:
    shutil.rmtree(root / "variables")
    (root / "variables").write_bytes(b"not a directory")


def _index_is_a_directory(root: Path) -> None:
    (root / "variables" / "variables.index").unlink()
    (root / "variables" / "variables.index").mkdir()


def _only_variables(root: Path) -> None:
    for path in root.iterdir():
        if path.name != "variables":
            path.unlink()


SHAPES: dict[str, tuple[Callable[[Path], None], str]] = {
    "saved_model.pb is a directory": (_saved_model_is_a_directory, "saved_model.pb is a direc"),
    "variables is a file": (_variables_is_a_file, "variables is a file"),
    "variables.index is a directory": (_index_is_a_directory, "variables.index is a direc"),
    "only variables/": (_only_variables, "has variables/ but no saved_model.pb"),
}


@pytest.mark.parametrize(("bend", "match"), SHAPES.values(), ids=SHAPES.keys())
def test_directory_shape_tensorflow_refuses_is_refused(
    model: Path, bend: Callable[[Path], None], match: str
) -> None:
    bend(model)
    _refused(model, match)


def test_serving_base_path_without_a_numeric_version_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(MODEL, base / "latest")
    _refused(base, "no numeric version directory")


def test_serving_base_path_with_numeric_versions_reads_each(tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(MODEL, base / "1")
    shutil.copytree(SHARED / "artifacts/tf2.12/savedmodel_v2", base / "2")
    assert [os.path.basename(a.path) for a in read_path(str(base))] == ["1", "2"]
