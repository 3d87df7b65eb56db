"""Every row of tests/fixtures/tflite/matrix.jsonl: what a real runtime did with a real
converter's file, against what `check_artifact` says, from the file's metadata alone.

Held out: the op table was built from synthetic one-op probes, so no row here went into
it; Flex support per TensorFlow wheel was taken from the 2.12 converter's `flex_det` row
and the kernel-change bounds from the TensorFlow and tflite-runtime rows; the LiteRT
rows (ai-edge-litert) were used for nothing (see tests/fixtures/tflite/README.md).

A row serves iff the runtime invoked the model and its answer matched the producer's
(`matches_producer` not false); it loads iff the interpreter was built and its tensors
allocated. The first error finding names the row's error class.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from worker.catalog.catalog import load_catalog
from worker.catalog.tflite import load_tflite_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Code, Severity
from worker.model.verdict import Verdict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
ROWS = [json.loads(line) for line in (FIXTURES / "matrix.jsonl").read_text().splitlines()]

# The runtime's own words -> the finding code that names them.
ERROR_CLASSES = [
    ("Op builtin_code out of range", Code.TFLITE_CODE_OUT_OF_RANGE),
    ("Didn't find op for builtin opcode", Code.TFLITE_OP_VERSION),
    ("Select TensorFlow op(s)", Code.TFLITE_FLEX),
    ("Regular TensorFlow ops are not supported", Code.TFLITE_FLEX),  # 1.15's words
    ("Encountered unresolved custom op", Code.TFLITE_CUSTOM_OP),
    ("failed to prepare", Code.TFLITE_KERNEL_PREPARE),
]


def error_class(row: dict[str, Any]) -> Code | None:
    if row["stage"] == "invoked":
        return Code.TFLITE_WRONG_VALUES if row["matches_producer"] is False else None
    text = row.get("error") or ""
    return next(code for words, code in ERROR_CLASSES if words in text)


@cache
def artifact(model: str) -> Artifact:
    (found,) = read_path(str(FIXTURES / "models" / f"{model}.tflite"))
    return found


def consumer(row: dict[str, Any]) -> Consumer:
    if row["family"] == "tensorflow":
        return load_catalog().consumer(row["runtime_version"])
    short = {"tflite-runtime": "tflite", "ai-edge-litert": "litert"}[row["family"]]
    return load_tflite_catalog().consumer(short, row["runtime_version"])


def verdict(row: dict[str, Any]) -> Verdict:
    return check_artifact(artifact(row["model"]), consumer(row), load_catalog())


def outcome(row: dict[str, Any]) -> tuple[bool, bool, Code | None]:
    loads = row["stage"] in ("allocated", "invoked")
    serves = row["stage"] == "invoked" and row["matches_producer"] is not False
    return loads, serves, error_class(row)


def predicted(row: dict[str, Any]) -> tuple[bool | None, bool | None, Code | None]:
    found = verdict(row)
    first = next((f.code for f in found.findings if f.severity == Severity.ERROR), None)
    return found.loads, found.serves, first


def test_every_runtime_and_model_is_a_row() -> None:
    assert len(ROWS) == 1071
    assert Counter(r["family"] for r in ROWS) == {
        "tensorflow": 357,
        "tflite-runtime": 408,
        "ai-edge-litert": 306,
    }


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['runtime']}:{r['model']}" for r in ROWS])
def test_verdict_agrees_with_the_real_runtime(row: dict[str, Any]) -> None:
    assert predicted(row) == outcome(row), row.get("error")


def agreement(family: str | None = None) -> tuple[int, int]:
    rows = [r for r in ROWS if family is None or r["family"] == family]
    return sum(predicted(r) == outcome(r) for r in rows), len(rows)


def test_held_out_litert_rows_agree() -> None:
    agreeing, total = agreement("ai-edge-litert")
    assert (agreeing, total) == (306, 306)


def test_every_outcome_the_matrix_shows_is_predicted_somewhere() -> None:
    seen = Counter(outcome(r)[2] for r in ROWS)
    assert set(seen) == {None, *(code for _, code in ERROR_CLASSES)} | {Code.TFLITE_WRONG_VALUES}
