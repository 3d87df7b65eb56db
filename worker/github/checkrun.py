"""What the `tf-compat` check run says: conclusion, title, Markdown summary, annotations.

Pure. The summary is a models x consumers matrix (one row per file checked,
one column per consumer, the releases that load it) followed by the fixes;
annotations put each consumer that cannot load a file, or is at risk, on that
file (on the consumer's own line when the file is the fleet file). GitHub's
limits are kept here: 65535 characters of summary, 255 of an annotation
title, 64 KB of its message; the 50-annotations-per-request limit is the
caller's (`pipeline.github_checks` sends them in batches).

Conclusions follow `serves`: `failure` when some consumer cannot load a model
or cannot answer a request, `neutral` when one is only at risk, its answer is
unknown (no op registry), or a file could not be read as a model (a `.pb` that
is not TensorFlow's must not block a merge), `success` otherwise, also when the
change touches no model at all. Fixes are rendered from the findings' data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from worker.model.verdict import Status, consumer_status_json
from worker.notify.fixes import fix_text
from worker.notify.messages import clip, consumers, fixes, reason

MAX_SUMMARY = 65535
MAX_TITLE = 255
MAX_MESSAGE = 64000
MAX_ROWS = 200
MARK = {
    Status.COMPATIBLE: "✅",
    Status.AT_RISK: "⚠️",
    Status.UNKNOWN: "❔",
    Status.INCOMPATIBLE: "❌",
}
STATUS_MARK = {
    Status.COMPATIBLE: "✅ compatible",
    Status.AT_RISK: "⚠️ at-risk",
    Status.UNKNOWN: "❔ unknown",
    Status.INCOMPATIBLE: "❌ incompatible",
    Status.INVALID: "❔ unreadable",
}


@dataclass(frozen=True)
class CheckedFile:
    """One repository file checked: a model file or a pointer to an s3:// object."""

    path: str
    reports: tuple[Mapping[str, Any], ...]  # `check --json` artifact reports
    source: str | None = None  # the s3:// URL a pointer names
    error: str | None = None  # unreadable: why

    @property
    def status(self) -> Status:
        if self.error is not None or not self.reports:
            return Status.INVALID
        return Status.worst(str(r["status"]) for r in self.reports)

    @property
    def document(self) -> dict[str, Any]:
        """The shape `messages` reads (status, artifacts, min_release)."""
        mins = [r.get("min_release") for r in self.reports]
        return {
            "status": self.status,
            "artifacts": list(self.reports),
            "min_release": mins[0] if len(mins) == 1 else None,
        }


