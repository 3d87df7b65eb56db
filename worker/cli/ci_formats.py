"""`tfcompat check --format sarif|junit`: the check's report in CI's own formats.

Both are renderings of the `check --json` document (the same dicts), so they say
nothing the JSON does not:
- **SARIF 2.1.0** (GitHub code scanning, GitLab, Azure DevOps): one result per
  finding per consumer, its rule the finding code, its level from the severity
  (error, warning, note), the model file as the location and the fix in the message;
  an unreadable file is a result of rule `artifact.invalid`;
- **JUnit XML** (GitLab's test report, Jenkins' junit step): a test suite per model,
  a test case per consumer, failed where the consumer cannot serve it, skipped where
  the answer is unknown, an error where the file cannot be read.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any

from worker.notify.fixes import fix_text, plain

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INVALID_RULE = "artifact.invalid"
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _consumer_label(consumer: dict[str, Any]) -> str:
    release = consumer.get("tensorflow")
    loader = consumer.get("loader") or ""
    return f"{consumer['name']} (TensorFlow {release or 'unknown'}, {loader})"


def fix_command(path: str, consumer: dict[str, Any]) -> str | None:
    """The `tfcompat fix` that writes a copy this consumer serves, when a safe rewrite
    does (`fixable`, as the text output offers it); None otherwise."""
    if consumer.get("fixable") is not True:
        return None
    release = consumer.get("tensorflow")
    target = f"tf=={release}" if release else "NAME=MANIFEST.json"
    loader = consumer.get("loader")
    if release and loader in ("saved-model-v2", "graph-import"):  # not the default loader
        target += f"@{loader}"
    return f"tfcompat fix {path} --for {target} -o FIXED_COPY writes a copy it serves"


def _message(finding: dict[str, Any], consumer: dict[str, Any], path: str) -> str:
    fix = fix_text(finding.get("fix"), consumer.get("name"), plain)
    text = f"{_consumer_label(consumer)}: {finding['message']}"
    text = f"{text} Fix: {fix}." if fix else text
    command = fix_command(path, consumer) if finding.get("severity") == "error" else None
    return f"{text} Or: {command}." if command else text


def _location(path: str) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": path},
            "region": {"startLine": 1},
        }
    }


def sarif_document(reports: Iterable[dict[str, Any]], version: str) -> dict[str, Any]:
    """A SARIF 2.1.0 log of every finding of every report (one run)."""
    rules: list[dict[str, Any]] = []
    index_of: dict[str, int] = {}
    results: list[dict[str, Any]] = []

    def rule_index(code: str, description: str) -> int:
        if code not in index_of:
            index_of[code] = len(rules)
            rules.append({"id": code, "name": code, "shortDescription": {"text": description}})
        return index_of[code]

    for report in reports:
        path = report["path"]
        if report.get("status") == "invalid":
            results.append(
                {
                    "ruleId": INVALID_RULE,
                    "ruleIndex": rule_index(INVALID_RULE, "The model file cannot be read"),
                    "level": "error",
                    "message": {"text": report.get("error") or "the file cannot be read"},
                    "locations": [_location(path)],
                }
            )
            continue
        for consumer in report.get("consumers", []):
            for finding in consumer.get("findings", []):
                code = finding["code"]
                results.append(
                    {
                        "ruleId": code,
                        "ruleIndex": rule_index(code, f"tfcompat finding {code}"),
                        "level": _LEVELS.get(finding["severity"], "note"),
                        "message": {"text": _message(finding, consumer, path)},
                        "locations": [_location(path)],
                        "partialFingerprints": {
                            "tfcompat/v1": f"{path}|{consumer['name']}|{code}|"
                            f"{finding.get('op') or ''}|{finding.get('attr') or ''}"
                        },
                        "properties": {
                            "consumer": consumer["name"],
                            "tensorflow": consumer.get("tensorflow"),
                            "loader": consumer.get("loader"),
                            "loads": consumer.get("loads"),
                            "serves": consumer.get("serves"),
                            "stage": finding.get("stage"),
                        },
                    }
                )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "tfcompat",
                        "version": version,
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }


def junit_document(reports: Iterable[dict[str, Any]]) -> str:
    """JUnit XML: a suite per model, a case per consumer (failed: it cannot serve it)."""
    root = ET.Element("testsuites", name="tfcompat")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for report in reports:
        path = report["path"]
        suite = ET.SubElement(root, "testsuite", name=path)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if report.get("status") == "invalid":
            case = ET.SubElement(suite, "testcase", classname=path, name="read", time="0")
            error = ET.SubElement(case, "error", message=report.get("error") or "unreadable")
            error.set("type", INVALID_RULE)
            error.text = report.get("error") or ""
            counts["tests"] += 1
            counts["errors"] += 1
        for consumer in report.get("consumers", []):
            case = ET.SubElement(
                suite, "testcase", classname=path, name=_consumer_label(consumer), time="0"
            )
            counts["tests"] += 1
            errors = [f for f in consumer.get("findings", []) if f["severity"] == "error"]
            if consumer.get("serves") is False:
                first = errors[0] if errors else {"code": "", "message": "cannot serve it"}
                failure = ET.SubElement(
                    case, "failure", message=first["message"][:500], type=first["code"]
                )
                failure.text = "\n".join(_message(f, consumer, path) for f in errors)
                counts["failures"] += 1
            elif consumer.get("serves") is None:
                ET.SubElement(case, "skipped", message="unknown: nothing measured answers it")
                counts["skipped"] += 1
            warnings = [f for f in consumer.get("findings", []) if f["severity"] == "warning"]
            if warnings:
                out = ET.SubElement(case, "system-out")
                out.text = "\n".join(_message(f, consumer, path) for f in warnings)
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
