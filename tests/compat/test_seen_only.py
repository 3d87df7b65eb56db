"""Rules whose fact was seen in one fixture, not generated from the releases, say so:
their findings carry `evidence: {seen_only: true, seen_in}` and the message names it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.catalog.tflite import load_tflite_catalog
from worker.compat.check import check_artifact
from worker.compat.keras_rules import ADDED_IN_KERAS2
from worker.compat.serving import CHECKPOINT_FILE_OPS, OP_RUNS_ONLY_WITH_CUDA
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.findings import Code, Finding, SeenOnly, error
from worker.model.keras import KerasLayer, KerasModel

ROOT = Path(__file__).resolve().parents[2]
TF_REAL = ROOT / "tests" / "fixtures" / "tf-real" / "artifacts"


def findings_of(path: Path, consumer: str) -> list[Finding]:
    (artifact,) = read_path(str(path))
    return list(
        check_artifact(artifact, load_catalog().consumer(consumer), load_catalog()).findings
    )


def test_a_seen_only_finding_says_where_its_fact_was_seen() -> None:
    found = error(Code.OP_NEEDS_CUDA, "It fails.").seen_only(SeenOnly("tests/fixtures/x y"))
    assert found.to_json()["evidence"] == {"seen_only": True, "seen_in": "tests/fixtures/x y"}
    assert found.message.endswith(
        "(A fact seen only in tests/fixtures/x y, not measured over the releases.)"
    )


def test_a_finding_of_a_measured_fact_has_no_evidence_field() -> None:
    assert "evidence" not in error(Code.OP_NEEDS_CUDA, "It fails.").to_json()


# Each seen-only table names a fixture the repository holds.
@pytest.mark.parametrize(
    "evidence",
    [
        *(r.evidence for r in OP_RUNS_ONLY_WITH_CUDA.values()),
        *(r.evidence for r in CHECKPOINT_FILE_OPS.values()),
        *(r.evidence for r in ADDED_IN_KERAS2.values()),
        *(r.evidence for r in load_tflite_catalog().runtimes[0].required_versions),
    ],
)
def test_every_seen_only_row_names_a_fixture_of_the_repository(evidence: SeenOnly | None) -> None:
    assert evidence is not None
    assert (ROOT / evidence.seen_in.split()[0]).is_dir()


def test_check_pinned_on_a_request_path_is_a_seen_only_finding() -> None:
    (found,) = [
        f
        for f in findings_of(TF_REAL / "tf2.18" / "new_op", "2.18")
        if f.code == Code.OP_NEEDS_CUDA
    ]
    assert found.evidence == OP_RUNS_ONLY_WITH_CUDA["CheckPinned"].evidence


def test_merge_checkpoints_on_a_request_path_is_a_seen_only_finding() -> None:
    path = TF_REAL / "tf2.11" / "function_attr_default_unstripped"
    found = [f for f in findings_of(path, "2.11") if f.code == Code.REQUEST_CHECKPOINT_IO]
    assert found and found[0].evidence == CHECKPOINT_FILE_OPS["MergeV2Checkpoints"].evidence


def test_an_argument_an_older_keras2_lacks_is_a_seen_only_finding() -> None:
    pool = KerasLayer("GlobalAveragePooling1D", "p", ("keepdims", "name"))
    keras = KerasModel("hdf5", "2.10.0", model_class="Sequential", layers=(pool,))
    artifact = Artifact("m", "keras-h5", 1, "0" * 64, keras=keras)
    consumer = replace(load_catalog().consumer("2.5"))
    (found,) = [
        f
        for f in check_artifact(artifact, consumer, load_catalog()).findings
        if f.code == Code.KERAS_ARGUMENT_UNKNOWN
    ]
    assert found.evidence is not None and "conv1d.h5" in found.evidence.seen_in


def test_a_tflite_required_op_version_row_is_seen_only_in_the_data() -> None:
    doc = json.loads((ROOT / "worker" / "catalog" / "data" / "tflite_kernels.json").read_text())
    assert all(r["seen_only"] is True and r["seen_in"] for r in doc["required_versions"])
