"""TFLite runtimes in a fleet: `tflite:` and `litert:` consumers, judged on .tflite only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.truth import SHARED
from worker.catalog.catalog import load_catalog
from worker.errors import ConfigError, UnknownRelease
from worker.fleet.digests import consumer_digest
from worker.fleet.fleet import load_fleet
from worker.fleet.impact import assess
from worker.formats.read import read_path
from worker.model.index import IndexedModel

TFLITE = Path(__file__).resolve().parents[1] / "fixtures" / "tflite" / "models"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path


def test_fleet_names_tflite_runtimes(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
consumers:
  - name: android
    owners: [mobile]
    tflite: "2.14"
  - name: ios
    litert: "1.4"
  - name: new-phone
    tflite: "2.15"
""",
    )
    android, ios, new_phone = load_fleet(path, load_catalog()).consumers
    assert android.tflite is not None and android.tflite.table is not None
    assert (android.tflite.family, android.tflite.version, android.owners) == (
        "tflite-runtime",
        "2.14.0",
        ("mobile",),
    )
    assert ios.tflite is not None and ios.tflite.family == "ai-edge-litert"
    assert new_phone.tflite is not None and new_phone.tflite.table is None  # not measured


def test_a_tflite_runtime_takes_no_loader(tmp_path: Path) -> None:
    path = write(
        tmp_path, 'consumers:\n  - name: a\n    tflite: "2.14"\n    loader: graph-import\n'
    )
    with pytest.raises(ConfigError, match=r"fleet.yaml:2: consumer a: a TFLite runtime has no"):
        load_fleet(path, load_catalog())


def test_a_tflite_version_that_is_no_number_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "consumers:\n  - name: a\n    litert: newest\n")
    with pytest.raises(UnknownRelease, match=r"fleet.yaml:2: consumer a: 'newest' is not"):
        load_fleet(path, load_catalog())


def test_two_kinds_of_consumer_in_one_entry_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, 'consumers:\n  - name: a\n    tflite: "2.14"\n    tensorflow: "2.14"\n')
    with pytest.raises(ConfigError, match="exactly one of tensorflow, serving, manifest, tflite"):
        load_fleet(path, load_catalog())


def test_tflite_runtimes_of_other_versions_have_other_digests(tmp_path: Path) -> None:
    path = write(
        tmp_path, 'consumers:\n  - {name: a, tflite: "2.13"}\n  - {name: b, tflite: "2.14"}\n'
    )
    a, b = load_fleet(path, load_catalog()).consumers
    assert consumer_digest(a) != consumer_digest(b)


def indexed(path: Path) -> IndexedModel:
    artifacts = tuple(read_path(str(path)))
    return IndexedModel("b", path.name, None, "b", "r", "compatible", artifacts, {}, {}, (), ())


def test_adding_a_tflite_runtime_changes_no_savedmodel_verdict(tmp_path: Path) -> None:
    path = write(tmp_path, 'consumers:\n  - {name: phone, tflite: "2.7"}\n')
    (phone,) = load_fleet(path, load_catalog()).consumers
    saved_model = indexed(SHARED / "artifacts" / "tf2.21" / "savedmodel_v2")
    impact = assess([saved_model], [phone])
    assert (impact.models, impact.checks) == ([], 0)


def test_adding_a_tflite_runtime_checks_the_tflite_models(tmp_path: Path) -> None:
    path = write(tmp_path, 'consumers:\n  - {name: phone, tflite: "2.7"}\n')
    (phone,) = load_fleet(path, load_catalog()).consumers
    gelu = indexed(TFLITE / "tf2.12" / "gelu.tflite")  # code 150: tflite-runtime 2.7 has 146
    (changed,) = assess([gelu], [phone]).models
    assert changed.verdicts_after == {"phone": "incompatible"}
    assert changed.newly_broken[0].reasons[0].startswith("Op builtin_code out of range: 150")
