"""`tfcompat fix` as a user runs it: a real process, real TensorFlow-written files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.truth import OWN
from worker.formats.read import read_path

A = OWN / "artifacts"
ENV = {**os.environ, "PYTHONWARNINGS": "ignore"}


def fix(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", "fix", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )


def test_writes_a_copy_that_keeps_every_other_file(tmp_path: Path) -> None:
    model = A / "tf2.21" / "savedmodel_v1"
    out = tmp_path / "fixed"
    result = fix(str(model), "--for", "tf==2.4", "--for", "tf==1.15@graph-import", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "FIXED" in result.stdout and "VarHandleOp.debug_name" in result.stdout
    for name in ("variables/variables.index", "variables/variables.data-00000-of-00001"):
        assert (out / name).read_bytes() == (model / name).read_bytes()
    assert (out / "saved_model.pb").stat().st_size < (model / "saved_model.pb").stat().st_size
    (copy,) = read_path(str(out))
    check = subprocess.run(
        [sys.executable, "-m", "worker.cli", "check", str(out), "--consumer", "tf==2.4"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert check.returncode == 0, check.stdout
    assert copy.format == "savedmodel"


def test_an_unfixable_model_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "fixed"
    result = fix(str(A / "tf2.21" / "new_op"), "--for", "tf==2.15", "-o", str(out), "--json")
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    (consumer,) = doc["artifacts"][0]["consumers"]
    assert consumer["state"] == "unfixable"
    assert consumer["blockers"][0]["code"] == "op.not-registered"
    assert any("upgrade" in line for line in consumer["instead"])
    assert doc["output"] is None and not out.exists()


def test_dry_run_lists_the_rewrites_and_writes_nothing(tmp_path: Path) -> None:
    result = fix(
        str(A / "tf2.18" / "frozen_graph" / "frozen_graph.pbtxt"), "--for", "tf==2.4", "--dry-run"
    )
    assert result.returncode == 0, result.stderr
    assert "drop MatMul.grad_a" in result.stdout and "nothing written" in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_frozen_graph_copy_is_a_frozen_graph(tmp_path: Path) -> None:
    out = tmp_path / "frozen_graph.pb"
    result = fix(
        str(A / "tf2.21" / "fixable_frozen" / "frozen_graph.pb"),
        "--for",
        "tf==1.15",
        "-o",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    (copy,) = read_path(str(out))
    assert copy.format == "graphdef"


def test_consumers_are_required() -> None:
    result = fix(str(A / "tf2.21" / "savedmodel_v1"), "--dry-run")
    assert result.returncode == 2 and "--for" in result.stderr


# A frozen graph: one file in, one file out, named as `check` names them.
FROZEN = A / "tf2.21" / "fixable_frozen" / "frozen_graph.pb"


def test_a_frozen_graph_s_consumer_is_labelled_as_check_labels_it(tmp_path: Path) -> None:
    result = fix(str(FROZEN), "--for", "tf==1.15", "--dry-run")
    check = subprocess.run(
        [sys.executable, "-m", "worker.cli", "check", str(FROZEN), "--consumer", "tf==1.15"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert "(TensorFlow 1.15.5, graph-import)" in check.stdout
    assert "(TensorFlow 1.15.5, graph-import): FIXED" in result.stdout
    assert "saved-model-v1" not in result.stdout
    planned = json.loads(fix(str(FROZEN), "--for", "tf==1.15", "--dry-run", "--json").stdout)
    assert planned["artifacts"][0]["consumers"][0]["loader"] == "graph-import"


def test_a_one_file_copy_is_the_output_file_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "OUT.pb"
    result = fix(str(FROZEN), "--for", "tf==1.15", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.is_file() and [p.name for p in tmp_path.iterdir()] == ["OUT.pb"]
    assert f"wrote {out}: the copy of {FROZEN}, rewritten" in result.stdout
    assert f"{FROZEN}  [graphdef]" in result.stdout  # not FROZEN/frozen_graph.pb
    assert f"{FROZEN}/frozen_graph.pb" not in result.stdout
