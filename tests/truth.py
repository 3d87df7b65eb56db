"""What real TensorFlow did with real TensorFlow-written files, and what we predict.

Both fixture sets (`tests/fixtures/tf-base`, the first set, two producers, and
`tests/fixtures/tf-real`, made the same way with more releases and cases) hold
`artifacts.json` and `matrix.jsonl`: one row per (consumer release, artifact,
loader) with `ok` (it loaded) and `ran` (it then answered the fed input) as
observed. `predict` maps a row to our consumer and loader and returns our
`loads` and `serves` predictions and the first error finding's code;
`expected_codes` maps TensorFlow's error in a failing row to the codes that
name its class.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.held_out import held_out_set
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.consumer import Loader

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "tests" / "fixtures" / "tf-base"  # the first set: 2.12 and 2.21 producers
SHARED = BASE  # the name the tests import (the set was first kept outside the repository)
OWN = ROOT / "tests" / "fixtures" / "tf-real"
SERVE = ROOT / "tests" / "fixtures" / "tf-serve"  # the loader's steps and the first request
REAL = ROOT / "tests" / "fixtures" / "real-models"  # models PyPI packages ship (not committed)
SHAPES = ROOT / "tests" / "fixtures" / "tf-shapes"  # graphs whose _output_shapes an import checks
XLA = ROOT / "tests" / "fixtures" / "tf-xla"  # jax models: XlaCallModule at the first request
DTYPES = ROOT / "tests" / "fixtures" / "tf-dtypes"  # data types newer than the consumer
DEVICES = ROOT / "tests" / "fixtures" / "tf-devices"  # nodes pinned to devices (no soft placement)
SIGNATURES = ROOT / "tests" / "fixtures" / "tf-signatures"  # tags and signatures a loader wants
KERAS3_EXPORT = ROOT / "tests" / "fixtures" / "keras3-export"  # Keras 3 model.export state
ASSETS = ROOT / "tests" / "fixtures" / "tf-assets"  # what a SavedModel's own files decide
BITES = ROOT / "tests" / "fixtures" / "tf-bites"  # kernels, ops and attrs met late (request, body)
REAL_CACHE = ROOT / ".cache" / "real-models"


def matrix_path(fixture_set: Path) -> Path:
    """matrix.jsonl (the base set) or matrix.jsonl.gz (tf-real, 16,667 rows)."""
    plain = fixture_set / "matrix.jsonl"
    return plain if plain.exists() else fixture_set / "matrix.jsonl.gz"


FIXTURE_SETS = [
    p
    for p in (
        SHARED,
        OWN,
        SERVE,
        REAL,
        SHAPES,
        XLA,
        DTYPES,
        DEVICES,
        SIGNATURES,
        KERAS3_EXPORT,
        ASSETS,
        BITES,
    )
    if matrix_path(p).exists()
]

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
    ran: bool = True  # absent: checkpoints (nothing to run) and the base set (all ran)
    run_error: str = ""

    @property
    def serves(self) -> bool:
        return self.ok and self.ran

    @property
    def failure(self) -> str:
        """TensorFlow's message for whatever failed: the load, else the run."""
        return self.error if not self.ok else self.run_error

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
                    f"{r.get('error_type') or ''}: {r.get('error_key') or r.get('error') or ''}",
                    r.get("ran") is not False,
                    (r.get("run_error_key") or r.get("run_error") or ""),
                )
            )
    return found


@cache
def artifacts_doc(fixture_set: Path) -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in json.loads((fixture_set / "artifacts.json").read_text())}


def held_out_after(row: Row) -> str | None:
    """The commit of the rules this row's artifact was built to test after they were
    written (`held_out_after` in artifacts.json); None for the rows the rules were
    written from. Rules may have been tuned on the row since: see `sample_label`."""
    entry = artifacts_doc(row.fixture_set).get(row.artifact, {})
    found = entry.get("held_out_after")
    return str(found) if found else None


