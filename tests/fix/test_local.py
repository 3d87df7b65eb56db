"""`tfcompat fix` on hostile paths: no link followed, nothing written outside -o."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.fix.test_cli import fix
from tests.truth import OWN
from worker.fix.local import OutputExists, UnsafePath, check_output, model_tree

MODEL = OWN / "artifacts" / "tf2.21" / "savedmodel_v1"


@pytest.fixture
def model(tmp_path: Path) -> Path:
    target = tmp_path / "model"
    shutil.copytree(MODEL, target)
    return target


def test_a_link_inside_the_model_is_refused(model: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("not yours")
    os.symlink(secret, model / "variables" / "extra")
    with pytest.raises(UnsafePath, match="symbolic link"):
        model_tree(str(model))
    result = fix(str(model), "--for", "tf==2.4", "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "symbolic link" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_model_path_that_is_a_link_is_refused(model: Path, tmp_path: Path) -> None:
    os.symlink(model, tmp_path / "alias")
    with pytest.raises(UnsafePath):
        model_tree(str(tmp_path / "alias"))


def test_an_existing_output_needs_force(model: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep").write_text("x")
    with pytest.raises(OutputExists):
        check_output(str(model), str(out), force=False)
    result = fix(str(model), "--for", "tf==2.4", "-o", str(out))
    assert result.returncode == 2 and "--force" in result.stderr
    assert (out / "keep").read_text() == "x"


def test_force_replaces_a_link_not_what_it_points_to(model: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("keep me")
    out = tmp_path / "out"
    os.symlink(elsewhere, out)
    result = fix(str(model), "--for", "tf==2.4", "-o", str(out), "--force")
    assert result.returncode == 0, result.stderr
    assert not out.is_symlink() and (out / "saved_model.pb").is_file()
    assert (elsewhere / "precious").read_text() == "keep me"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["precious"]


@pytest.mark.parametrize("where", [".", "variables", "variables/copy"])
def test_the_copy_never_goes_at_or_inside_the_model(model: Path, where: str) -> None:
    with pytest.raises(UnsafePath):
        check_output(str(model), str(model / where), force=True)


def test_the_copy_never_replaces_a_directory_holding_the_model(model: Path) -> None:
    with pytest.raises(UnsafePath):
        check_output(str(model), str(model.parent), force=True)


def test_an_invalid_model_is_refused_and_nothing_written(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "saved_model.pb").write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    result = fix(str(bad), "--for", "tf==2.4", "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "error" in result.stderr
    assert not (tmp_path / "out").exists()