@dataclass(frozen=True)
class CheckOutput:
    conclusion: str
    title: str
    summary: str
    annotations: list[dict[str, Any]] = field(default_factory=list)

    def output(self, annotations: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        data: dict[str, Any] = {"title": self.title, "summary": self.summary}
        if annotations:
            data["annotations"] = list(annotations)
        return data


def conclusion_of(files: Sequence[CheckedFile]) -> str:
    worst = Status.worst([Status.COMPATIBLE, *(f.status for f in files)])
    if worst == Status.INCOMPATIBLE:
        return "failure"
    if worst != Status.COMPATIBLE:
        return "neutral"
    return "success"


def consumer_state(file: CheckedFile, name: str) -> Status | None:
    """One consumer's status over the file's models; None: it was not checked."""
    states = [
        consumer_status_json(consumer)
        for report in file.reports
        for consumer in report.get("consumers") or []
        if consumer.get("name") == name
    ]
    return Status.worst(states) if states else None


def _releases(file: CheckedFile) -> str:
    ranges = sorted({r for report in file.reports for r in report.get("compatible_releases") or []})
    return ", ".join(ranges) or "none"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def title_of(files: Sequence[CheckedFile]) -> str:
    if not files:
        return "No TensorFlow model, model pointer or fleet file changed"
    broken = [f for f in files if f.status == Status.INCOMPATIBLE]
    risky = [f for f in files if f.status != Status.COMPATIBLE]
    noun = "model" if len(files) == 1 else "models"
    if broken:
        text = f"{len(broken)} of {len(files)} {noun} cannot serve in every consumer"
    elif risky:
        text = f"{len(risky)} of {len(files)} {noun} at risk, unknown or unreadable"
    else:
        text = f"All {len(files)} {noun} serve in every consumer"
    return clip(text, MAX_TITLE)


def summary_of(files: Sequence[CheckedFile], consumer_names: Sequence[Any], context: str) -> str:
    """`consumer_names`: (name, tensorflow) pairs, the matrix columns."""
    lines = [context, ""]
    if not files:
        return "\n".join([*lines, "Nothing to check in this change."])
    header = ["Model", "Status"] + [
        f"{_cell(name)}<br>{tf or 'manifest'}" for name, tf in consumer_names
    ]
    lines.append("| " + " | ".join([*header, "Loads in TensorFlow"]) + " |")
    lines.append("|" + "---|---|" + ":-:|" * len(consumer_names) + "---|")
    for file in files[:MAX_ROWS]:
        name = f"`{_cell(file.path)}`" + (f"<br>→ `{_cell(file.source)}`" if file.source else "")
        states = [consumer_state(file, n) for n, _ in consumer_names]
        cells = [MARK.get(state, "·") if state else "·" for state in states]
        row = [name, STATUS_MARK[file.status], *cells, _cell(_releases(file))]
        lines.append("| " + " | ".join(row) + " |")
    if len(files) > MAX_ROWS:
        lines.append(f"\n…and {len(files) - MAX_ROWS} more files (see the annotations).")
    lines.append(
        "\n✅ serves · ⚠️ serves, with a named hazard · ❔ unknown (no op registry) · "
        "❌ cannot load it or cannot answer a request · `·` not checked"
    )
    fix_lines = []
    for file in files:
        if file.error:
            fix_lines.append(f"- `{file.path}`: could not be read: {file.error}")
            continue
        for line in fixes(file.document):
            fix_lines.append(f"- `{file.path}`: {line}")
    if fix_lines:
        lines += ["", "### Fixes", *fix_lines]
    return clip("\n".join(lines), MAX_SUMMARY)


def annotations_of(
    files: Sequence[CheckedFile], consumer_lines: Mapping[str, tuple[str, int]] | None = None
) -> list[dict[str, Any]]:
    """One annotation per (file, consumer that cannot load it or is at risk), and one per
    unreadable file. `consumer_lines` puts a consumer's annotations on its fleet-file line."""
    annotations: list[dict[str, Any]] = []
    for file in files:
        if file.error is not None:
            annotations.append(
                {
                    "path": file.path,
                    "start_line": 1,
                    "end_line": 1,
                    "annotation_level": "warning",
                    "title": clip(f"{file.path}: not checked", MAX_TITLE),
                    "message": clip(
                        f"Could not read it as a TensorFlow model: {file.error}", MAX_MESSAGE
                    ),
                }
            )
            continue
        groups = consumers(file.document)
        for level, group in (("failure", groups["failing"]), ("warning", groups["at_risk"])):
            for consumer in group:
                findings = consumer.get("findings") or []
                severity = "error" if level == "failure" else "warning"
                wanted = [f for f in findings if f.get("severity") == severity] or findings
                why = list(dict.fromkeys(reason(f) for f in wanted))
                verb = "cannot serve" if level == "failure" else "is at risk serving"
                tf = f" (TensorFlow {consumer['tensorflow']})" if consumer.get("tensorflow") else ""
                fix_lines = list(
                    dict.fromkeys(
                        text for f in wanted if (text := fix_text(f.get("fix"), consumer["name"]))
                    )
                )
                message = (
                    "; ".join(why)
                    + "\n\n"
                    + "\n".join(str(f.get("message", "")) for f in wanted[:20])
                    + ("\n\nFix: " + "\n".join(fix_lines) if fix_lines else "")
                )
                path, line = file.path, 1
                if consumer_lines and consumer["name"] in consumer_lines:
                    path, line = consumer_lines[consumer["name"]]
                annotations.append(
                    {
                        "path": path,
                        "start_line": line,
                        "end_line": line,
                        "annotation_level": level,
                        "title": clip(f"{consumer['name']}{tf} {verb} {file.path}", MAX_TITLE),
                        "message": clip(message, MAX_MESSAGE),
                    }
                )
    return annotations


def check_output(
    files: Sequence[CheckedFile],
    consumer_names: Sequence[Any],
    context: str,
    consumer_lines: Mapping[str, tuple[str, int]] | None = None,
) -> CheckOutput:
    return CheckOutput(
        conclusion_of(files),
        title_of(files),
        summary_of(files, consumer_names, context),
        annotations_of(files, consumer_lines),
    )


def config_error_output(path: str, line: int, error: str) -> CheckOutput:
    """The PR's fleet file does not load: fail, on its line."""
    return CheckOutput(
        "failure",
        clip(f"{path} does not load", MAX_TITLE),
        clip(f"The fleet file in this change is invalid:\n\n```\n{error}\n```", MAX_SUMMARY),
        [
            {
                "path": path,
                "start_line": line,
                "end_line": line,
                "annotation_level": "failure",
                "title": clip(f"{path}: invalid fleet file", MAX_TITLE),
                "message": clip(error, MAX_MESSAGE),
            }
        ],
    )