def sample_label(row: Row) -> str:
    """`in-sample`, or the label of the row's held-out set (tests/fixtures/held_out.json):
    held-out while no rule was changed from its rows, in-sample once one was (the
    label then carries the set's first-measured figure, the held-out one)."""
    after = held_out_after(row)
    if after is None:
        return "in-sample"
    found = held_out_set(row.fixture_set, held_out_after=after)
    if found is None:
        return f"held-out {row.fixture_set.name} after {after} (no first-measured record)"
    return found.label()


@cache
def read_artifacts(fixture_set: Path, artifact_id: str) -> tuple[Artifact, ...]:
    entry = artifacts_doc(fixture_set)[artifact_id]
    if entry.get("cache"):  # a real model: fetched by pinned version and checksum
        path = REAL_CACHE / entry["load_path"]
        if not path.exists():
            tool = ROOT / "tools" / "fixtures" / "real_models.py"
            subprocess.run([sys.executable, str(tool), "fetch"], check=True)
        return tuple(read_path(str(path)))
    return tuple(read_path(str(fixture_set / entry["load_path"])))


@dataclass(frozen=True)
class Prediction:
    loads: bool | None
    serves: bool | None
    code: str | None  # the first error finding's code
    reasons: tuple[str, ...]
    statuses: tuple[str, ...] = ()  # each model's status for this consumer
    warnings: tuple[str, ...] = ()  # the codes of the warnings behind an at-risk


@cache
def predict(row: Row) -> Prediction:
    """Our prediction for the row (an archive: every model in it must load and serve);
    remembered, so the tests that look at every row share one pass."""
    catalog = load_catalog()
    consumer = catalog.consumer(row.consumer_version, LOADERS[row.loader])
    loads: bool | None = True
    serves: bool | None = True
    code: str | None = None
    reasons: list[str] = []
    statuses: list[str] = []
    warnings: list[str] = []
    for artifact in read_artifacts(row.fixture_set, row.artifact):
        verdict = check_artifact(artifact, consumer, catalog)
        loads = _and(loads, verdict.loads)
        serves = _and(serves, verdict.serves)
        errors = [f for f in verdict.findings if f.severity == "error"]
        if code is None and errors:
            code = str(errors[0].code)
        reasons += [f"{f.code} [{f.stage}]: {f.message[:160]}" for f in errors]
        statuses.append(str(verdict.status))
        warnings += [str(f.code) for f in verdict.findings if f.severity == "warning"]
    return Prediction(loads, serves, code, tuple(reasons), tuple(statuses), tuple(warnings))


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


