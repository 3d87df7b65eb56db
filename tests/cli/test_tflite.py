"""`tfcompat` on .tflite files, as a user runs it: a real process, real converter files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "tflite" / "models"
FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"
ENV = {k: v for k, v in os.environ.items() if not k.startswith("TFCOMPAT_")}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", *args],
        capture_output=True,
        text=True,
        env={**ENV, "PYTHONWARNINGS": "ignore"},
        timeout=120,
    )


def test_check_names_each_tflite_runtime_and_its_verdict() -> None:
    result = run(
        "check",
        str(MODELS / "tf2.12" / "gelu.tflite"),
        "--consumer",
        "tflite==2.7",
        "--consumer",
        "litert==1.4",
        "--consumer",
        "tf==2.8",
        "--json",
    )
    assert result.returncode == 1, result.stderr
    (report,) = json.loads(result.stdout)["artifacts"]
    assert report["format"] == "tflite" and report["status"] == "incompatible"
    verdicts = {c["name"]: (c["loads"], c["serves"]) for c in report["consumers"]}
    assert verdicts == {
        "tflite-2.7.0": (False, False),
        "litert-1.4.0": (True, True),
        "tf-2.8.4": (True, True),
    }


def test_an_unmeasured_runtime_is_unknown_and_exits_3() -> None:
    result = run("check", str(MODELS / "tf2.21" / "dense.tflite"), "--consumer", "tflite==2.15")
    assert result.returncode == 3, result.stderr
    assert "unknown        tflite-2.15 (tflite-runtime 2.15" in result.stdout
    assert "tflite.runtime-unmeasured" in result.stdout


def test_wrong_values_are_requests_that_fail_with_the_converter_to_use() -> None:
    result = run("check", str(MODELS / "tf2.21" / "dense_int8.tflite"), "--consumer", "tf==1.15")
    assert result.returncode == 1
    assert "REQUESTS FAIL  tf-1.15.5" in result.stdout
    assert "fix: Convert it with TensorFlow 2.15.1's converter" in result.stdout


def test_a_tflite_runtime_takes_no_loader() -> None:
    result = run("check", str(MODELS / "tf2.21" / "dense.tflite"), "--consumer", "tflite==2.14@v1")
    assert result.returncode == 2
    assert "a TFLite runtime has no loader" in result.stderr


def test_inspect_shows_the_operator_codes() -> None:
    path = MODELS / "tf2.12" / "flex_det.tflite"
    text = run("inspect", str(path))
    assert text.returncode == 0, text.stderr
    assert "TFLite schema 3" in text.stdout
    assert "FlexMatrixDeterminant v1 (Select TF op) x1" in text.stdout
    doc = json.loads(run("inspect", str(path), "--json").stdout)["artifacts"][0]
    assert doc["tflite"]["min_runtime_version"] == "1.5.0"
    assert [op["name"] for op in doc["tflite_ops"]] == ["RESHAPE", "FlexMatrixDeterminant"]
    assert doc["fixable_releases"] == []


def test_the_unknown_format_line_names_tflite() -> None:
    result = run("inspect", str(FOREIGN / "model.onnx"))
    assert result.returncode == 2
    assert "TFLite flatbuffers (.tflite)" in result.stderr


def test_fleet_list_shows_a_tflite_runtime(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text('consumers:\n  - {name: phone, tflite: "2.9"}\n')
    result = run("fleet", "list", "--fleet", str(fleet))
    assert result.returncode == 0, result.stderr
    assert "tflite-runtime 2.9.1" in result.stdout
    assert "TFLite table tflite-runtime-2.9.1" in result.stdout


def test_fix_refuses_a_tflite_and_says_what_to_do(tmp_path: Path) -> None:
    model = MODELS / "tf2.21" / "dense_int8.tflite"
    result = run("fix", str(model), "--for", "tf==1.15", "-o", str(tmp_path / "out.tflite"))
    assert result.returncode == 2
    assert "not TFLite flatbuffers; convert the model again" in result.stderr
    assert not (tmp_path / "out.tflite").exists()


FEATURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite-features" / "models"


def test_buffers_after_the_flatbuffer_fail_requests_with_the_setting_to_leave_off() -> None:
    path = FEATURES / "tf2.21" / "buffer_offset.tflite"
    result = run("check", str(path), "--consumer", "tflite==2.13", "--consumer", "litert==1.0")
    assert result.returncode == 1, result.stderr
    assert "REQUESTS FAIL  tflite-2.13.0" in result.stdout
    assert "Input tensor 1 lacks data" in result.stdout
    assert "Convert it without _experimental_use_buffer_offset = True" in result.stdout
    assert "upgrade tflite-2.13.0 to tflite-runtime >= 2.14.0" in result.stdout


def test_inspect_lists_the_file_features() -> None:
    text = run("inspect", str(FEATURES / "tf2.21" / "buffer_offset.tflite")).stdout
    assert "file features: buffer-offset, shape-signature, signature-defs" in text
