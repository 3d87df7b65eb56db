"""The GitHub Action's step (`action.yml`): check models, write SARIF, a job summary.

Run as GitHub runs a composite action's script, from its environment:
- `INPUT_PATHS`: model paths or globs, one per line (or space-separated);
- `INPUT_CONSUMERS`: `--consumer` specs, one per line; `INPUT_FLEET`: a fleet file;
- `INPUT_SARIF`: where to write the SARIF log ('' for none);
- `GITHUB_STEP_SUMMARY`, `GITHUB_OUTPUT`: the files GitHub reads the job summary and
  the step's outputs (`exit-code`, `sarif`, `status`) from.

It exits 0 so that a SARIF upload step can still run; the action's last step exits
with `exit-code`, which follows `tfcompat check`: 0 every consumer serves every model,
1 some cannot, 2 invalid input or usage, 3 only unknown answers.
"""

from __future__ import annotations

import glob
import json
import os
import sys
from pathlib import Path
from typing import Any

from worker.cli.errors import UsageError
from worker.errors import TfcompatError

_MARKS = {True: "✅", False: "❌", None: "❔"}


def _split(text: str) -> list[str]:
    return [item for line in text.splitlines() for item in line.split() if item]


def expand(patterns: list[str]) -> list[str]:
    """Globs expanded (`**` included); a pattern that matches nothing is kept as given, so
    the check reports it as unreadable rather than silently checking nothing. A
    SavedModel's `saved_model.pb` stands for its directory."""
    found: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(pattern) else []
        for path in matches or [pattern]:
            if Path(path).name in ("saved_model.pb", "saved_model.pbtxt"):
                path = str(Path(path).parent)
            if path not in found:
                found.append(path)
    return found


def summary(reports: list[dict[str, Any]], consumers: list[str]) -> str:
    """The job summary: a markdown table of every model's verdict per consumer."""
    lines = ["## tfcompat check", ""]
    if not reports:
        return "\n".join([*lines, "No model matched the paths given.", ""])
    head = ["Model", "Status", *consumers, "Releases that serve it"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for report in reports:
        by_name = {c["name"]: c for c in report.get("consumers", [])}
        cells = [f"`{report['path']}`", report.get("status", "")]
        for name in consumers:
            consumer = by_name.get(name)
            cells.append(_MARKS[consumer.get("serves")] if consumer else "")
        releases = report.get("compatible_releases") or []
        cells.append(", ".join(releases) if releases else "none")
        lines.append("| " + " | ".join(cells) + " |")
    failing = []
    for report in reports:
        for consumer in report.get("consumers", []):
            errors = [f for f in consumer.get("findings", []) if f["severity"] == "error"]
            if consumer.get("serves") is False and errors:
                where = f"`{report['path']}` in `{consumer['name']}`"
                failing.append(f"- {where}: {errors[0]['message']}")
    invalid = [
        f"- `{r['path']}`: {r.get('error')}" for r in reports if r.get("status") == "invalid"
    ]
    if failing or invalid:
        lines += ["", "### What fails", *failing, *invalid]
    return "\n".join([*lines, ""])


def _append(variable: str, text: str) -> None:
    target = os.environ.get(variable)
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text)


def main() -> int:
    from worker.cli.ci_formats import sarif_document
    from worker.cli.models import _version, check_reports
    from worker.compat.report import exit_status

    paths = expand(_split(os.environ.get("INPUT_PATHS", "")))
    specs = [line.strip() for line in os.environ.get("INPUT_CONSUMERS", "").splitlines()]
    specs = [s for s in specs if s]
    fleet = os.environ.get("INPUT_FLEET", "").strip() or None
    sarif_path = os.environ.get("INPUT_SARIF", "").strip()
    try:
        if not paths:
            raise UsageError("no model paths given (the action's `paths` input)")
        reports, consumers = check_reports(paths, specs, fleet)
        status = exit_status(reports)
    except (UsageError, TfcompatError) as exc:
        sys.stderr.write(f"tfcompat: {exc}\n")
        _append("GITHUB_OUTPUT", "exit-code=2\n")
        _append("GITHUB_STEP_SUMMARY", f"## tfcompat check\n\nThe check could not run: {exc}\n")
        return 0
    if sarif_path:
        Path(sarif_path).write_text(json.dumps(sarif_document(reports, _version()), indent=1))
    table = summary(reports, [c.name for c in consumers])
    _append("GITHUB_STEP_SUMMARY", table)
    worst = {0: "compatible", 1: "incompatible", 2: "invalid", 3: "unknown"}[status]
    _append("GITHUB_OUTPUT", f"exit-code={status}\nsarif={sarif_path}\nstatus={worst}\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
