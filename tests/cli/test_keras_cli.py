"""Keras files and unsafe ops on the command line, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KERAS = FIXTURES / "keras" / "models"
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


def test_check_a_keras_file_against_keras_2_and_3_consumers() -> None:
    result = run(
        "check", str(KERAS / "tf2.15/lstm.h5"), "--consumer", "tf==2.15,python==3.11",
        "--consumer", "tf==2.21", "--consumer", "serving==2.15", "--json",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    (report,) = json.loads(result.stdout)["artifacts"]
    assert report["format"] == "keras-h5"
    keras2, keras3, serving = report["consumers"]
    assert (keras2["loads"], keras2["serves"], keras2["loader"]) == (True, True, "keras-load-model")
    assert keras3["loads"] is False
    assert keras3["findings"][0]["code"] == "keras.argument-removed"
    assert keras3["findings"][0]["fix"] == {"kind": "resave_as_keras3", "keras": "2.15.0"}
    assert serving["findings"][0]["code"] == "keras.not-servable"
    assert "2.15.1" in report["compatible_releases"][-1]


def test_a_bad_pin_in_a_consumer_spec_is_a_usage_error() -> None:
    result = run("check", str(KERAS / "tf2.15/lstm.h5"), "--consumer", "tf==2.15,keras=3")
    assert result.returncode == 2 and "keras==X.Y, python==X.Y" in result.stderr


def test_a_consumer_that_registers_the_object_loads_the_file() -> None:
    # a lambda activation Keras 2.8 saved by its name: unknown, unless the consumer's
    # process registers it under that name
    path = str(KERAS / "tf2.8/lambda_act.h5")
    plain = run("check", path, "--consumer", "tf==2.8", "--json")
    assert plain.returncode == 1
    (consumer,) = json.loads(plain.stdout)["artifacts"][0]["consumers"]
    assert consumer["loads"] is False
    assert consumer["findings"][0]["code"] == "keras.unknown-object"
    assert consumer["findings"][0]["fix"] == {"kind": "register_custom_object", "name": "<lambda>"}
    declared = run("check", path, "--consumer", "tf==2.8,custom_objects=<lambda>", "--json")
    assert declared.returncode == 0, declared.stdout


def test_a_keras_no_table_was_measured_for_is_unknown_and_says_why() -> None:
    # Keras 3.99 has no measured object table: whether it resolves the file's names is
    # not known, so the answer is unknown (never a guessed "loads"), and the terminal
    # shows the note the answer rests on
    path = str(KERAS / "tf2.8/dense.h5")
    result = run("check", path, "--consumer", "tf==2.21,keras==3.99", "--json")
    (consumer,) = json.loads(result.stdout)["artifacts"][0]["consumers"]
    assert consumer["status"] == "unknown" and consumer["loads"] is None
    assert [f["code"] for f in consumer["findings"]] == ["keras.version-unknown"]
    text = run("check", path, "--consumer", "tf==2.21,keras==3.99").stdout
    assert "info keras.version-unknown: No table of the objects Keras 3.99" in text
    measured = run("check", path, "--consumer", "tf==2.21,keras==3.12", "--json")
    assert measured.returncode == 0, measured.stdout


def test_inspect_says_who_wrote_a_keras_file_and_what_it_holds() -> None:
    result = run("inspect", str(KERAS / "tf2.21/lambda.keras"))
    assert result.returncode == 0, result.stderr
    assert "Keras .keras archive: written by Keras 3.15.1" in result.stdout
    assert "Lambda 'lambda': marshalled Python bytecode (3.11+)" in result.stdout


def test_fix_refuses_a_keras_file_with_a_pointer_to_check() -> None:
    result = run("fix", str(KERAS / "tf2.15/lstm.h5"), "--for", "tf==2.21", "--dry-run")
    assert result.returncode == 2 and "tfcompat check" in result.stderr


def test_the_fleet_policy_makes_unsafe_ops_refused(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "consumers:\n  - {name: prod, tensorflow: '2.21'}\npolicy:\n  unsafe_ops: error\n"
    )
    model = FIXTURES / "unsafe/tf2.21/write_file"
    warned = run("check", str(model), "--consumer", "tf==2.21")
    refused = run("check", str(model), "--fleet", str(fleet))
    assert warned.returncode == 0 and "at risk" in warned.stdout
    assert refused.returncode == 1 and "POLICY REFUSES" in refused.stdout
    assert "unsafe.file-io" in refused.stdout


def test_same_answer_strict_makes_a_measured_kernel_change_block(tmp_path: Path) -> None:
    # Round on int32: 2.0 returns its input, the newest releases other values, on
    # ordinary inputs: a hazard, and an error for the strict consumer
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "consumers:\n  - {name: strict, tensorflow: '2.0', same_answer: strict}\n"
        "  - {name: warned, tensorflow: '2.0'}\n"
    )
    model = FIXTURES / "kernels-heldout/Round_int32/frozen_graph.pb"
    result = run("check", str(model), "--fleet", str(fleet), "--json")
    assert result.returncode == 1, result.stderr
    (report,) = json.loads(result.stdout)["artifacts"]
    strict, warned = report["consumers"]
    (blocking,) = [f for f in strict["findings"] if f["code"] == "kernel.changed"]
    assert blocking["severity"] == "error" and "same_answer: strict" in blocking["message"]
    assert strict["serves"] is False and strict["loads"] is True
    (warning,) = [f for f in warned["findings"] if f["code"] == "kernel.changed"]
    assert warning["severity"] == "warning" and warned["serves"] is True
    assert report["status"] == "incompatible"


def test_a_change_met_only_on_nan_is_information_even_under_strict(tmp_path: Path) -> None:
    # Max over a row holding NaN: 2.0 and older skip the NaN, the newest releases keep it;
    # measured only on NaN and overflowing inputs, so no hazard for ordinary requests
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("consumers:\n  - {name: strict, tensorflow: '2.0', same_answer: strict}\n")
    model = FIXTURES / "attrs-heldout/max_with_nan/frozen_graph.pb"
    result = run("check", str(model), "--fleet", str(fleet), "--json")
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["artifacts"]
    (strict,) = report["consumers"]
    assert "kernel.changed" not in {f["code"] for f in strict["findings"]}
    (extremes,) = [f for f in strict["findings"] if f["code"] == "kernel.results-extremes"]
    assert extremes["severity"] == "info" and "nan" in extremes["message"]
    assert strict["serves"] is True


def test_same_answer_strict_blocks_a_tflite_kernel_change_too(tmp_path: Path) -> None:
    # SUM on int8, written by the 2.21.0 converter: tflite-runtime 2.12 wraps a sum the
    # newest LiteRT saturates (measured by tools/tflite/kernel_sweep.py)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "consumers:\n  - {name: strict, tflite: '2.12', same_answer: strict}\n"
        "  - {name: warned, tflite: '2.12'}\n  - {name: newest, litert: '2.3'}\n"
    )
    model = FIXTURES / "tflite-kernel-sweep/sum.int8.tflite"
    result = run("check", str(model), "--fleet", str(fleet), "--json")
    assert result.returncode == 1, result.stderr
    (report,) = json.loads(result.stdout)["artifacts"]
    strict, warned, newest = report["consumers"]
    (blocking,) = [f for f in strict["findings"] if f["code"] == "kernel.changed"]
    assert blocking["severity"] == "error" and "1 quantised step" in blocking["message"]
    assert (strict["loads"], strict["serves"]) == (True, False)
    (warning,) = [f for f in warned["findings"] if f["code"] == "kernel.changed"]
    assert warning["severity"] == "warning" and warned["serves"] is True
    assert newest["findings"] == [] and newest["serves"] is True
