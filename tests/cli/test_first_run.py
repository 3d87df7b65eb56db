"""What a new user meets outside the repository, with nothing configured: each answer
says what is missing and how to set it, and exits 2 when nothing could be done."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.redis_server import redis_url
from tests.truth import SHARED

ENV = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith("TFCOMPAT_") or k.startswith("TFCOMPAT_TEST")
}
ENV["PYTHONWARNINGS"] = "ignore"
REDIS_DB = 13


def run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", *args],
        capture_output=True,
        text=True,
        env={**ENV, **env},
        cwd=cwd,
        timeout=180,
    )


def test_fleet_list_outside_the_repository_lists_the_builtin_fleet(tmp_path: Path) -> None:
    result = run(tmp_path, "fleet", "list")
    assert result.returncode == 0, result.stderr
    assert "tf-1.0.0" in result.stdout and "tf-2.21.0" in result.stdout
    assert "no config/fleet.yaml" in result.stderr and "built-in fleet" in result.stderr
    assert "--fleet FILE or TFCOMPAT_FLEET=FILE" in result.stderr


def test_fleet_list_uses_tfcompat_fleet(tmp_path: Path) -> None:
    fleet = tmp_path / "mine.yaml"
    fleet.write_text('consumers:\n  - {name: edge, tensorflow: "2.12"}\n')
    result = run(tmp_path, "fleet", "list", TFCOMPAT_FLEET=str(fleet))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].startswith("edge ") and result.stderr == ""


def test_a_fleet_named_but_missing_says_how_to_name_one(tmp_path: Path) -> None:
    for result in (
        run(tmp_path, "fleet", "list", TFCOMPAT_FLEET="fleet.yaml"),
        run(tmp_path, "check", str(SHARED / "artifacts/tf2.21/new_op"), "--fleet", "fleet.yaml"),
    ):
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert "fleet.yaml: fleet file not found" in line
        assert "TFCOMPAT_FLEET=FILE" in line and "--fleet builtin" in line


def test_check_against_the_builtin_fleet_works_anywhere(tmp_path: Path) -> None:
    result = run(tmp_path, "check", str(SHARED / "artifacts/tf2.21/new_op"), "--fleet", "builtin")
    assert result.returncode == 1, result.stderr  # DecodeWebP: releases before 2.20 fail
    assert "tf-2.21.0" in result.stdout and "tf-1.0.0" in result.stdout


@pytest.mark.parametrize("command", [["fleet", "impact"], ["fleet", "apply"], ["index", "rebuild"]])
def test_index_commands_without_a_bucket_say_how_to_set_one(
    tmp_path: Path, command: list[str]
) -> None:
    import redis

    redis.Redis.from_url(redis_url(REDIS_DB)).flushdb()
    result = run(tmp_path, *command, TFCOMPAT_BROKER_URL=redis_url(REDIS_DB))
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert "TFCOMPAT_REPORT_BUCKET=BUCKET" in line and "TFCOMPAT_INDEX_BUCKETS" in line
    assert "model(s)" not in result.stdout


def test_inspecting_a_text_file_that_is_no_model_says_what_is_read(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# A project\n\nSome words about it.\n")
    result = run(tmp_path, "inspect", "README.md")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("tfcompat: error: README.md: not a model: a text file")
    assert "tfcompat reads SavedModels, frozen GraphDefs (.pb, .pbtxt)" in line


def test_a_pbtxt_that_does_not_parse_still_says_where_it_stops(tmp_path: Path) -> None:
    (tmp_path / "graph.pbtxt").write_text("node { name: \n")
    result = run(tmp_path, "inspect", "graph.pbtxt")
    assert result.returncode == 2
    assert "graph.pbtxt: not a valid text-format protobuf" in result.stderr
