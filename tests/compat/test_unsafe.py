"""Ops that should never be served, on SavedModels real TensorFlow wrote and called.

tests/fixtures/unsafe/tf{1.15,2.15,2.21} (tools/unsafe/make_models.py): each case's
cases.json records what calling the model did (read a secret file, wrote a file,
listed /etc, ran Python). Every unsafe case is flagged with its code and op, the
clean ones are not; the fleet policy turns the warning into an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.policy import Policy
from worker.compat.unsafe import TAG_LIMIT, _fit, hazards, unsafe_tag
from worker.formats.read import read_path
from worker.model.findings import Code, Severity, Stage
from worker.model.verdict import Status

UNSAFE = Path(__file__).resolve().parents[1] / "fixtures" / "unsafe"
KERAS = Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "models"
EXPECTED = {
    "clean": None,
    "read_file": (Code.UNSAFE_FILE_IO, "ReadFile"),
    "write_file": (Code.UNSAFE_FILE_IO, "WriteFile"),
    "matching_files": (Code.UNSAFE_FILE_IO, "MatchingFiles"),
    "py_function": (Code.UNSAFE_PYTHON, "EagerPyFunc"),
    "py_func": (Code.UNSAFE_PYTHON, "PyFunc"),
}
S3_TAG_VALUE = r"^[\w .:/=+\-@]*$"


def cases() -> list[tuple[str, str]]:
    found = []
    for release in sorted(UNSAFE.iterdir()):
        if release.is_dir() and not release.name.startswith("tflite"):
            recorded = json.loads((release / "cases.json").read_text())
            found += [(release.name, case) for case in recorded if not case.startswith("_")]
    assert len(found) == 14
    return found


# Every case real TensorFlow called: what the call did is what we flag.
@pytest.mark.parametrize(("release", "case"), cases())
def test_each_unsafe_case_is_flagged_and_clean_ones_are_not(release: str, case: str) -> None:
    recorded = json.loads((UNSAFE / release / "cases.json").read_text())[case]
    assert recorded["called"]  # the op really ran in that release
    (artifact,) = read_path(str(UNSAFE / release / case))
    found = [(h.code, h.op) for h in hazards(artifact)]
    assert found == ([] if EXPECTED[case] is None else [EXPECTED[case]])


TFLITE_EXPECTED = {
    "clean": [],
    "read_file": [(Code.UNSAFE_FILE_IO, "FlexReadFile")],
    "write_file": [(Code.UNSAFE_FILE_IO, "FlexWriteFile")],
}


# .tflite files converted with Select TF ops: the file ops run in the Flex delegate. 2.15's
# tf.lite.Interpreter ran them (read the secret, wrote the file); 2.21's has no Flex
# delegate and refused them; MatchingFiles is no Select TF op and did not convert.
@pytest.mark.parametrize("release", ["tflite2.15", "tflite2.21"])
@pytest.mark.parametrize("case", sorted(TFLITE_EXPECTED))
def test_select_tf_file_ops_in_a_tflite_are_flagged(release: str, case: str) -> None:
    recorded = json.loads((UNSAFE / release / "cases.json").read_text())
    assert recorded[case]["converted"] and not recorded["matching_files"]["converted"]
    if release == "tflite2.15":
        assert recorded[case]["called"]
        if case == "read_file":
            assert recorded[case]["outputs"]["leak"] == "not for the model to read\n"
    (artifact,) = read_path(str(UNSAFE / release / f"{case}.tflite"))
    assert [(h.code, h.op) for h in hazards(artifact)] == TFLITE_EXPECTED[case]


def test_the_saver_ops_of_a_clean_model_are_not_findings() -> None:
    (artifact,) = read_path(str(UNSAFE / "tf2.21" / "clean"))
    ops = {k.op for g in artifact.graphs() for k in g.kinds}
    assert {"SaveV2", "RestoreV2", "MergeV2Checkpoints"} <= ops
    assert hazards(artifact) == []


def test_an_unsafe_op_is_a_warning_that_leaves_the_model_served() -> None:
    (artifact,) = read_path(str(UNSAFE / "tf2.21" / "read_file"))
    verdict = check_artifact(artifact, load_catalog().consumer("2.21"), load_catalog())
    (finding,) = [f for f in verdict.findings if f.code == Code.UNSAFE_FILE_IO]
    assert finding.severity == Severity.WARNING and finding.op == "ReadFile"
    assert verdict.serves is True and verdict.status == Status.AT_RISK


def test_the_policy_switch_makes_unsafe_ops_refused() -> None:
    (artifact,) = read_path(str(UNSAFE / "tf2.15" / "py_function"))
    policy = Policy(unsafe_ops=Severity.ERROR)
    verdict = check_artifact(artifact, load_catalog().consumer("2.15"), load_catalog(), policy)
    (finding,) = [f for f in verdict.findings if f.code == Code.UNSAFE_PYTHON]
    assert finding.severity == Severity.ERROR and finding.stage == Stage.POLICY
    assert verdict.loads is True and verdict.serves is False
    assert verdict.status == Status.INCOMPATIBLE


def test_a_keras_lambda_with_marshalled_python_counts_as_python() -> None:
    (artifact,) = read_path(str(KERAS / "tf2.21" / "lambda.keras"))
    assert [(h.code, h.op) for h in hazards(artifact)] == [(Code.UNSAFE_PYTHON, "Lambda")]
    (dense,) = read_path(str(KERAS / "tf2.21" / "dense.keras"))
    assert hazards(dense) == []


# The tag names each hazard's kind and ops, within S3's alphabet and length.
def test_the_unsafe_tag_lists_the_ops() -> None:
    artifacts = [
        *read_path(str(UNSAFE / "tf2.21" / "read_file")),
        *read_path(str(UNSAFE / "tf2.21" / "py_function")),
    ]
    assert unsafe_tag(artifacts) == "file-io=ReadFile python=EagerPyFunc"
    assert unsafe_tag(read_path(str(UNSAFE / "tf2.21" / "clean"))) is None


def test_a_long_unsafe_tag_is_cut_at_an_op_boundary() -> None:
    value = _fit("file-io=" + "+".join(f"ReadFileNumber{i}" for i in range(40)))
    assert len(value) <= TAG_LIMIT and value.endswith("+more")
    assert "ReadFileNumber" in value.removesuffix("+more").rsplit("+", 1)[-1]
    import re

    assert re.match(S3_TAG_VALUE, value)


def test_a_tflite_verdict_carries_its_unsafe_select_tf_ops() -> None:
    (artifact,) = read_path(str(UNSAFE / "tflite2.15" / "read_file.tflite"))
    consumer = load_catalog().consumer("2.15")
    warned = check_artifact(artifact, consumer, load_catalog())
    refused = check_artifact(artifact, consumer, load_catalog(), Policy(unsafe_ops=Severity.ERROR))
    assert Code.UNSAFE_FILE_IO in {f.code for f in warned.findings}
    assert refused.serves is False and refused.findings[-1].stage == Stage.POLICY
