"""The `tfcompat` command as a user runs it: a real process, real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.truth import SHARED

A = SHARED / "artifacts"
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


def test_check_json_follows_the_contract() -> None:
    result = run(
        "check",
        str(A / "tf2.21/new_op"),
        str(A / "tf2.12/frozen_graph/frozen_graph.pb"),
        "--consumer",
        "tf==2.12",
        "--consumer",
        "tf==2.21@saved-model-v2",
        "--json",
    )
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    new_op, frozen = doc["artifacts"]
    assert set(new_op) == {
        "path",
        "format",
        "status",
        "error",
        "consumers",
        "compatible_releases",
        "min_release",
    }
    assert new_op["status"] == "incompatible"
    # DecodeWebP: 2.18 cannot load it (shared matrix); 2.20 registers it (catalog).
    assert new_op["min_release"] == "2.20.0"
    assert new_op["compatible_releases"] == ["2.20.0-2.21.x"]
    old, new = new_op["consumers"]
    assert (old["name"], old["tensorflow"], old["graph_def_version"], old["loads"]) == (
        "tf-2.12.1",
        "2.12.1",
        1395,
        False,
    )
    assert old["findings"][0]["code"] == "op.not-registered"
    assert old["findings"][0]["op"] == "DecodeWebP"
    assert set(old["findings"][0]) == {"code", "severity", "message", "op", "attr"}
    assert new["loads"] is True
    assert frozen["format"] == "graphdef" and frozen["status"] in ("compatible", "at-risk")


def test_check_exits_0_when_every_consumer_loads() -> None:
    result = run("check", str(A / "tf2.12/savedmodel_v1_stripped"), "--consumer", "tf==2.21")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "loads" in result.stdout


def test_checkpoint_prefix_is_read() -> None:
    result = run("check", str(A / "tf2.21/checkpoint/ckpt-1"), "--consumer", "tf==1.15", "--json")
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["artifacts"]
    assert report["format"] == "checkpoint"


HOSTILE = [
    ("truncated.pb", lambda: (A / "tf2.21/frozen_graph/frozen_graph.pb").read_bytes()[:100]),
    ("random.pb", lambda: os.urandom(4096)),
    ("wrong.index", lambda: b"\x00" * 100),
    ("bomb.tar.gz", lambda: __import__("gzip").compress(b"\x00" * (64 << 20))),
    ("empty.pb", lambda: b""),
]


@pytest.mark.parametrize(("name", "make"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path: Path, name: str, make) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    path.write_bytes(make())
    result = run("check", str(path), "--consumer", "tf==2.12", "--json")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr + result.stdout
    (report,) = json.loads(result.stdout)["artifacts"]
    assert report["status"] == "invalid" and report["error"]
    inspect = run("inspect", str(path))
    assert inspect.returncode == 2
    assert "Traceback" not in inspect.stderr
    assert len(inspect.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["check", "x.pb", "--consumer", "tf==2.99"],
        ["check", "x.pb", "--consumer", "tf==2.12@onnx"],
        ["check", "x.pb", "--consumer", "justaname"],
        ["check", "x.pb", "--fleet", "/nonexistent/fleet.yaml"],
        ["check"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr


def test_missing_path_is_invalid() -> None:
    result = run("check", "/nonexistent/model.pb", "--consumer", "tf==2.12")
    assert result.returncode == 2
    assert "no such file" in result.stdout


def test_inspect_json_has_versions_ops_and_attr_defaults() -> None:
    result = run("inspect", str(A / "tf2.12/savedmodel_v1"), "--json")
    assert result.returncode == 0, result.stderr
    (doc,) = json.loads(result.stdout)["artifacts"]
    meta = doc["meta_graphs"][0]
    assert meta["graph"]["versions"]["producer"] == 1395
    assert meta["tensorflow_version"] == "2.12.1"
    usage = doc["op_usage"][0]["ops"]
    assert usage["VarHandleOp"]["attrs"]["allowed_devices"]["equals_default"] is True
    assert doc["checkpoint"]["versions"]["producer"] == 1


def test_fleet_list_and_catalog() -> None:
    root = Path(__file__).resolve().parents[1]
    result = run("fleet", "list", "--fleet", str(root / "config" / "fleet.yaml"))
    assert result.returncode == 0, result.stderr
    assert "serving-prod" in result.stdout and "1645" in result.stdout
    catalog = run("catalog", "--json")
    assert any(r["version"] == "2.21.0" for r in json.loads(catalog.stdout)["releases"])


def test_settings_masks_secrets() -> None:
    env = {**ENV, "TFCOMPAT_SLACK_WEBHOOK_URL": "https://hooks.example/secret-token"}
    result = subprocess.run(
        [sys.executable, "-m", "worker.cli", "settings"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0
    assert "secret-token" not in result.stdout
    assert "TFCOMPAT_SLACK_WEBHOOK_URL=********" in result.stdout