# TensorFlow's error classes (the phrase its message holds) and the codes naming them.
ERROR_CLASSES: list[tuple[str, frozenset[str]]] = [
    ("Op type not registered", frozenset({"op.not-registered", "op.removed", "op.custom"})),
    ("KeyError: 'serving_default'", frozenset({"request.no-signature"})),
    ("KeyError: ", frozenset({"op.not-registered", "op.removed", "op.custom"})),
    ("NodeDef mentions attr", frozenset({"attr.unknown"})),
    ("NodeDef missing attr", frozenset({"attr.missing"})),
    ("is not available in GraphDef version", frozenset({"op.deprecated"})),
    ("GraphDef min consumer", frozenset({"version.min-consumer"})),
    ("GraphDef disallows consumer", frozenset({"version.bad-consumer"})),
    ("GraphDef producer version", frozenset({"version.min-producer"})),
    ("Value for attr", frozenset({"attr.not-allowed", "attr.below-minimum"})),
    ("incompatible with expected", frozenset({"edge.type-mismatch"})),
    ("expected type", frozenset({"edge.type-mismatch"})),
    ("Could not find variable", frozenset({"resource.uninitialized"})),
    ("uninitialized value", frozenset({"resource.uninitialized"})),
    ("Error while reading resource variable", frozenset({"resource.uninitialized"})),
    ("Table not initialized", frozenset({"resource.uninitialized"})),
    ("has not been initialized", frozenset({"resource.uninitialized"})),
    ("Incompatible shapes: [0]", frozenset({"resource.uninitialized"})),
    ("matching supplied tags", frozenset({"saved-model.tags"})),
    ("_output_shapes attribute inconsistent", frozenset({"import.output-shapes"})),
    # XlaCallModule's kernel at the first run (tests/fixtures/tf-xla)
    ("is not supported by this build", frozenset({"xla.module-version"})),
    ("is not supported anymore", frozenset({"xla.module-version"})),
    ("must have non-empty platforms", frozenset({"xla.platform"})),
    ("is not among the platforms required", frozenset({"xla.platform"})),
    ("Cannot deserialize", frozenset({"xla.stablehlo-version"})),
    # data types the consumer's DataType enum lacks (tests/fixtures/tf-dtypes)
    ("invalid DataType enum", frozenset({"dtype.unknown"})),
    # a node pinned to a device the session has not (tests/fixtures/tf-devices)
    ("Cannot assign a device", frozenset({"device.unavailable"})),
    ("does not correspond to a valid tensorflow::DataType", frozenset({"dtype.unknown"})),
    ("to int4 is not supported", frozenset({"kernel.missing"})),
    # tf.saved_model.load's message is cut before the kernel's text (load.py keeps 300
    # characters); in tf-dtypes only the int4 Cast fails at a node named Cast
    ("Detected at node Cast defined at", frozenset({"kernel.missing"})),
    ("argument if there is more than one MetaGraph", frozenset({"saved-model.tags"})),
    ("You must feed a value for placeholder", frozenset({"request.feed", "init.failed"})),
    ("needs an input for each placeholder", frozenset({"request.feed"})),
    ("appears more than once in the input list", frozenset({"request.feed"})),
    ("Unable to lift tensor", frozenset({"request.feed", "init.failed"})),
    ("MetaGraphDef associated with tags", frozenset({"saved-model.tags"})),
    ("Expected exactly one", frozenset({"init.failed"})),
    ("has no attribute 'add_slot'", frozenset({"object.not-revived"})),
    ("pyfunc_", frozenset({"request.python"})),
    ("Resource localhost/", frozenset({"resource.uninitialized"})),
    ("No OpKernel was registered", frozenset({"kernel.missing"})),
    ("could not find the Python function", frozenset({"request.python"})),
    ("callback pyfunc_", frozenset({"request.python"})),
    ("Expected exactly one main op", frozenset({"init.failed"})),
    ("must be built with `--config=cuda`", frozenset({"op.needs-cuda"})),
    ("Detected at node CheckPinned", frozenset({"op.needs-cuda"})),
    ("did not exist", frozenset({"request.checkpoint-io"})),
    (
        "No such file or directory",
        frozenset({"request.checkpoint-io", "init.failed", "asset.missing", "asset.export-path"}),
    ),
    ("assertion failed", frozenset({"assert.constant-false"})),
    ("is not in [0,", frozenset({"request.lookup-default"})),
]


def expected_codes(row: Row) -> frozenset[str] | None:
    """The codes that name the class of TensorFlow's error in a failing row; None when
    the message names no class we know (the test then fails, to be looked at)."""
    text = row.failure
    found = [(text.find(phrase), codes) for phrase, codes in ERROR_CLASSES if phrase in text]
    return min(found, key=lambda hit: hit[0])[1] if found else None


PROBES = OWN / "hazard_probes.jsonl"


def hazard_probes() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(artifact, consumer release, loader) -> what that release did on an input chosen to
    exercise an at-risk hazard (`tools/fixtures/probe_hazards.py`)."""
    if not PROBES.exists():
        return {}
    found = {}
    for line in PROBES.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            found[(r["artifact"], r["consumer_tf_version"], r["loader"])] = r
    return found


def hazard_confirmed(artifact: str, consumer: str, loader: str) -> bool | None:
    """Whether the probe shows `consumer` answering otherwise than the model's producer
    (failing, or other outputs); None when there is no probe for that cell."""
    probes = hazard_probes()
    mine = probes.get((artifact, consumer, loader))
    if mine is None:
        return None
    own = probes.get((artifact, mine["producer_tf_version"], loader))
    if own is None:
        return None
    answer = (mine["ran"], mine["outputs"])
    return bool(answer != (own["ran"], own["outputs"]))
