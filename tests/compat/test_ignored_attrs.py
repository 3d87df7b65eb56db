"""Ignored attrs on models made by real TensorFlow: the verdict follows the measured table,
and agrees with what each real release computed (tests/fixtures/attrs, outcomes.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.consumer import Loader
from worker.model.findings import Code, Severity
from worker.model.verdict import Status

ROOT = Path(__file__).resolve().parents[2]
ATTRS = ROOT / "tests" / "fixtures" / "attrs"
CTC = ATTRS / "ctc_blank_index" / "frozen_graph.pb"


def test_ctc_blank_index_in_2_5_is_at_risk_with_the_measured_difference() -> None:
    catalog = load_catalog()
    (artifact,) = read_path(str(CTC))
    verdict = check_artifact(artifact, catalog.consumer("2.5"), catalog)
    assert verdict.status == Status.AT_RISK
    (found,) = [f for f in verdict.findings if f.attr == "blank_index"]
    assert (found.code, found.severity, found.op) == (
        Code.ATTR_IGNORED,
        Severity.WARNING,
        "CTCGreedyDecoder",
    )
    assert "with blank_index=" in found.message and "the results differ" in found.message


def test_the_command_line_says_at_risk_for_the_ctc_model() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", "check", str(CTC), "--consumer", "tf==2.5", "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    (report,) = json.loads(done.stdout)["artifacts"]
    assert report["status"] == "at-risk", done.stdout
    (consumer,) = report["consumers"]
    assert [f["code"] for f in consumer["findings"] if f["severity"] == "warning"] == [
        "attr.ignored"
    ]


def _outcome_rows() -> list[tuple[str, str, dict[str, object]]]:
    rows = []
    for path in sorted(ATTRS.glob("*/outcomes.json")):
        doc = json.loads(path.read_text())
        for release, result in sorted(doc["releases"].items()):
            rows.append((path.parent.name, release, result))
    return rows


@pytest.mark.parametrize(
    ("case", "release", "real"), _outcome_rows(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_the_verdict_agrees_with_what_the_release_computed(
    case: str, release: str, real: dict[str, object]
) -> None:
    """Failed to import: incompatible; imported and answered otherwise than the producer
    release: at-risk; the same answer: compatible."""
    catalog = load_catalog()
    (artifact,) = read_path(str(ATTRS / case / "frozen_graph.pb"))
    verdict = check_artifact(artifact, catalog.consumer(release, Loader.GRAPH_IMPORT), catalog)
    if not real["loads"]:
        expected = Status.INCOMPATIBLE
    elif not real["same"]:
        expected = Status.AT_RISK
    else:
        expected = Status.COMPATIBLE
    assert verdict.status == expected, [f.message for f in verdict.findings]
