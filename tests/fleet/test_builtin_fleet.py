"""The built-in fleet: every catalogued release, shipped in the package, never stale."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.errors import ConfigError
from worker.fleet.fleet import BUILTIN, BUILTIN_FILE, load_fleet
from worker.model.consumer import Loader

ROOT = Path(__file__).resolve().parents[2]


def test_builtin_fleet_has_every_catalogued_release_once() -> None:
    catalog = load_catalog()
    fleet = load_fleet(BUILTIN, catalog)
    assert [c.tensorflow for c in fleet.consumers] == [r.version for r in catalog.releases]
    assert {c.loader for c in fleet.consumers} == {Loader.SAVED_MODEL_V1}
    assert fleet.source == BUILTIN


def test_builtin_fleet_file_is_generated_from_the_catalog() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "builtin_fleet.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout


def test_builtin_fleet_ships_as_package_data() -> None:
    assert BUILTIN_FILE.is_relative_to(ROOT / "worker")
    assert '"worker.fleet" = ["data/*.yaml"]' in (ROOT / "pyproject.toml").read_text()


def test_missing_fleet_file_says_how_to_name_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_fleet(tmp_path / "fleet.yaml", load_catalog())
    message = str(caught.value)
    assert "fleet file not found" in message
    assert "--fleet FILE" in message and "TFCOMPAT_FLEET=FILE" in message
    assert "--fleet builtin" in message and "every TensorFlow release" in message
