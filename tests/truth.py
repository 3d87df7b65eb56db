"""What real TensorFlow did with real TensorFlow-written files, and what we predict.

Both fixture sets (`../shared/fixtures/tf-real`, read-only, and our own
`tests/fixtures/tf-real`, made the same way with more releases and cases) hold
`artifacts.json` and `matrix.jsonl`: one row per (consumer release, artifact,
loader) with `ok` as observed. `predict` maps a row to our consumer and loader
and returns our `loads` prediction.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.consumer import Loader

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fixtures" / "tf-real"
OWN = ROOT / "tests" / "fixtures" / "tf-real"


def matrix_path(fixture_set: Path) -> Path:
    """matrix.jsonl (the shared set) or matrix.jsonl.gz (ours, 16,667 rows)."""
    plain = fixture_set / "matrix.jsonl"
    return plain if plain.exists() else fixture_set / "matrix.jsonl.gz"


FIXTURE_SETS = [p for p in (SHARED, OWN) if matrix_path(p).exists()]

LOADERS = {
    "v1_loader": Loader.SAVED_MODEL_V1,
    "v2_loader": Loader.SAVED_MODEL_V2,
    "sm_graphdef_import": Loader.GRAPH_IMPORT,
    "import_graph_def": Loader.GRAPH_IMPORT,
    "import_meta_graph": Loader.SAVED_MODEL_V1,
    "load_checkpoint": Loader.SAVED_MODEL_V1,
}


@dataclass(frozen=True)
class Row:
    fixture_set: Path
    consumer_version: str
    artifact: str
    loader: str
    ok: bool
    error: str

    @property
    def id(self) -> str:
        return (
            f"{self.fixture_set.parent.parent.name}:{self.artifact}@{self.loader}"
            f"<-tf{self.consumer_version}"
        )


def rows() -> list[Row]:
    found = []
    for fixture_set in FIXTURE_SETS:
        path = matrix_path(fixture_set)
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
        for line in text.splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            if "fix" in r:
                continue  # a rewritten copy (tools/fixtures/verify_fixes.py): tests/fix
            found.append(
                Row(
                    fixture_set,
                    r["consumer_tf_version"],
                    r["artifact"],
                    r["loader"],
                    bool(r["ok"]),
                    (r.get("error") or "")[:200],
                )
            )
    return found


@cache
def artifacts_doc(fixture_set: Path) -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in json.loads((fixture_set / "artifacts.json").read_text())}


@cache
def read_artifacts(fixture_set: Path, artifact_id: str) -> tuple[Artifact, ...]:
    entry = artifacts_doc(fixture_set)[artifact_id]
    return tuple(read_path(str(fixture_set / entry["load_path"])))


def predict(row: Row) -> tuple[bool, list[str]]:
    """Our loads prediction for the row, and the error findings behind it."""
    catalog = load_catalog()
    consumer = catalog.consumer(row.consumer_version, LOADERS[row.loader])
    loads = True
    reasons: list[str] = []
    for artifact in read_artifacts(row.fixture_set, row.artifact):
        verdict = check_artifact(artifact, consumer, catalog)
        loads = loads and verdict.loads
        reasons += [
            f"{f.code}: {f.message[:160]}" for f in verdict.findings if f.severity == "error"
        ]
    return loads, reasons


def has_registry(version: str) -> bool:
    return load_catalog().resolve(version).registry_version is not None
