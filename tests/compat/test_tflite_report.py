"""What a report says of a .tflite: the TensorFlow releases whose tf.lite.Interpreter
serves it (every release with an op registry: a patch release runs its minor's
measured table), its consumers, and the upgrades its fixes name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth import SHARED
from worker.catalog.catalog import load_catalog
from worker.catalog.tflite import load_tflite_catalog
from worker.compat.report import artifact_report
from worker.formats.read import read_path
from worker.model.consumer import Consumer

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "tflite" / "models"


def report(path: Path, consumers: list[Consumer]) -> dict[str, Any]:
    catalog = load_catalog()
    (artifact,) = read_path(str(path))
    return artifact_report(artifact, consumers, catalog.range_consumers(), catalog)


def test_releases_are_the_measured_interpreters_that_serve_it() -> None:
    # GELU (code 150): 1.13.2 to 2.7.4 end their enum before it; 2.8.4 has it, and so do
    # 2.8.0 to 2.8.3, which run 2.8.4's table.
    found = report(MODELS / "tf2.12" / "gelu.tflite", [])
    assert found["compatible_releases"] == ["2.8.0-2.21.x"]
    assert found["min_release"] == "2.8.0"


def test_gaps_that_are_only_unmeasured_get_no_note() -> None:
    assert report(MODELS / "tf2.12" / "gelu.tflite", [])["range_notes"] == []


def test_wrong_values_keep_a_release_out_of_the_ranges() -> None:
    found = report(MODELS / "tf2.21" / "dense_int8.tflite", [])
    assert found["min_release"] == "2.10.0"  # 1.15.5 to 2.9.3 run it and answer zeros


def test_a_tflite_runtime_is_left_out_of_a_savedmodel_report() -> None:
    phone = load_tflite_catalog().consumer("tflite", "2.14")
    server = load_catalog().consumer("2.21")
    found = report(SHARED / "artifacts" / "tf2.21" / "savedmodel_v2", [phone, server])
    assert [c["name"] for c in found["consumers"]] == ["tf-2.21.0"]


def test_a_tensorflow_consumers_upgrade_is_a_release_that_serves_it() -> None:
    old = load_catalog().consumer("2.4")
    found = report(MODELS / "tf2.12" / "gelu.tflite", [old])
    (consumer,) = found["consumers"]
    fix = consumer["findings"][0]["fix"]
    assert fix == {"kind": "upgrade_to", "release": "2.8.0"}
    assert fix["release"] == found["min_release"]


def test_a_tflite_runtime_names_itself_in_the_report() -> None:
    phone = load_tflite_catalog().consumer("litert", "1.4")
    (consumer,) = report(MODELS / "tf2.12" / "gelu.tflite", [phone])["consumers"]
    assert consumer["runtime"] == {"family": "ai-edge-litert", "version": "1.4.0", "measured": True}
    assert (consumer["tensorflow"], consumer["loader"], consumer["serves"]) == (
        None,
        "tflite-interpreter",
        True,
    )
