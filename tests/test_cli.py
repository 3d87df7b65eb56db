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
        "range_notes",
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
    assert old["serves"] is False and old["status"] == "incompatible"
    first = old["findings"][0]
    assert (first["code"], first["op"], first["stage"]) == (
        "op.not-registered",
        "DecodeWebP",
        "load",
    )
    assert set(first) == {"code", "severity", "message", "op", "attr", "fix", "stage"}
    # The upgrade a fix names is inside the releases that serve the model.
    assert first["fix"] == {"kind": "upgrade_to", "release": "2.20.0", "op": "DecodeWebP"}
    assert new["loads"] is True and new["serves"] is True
    assert frozen["format"] == "graphdef" and frozen["status"] == "compatible"
    # A frozen GraphDef is imported, whatever the consumer's SavedModel loader.
    assert [c["loader"] for c in frozen["consumers"]] == ["graph-import", "graph-import"]


def test_one_release_with_two_loaders_gives_two_consumers() -> None:
    result = run(
        "check",
        str(A / "tf2.12/savedmodel_v2"),
        "--consumer",
        "tf==2.11@saved-model-v1",
        "--consumer",
        "tf==2.11@saved-model-v2",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    (report,) = json.loads(result.stdout)["artifacts"]
    assert [c["name"] for c in report["consumers"]] == [
        "tf-2.11.1@saved-model-v1",
        "tf-2.11.1@saved-model-v2",
    ]
    twice = run(
        "check", str(A / "tf2.12/savedmodel_v2"), "--consumer", "tf==2.11", "--consumer", "tf==2.11"
    )
    assert twice.returncode == 2 and "consumer named twice" in twice.stderr


def test_a_release_without_registry_is_unknown_never_loads() -> None:
    result = run("check", str(A / "tf2.12/savedmodel_v1_stripped"), "--consumer", "tf==1.12")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "UNKNOWN" in result.stdout
    assert not any(line.strip().startswith("serves") for line in result.stdout.splitlines())
    assert "dump-manifest" in result.stdout
    doc = json.loads(
        run(
            "check", str(A / "tf2.12/savedmodel_v1_stripped"), "--consumer", "tf==1.12", "--json"
        ).stdout
    )
    (consumer,) = doc["artifacts"][0]["consumers"]
    assert (consumer["loads"], consumer["serves"], consumer["status"]) == (None, None, "unknown")


def test_without_consumers_the_headline_says_what_was_checked() -> None:
    result = run("check", str(A / "tf2.21/new_op"))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "COMPATIBLE" not in result.stdout
    assert "no consumer given" in result.stdout and "2.20.0-2.21.x" in result.stdout


def test_findings_name_the_consumer_once() -> None:
    result = run("check", str(A / "tf2.21/new_op"), "--consumer", "tf==2.12")
    (line,) = [x for x in result.stdout.splitlines() if "op.not-registered" in x]
    assert "tf-2.12.1" not in line  # the consumer line above names it
    assert result.stdout.count("tf-2.12.1") == 2  # its line, and its fix


def test_check_exits_0_when_every_consumer_serves() -> None:
    result = run("check", str(A / "tf2.12/savedmodel_v1_stripped"), "--consumer", "tf==2.21")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "serves" in result.stdout


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
