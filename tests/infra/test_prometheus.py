"""infra/prometheus/rules.yaml: loads as Prometheus rule groups, names metrics the worker
exports, and (where promtool is installed: Debian's `prometheus` package) passes
`promtool check rules` and the rule unit tests beside this file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import worker.metrics as metrics

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "infra" / "prometheus" / "rules.yaml"
UNIT_TESTS = Path(__file__).with_name("prometheus_rules_test.yaml")


def rules() -> list[dict[str, object]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def test_every_rule_is_an_alert_with_an_expression_a_severity_and_a_summary() -> None:
    for rule in rules():
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert rule["alert"] and rule["expr"]
        assert rule["labels"]["severity"] in ("warning", "critical")  # type: ignore[index]
        assert rule["annotations"]["summary"]  # type: ignore[index]


def test_the_dead_letter_alert_reads_the_counter_the_worker_exports() -> None:
    exported = {c._name + "_total" for c in (metrics.DEAD_LETTERS, metrics.RECONCILED)}
    (dead,) = [r for r in rules() if r["alert"] == "TfcompatDeadLetters"]
    assert "tfcompat_dead_letters_total" in str(dead["expr"])
    assert "tfcompat_dead_letters_total" in exported
    assert "tfcompat_reconciler_stale_total" in exported


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_rules_and_their_unit_tests_pass() -> None:
    checked = subprocess.run(
        ["promtool", "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        ["promtool", "test", "rules", UNIT_TESTS.name],
        capture_output=True,
        text=True,
        cwd=UNIT_TESTS.parent,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
