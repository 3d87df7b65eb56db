"""What a notification says: Slack Block Kit built from stored report documents.

Pure. Written to be read on a phone: a short header, one section per thing
(the model, who cannot load it and why, the fix), bullets instead of tables,
and every text cut to Slack's limits (3000 characters per section, 150 per
header, 50 blocks per message), so a model with hundreds of findings still
posts. The fix comes from the findings themselves: the release an op or attr
appears in, `strip_default_attrs=True` where the rules say it helps, the op
to drop, the policy that bans a release.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from worker.formats.layout import in_saved_model, model_folder
from worker.model.digest import digest
from worker.model.verdict import Status

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_TEXT = 3000  # the notification preview (`text`): short on purpose
MAX_CONSUMERS = 8  # listed per model before "and N more"
MAX_REASONS = 3  # per consumer
MAX_MODELS = 20  # in one coalesced message

EMOJI = {
    "incompatible": ":red_circle:",
    "at-risk": ":large_orange_circle:",
    "invalid": ":white_circle:",
    "compatible": ":large_green_circle:",
}
_FROM_RELEASE = re.compile(
    r"(?:from|>=) TensorFlow (\d+\.\d+(?:\.\d+)?)|to >= (\d+\.\d+(?:\.\d+)?)"
)


@dataclass(frozen=True)
class Message:
    text: str  # the fallback, and what a phone's notification shows
    blocks: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": self.blocks}


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_url(document: Mapping[str, Any]) -> str:
    obj = document.get("object") or {}
    return f"s3://{obj.get('bucket', '?')}/{obj.get('key', '?')}"


def short_name(document: Mapping[str, Any]) -> str:
    """The last path segments that name the model (`ranking/v3/1`, not `saved_model.pb`)."""
    key = str((document.get("object") or {}).get("key") or "?")
    folder = model_folder(key) if in_saved_model(key) else key
    parts = [p for p in folder.split("/") if p]
    return "/".join(parts[-3:]) or key


def artifact_version(document: Mapping[str, Any]) -> str:
    """The object version a document is about: version id, else the ETag seen."""
    obj = document.get("object") or {}
    event = document.get("event") or {}  # reports of format /1 kept the ETag there
    version = (
        obj.get("version_id")
        or obj.get("etag")
        or event.get("etag")
        or event.get("sequencer")
        or "-"
    )
    return f"{model_url(document)}@{version}"


def verdict(document: Mapping[str, Any]) -> str:
    """The status and who loads it: a fleet change that changes either is a new verdict."""
    loads = sorted(
        (a.get("path", ""), c.get("name", ""), bool(c.get("loads")))
        for a in document.get("artifacts") or []
        for c in a.get("consumers") or []
    )
    return f"{document.get('status')}:{digest(loads)}"


def consumers(document: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each consumer's findings across the document's artifacts, with its load prediction."""
    merged: dict[str, dict[str, Any]] = {}
    for artifact in document.get("artifacts") or []:
        for consumer in artifact.get("consumers") or []:
            entry = merged.setdefault(
                consumer["name"],
                {"name": consumer["name"], "tensorflow": consumer.get("tensorflow"), "loads": True},
            )
            entry["loads"] = entry["loads"] and bool(consumer.get("loads"))
            entry.setdefault("findings", []).extend(consumer.get("findings") or [])
    return {
        "failing": [c for c in merged.values() if not c["loads"]],
        "at_risk": [
            c
            for c in merged.values()
            if c["loads"] and any(f.get("severity") == "warning" for f in c.get("findings", []))
        ],
    }


def release_named(message: str) -> str | None:
    """The release a finding says fixes it ("registered from TensorFlow 2.20.0")."""
    found = [a or b for a, b in _FROM_RELEASE.findall(message)]
    return max(found, key=_version_key) if found else None


def _version_key(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


def _code(op: str | None, attr: str | None) -> str:
    return f"`{op}.{attr}`" if op and attr else f"`{op or attr or '?'}`"


def reason(finding: Mapping[str, Any]) -> str:
    """One finding in a few words, naming the op, attr or version at fault."""
    code = str(finding.get("code", ""))
    op, attr = finding.get("op"), finding.get("attr")
    short = {
        "op.not-registered": f"op `{op}` not registered",
        "op.removed": f"op `{op}` removed",
        "op.custom": f"custom op `{op}` (needs its library)",
        "op.deprecated": f"op `{op}` deprecated at this GraphDef version",
        "attr.unknown": f"unknown attr {_code(op, attr)}",
        "attr.ignored": f"attr {_code(op, attr)} ignored",
        "attr.default-dropped": f"attr {_code(op, attr)} dropped at load",
        "attr.missing": f"`{op}` lacks required attr `{attr}`",
        "attr.not-allowed": f"value of {_code(op, attr)} not allowed",
        "attr.wrong-type": f"{_code(op, attr)} has the wrong type",
        "attr.below-minimum": f"{_code(op, attr)} below its minimum",
        "node.inputs-mismatch": f"inputs of `{op}` do not match",
        "edge.type-mismatch": f"type mismatch at `{op}`",
        "edge.invalid-output": f"missing output at `{op}`",
        "version.min-consumer": "GraphDef needs a newer consumer",
        "version.min-producer": "GraphDef older than this consumer accepts",
        "version.bad-consumer": "the model bans this release",
        "version.forward-window": "exported past TF's 21-day forward window",
        "policy.bad-consumer": "release banned by policy",
        "policy.model-does-not-ban": "model does not ban the banned releases",
        "registry.unavailable": "op registry unknown",
    }.get(code, code.replace(".", " ") or "unknown")
    release = release_named(str(finding.get("message", "")))
    if release and code.startswith(("op.", "attr.", "version.min")):
        short += f" (from {release})"
    return short


def consumer_line(consumer: Mapping[str, Any]) -> str:
    findings = list(consumer.get("findings") or [])
    errors = [f for f in findings if f.get("severity") == "error"] or findings
    distinct = list({(f.get("code"), f.get("op"), f.get("attr")): f for f in errors}.values())
    reasons = list(dict.fromkeys(reason(f) for f in distinct[: MAX_REASONS * 2]))
    hidden = len(distinct) - min(len(distinct), MAX_REASONS)
    more = f"; +{hidden} more" if hidden else ""
    tf = f" (TF {consumer['tensorflow']})" if consumer.get("tensorflow") else ""
    return f"• *{consumer['name']}*{tf}: {'; '.join(reasons[:MAX_REASONS]) or 'see report'}{more}"


def fixes(document: Mapping[str, Any]) -> list[str]:
    """Concrete fixes, most useful first, without repeats."""
    upgrades, others = [], []
    min_release = document.get("min_release")
    for consumer in consumers(document)["failing"]:
        errors = [f for f in consumer.get("findings", []) if f.get("severity") == "error"]
        named = [r for f in errors if (r := release_named(str(f.get("message", ""))))]
        target = max(named, key=_version_key) if named else min_release
        if any(f.get("code") == "policy.bad-consumer" for f in errors):
            others.append(f"Move `{consumer['name']}` off its banned release")
        if target:
            upgrades.append(f"Upgrade `{consumer['name']}` to TensorFlow >= {target}")
        for f in errors:
            message = str(f.get("message", ""))
            if "strip_default_attrs=True" in message:
                others.append(
                    "Re-export with `strip_default_attrs=True`, so default-valued attrs "
                    "older releases do not know are dropped"
                )
            elif f.get("code") in ("op.not-registered", "op.removed") and f.get("op"):
                others.append(f"Or drop op `{f['op']}` from the model")
            elif f.get("code") == "op.custom" and f.get("op"):
                others.append(f"Or load the library of custom op `{f['op']}` in the consumer")
            elif "back to its default" in message and f.get("op") and f.get("attr"):
                others.append(f"Or leave `{f['op']}.{f['attr']}` at its default when exporting")
    if not upgrades and not others and document.get("status") == "at-risk":
        others.append("Export with the consumers' release, or upgrade them (see warnings)")
    others.sort(key=lambda line: not line.startswith("Re-export"))  # stable: the rest keep order
    return list(dict.fromkeys(upgrades + others))


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, MAX_SECTION)}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": clip(text, MAX_SECTION)}]}


def _header(text: str) -> dict[str, Any]:
    return {"type": "header", "text": {"type": "plain_text", "text": clip(text, MAX_HEADER)}}


def _bullets(title: str, lines: Sequence[str], limit: int) -> str:
    # Each line is cut so that `limit` of them and the "more" line fit one section.
    shown = [clip(line, (MAX_SECTION - 200) // limit) for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"…and {len(lines) - limit} more")
    return f"*{title}*\n" + "\n".join(shown)


def _summary(document: Mapping[str, Any], compact: bool) -> str:
    status = str(document.get("status"))
    mark = f"{EMOJI.get(status, '')} " if compact else ""
    releases = ", ".join(document.get("compatible_releases") or []) or "none known"
    version = (document.get("object") or {}).get("version_id")
    lines = [
        f"{mark}*{status.upper()}* `{model_url(document)}`",
        f"Loads in TensorFlow *{releases}*"
        + (f" (min {document['min_release']})" if document.get("min_release") else ""),
    ]
    if version:
        lines.append(f"Version `{version}`")
    errors = [a.get("error") for a in document.get("artifacts") or [] if a.get("error")]
    if errors:
        lines.append(f"Could not read it: {errors[0]}")
    return "\n".join(lines)


def model_blocks(document: Mapping[str, Any], compact: bool = False) -> list[dict[str, Any]]:
    """One model: its summary, who cannot load it and why, the fix."""
    groups = consumers(document)
    failing = [consumer_line(c) for c in groups["failing"]]
    at_risk = [consumer_line(c) for c in groups["at_risk"]]
    fix = [f"• {line}" for line in fixes(document)]
    parts = [_summary(document, compact)]
    if failing:
        parts.append(_bullets("Cannot load it", failing, MAX_CONSUMERS))
    if at_risk:
        parts.append(_bullets("At risk", at_risk, MAX_CONSUMERS))
    if fix:
        parts.append(_bullets("Fix", fix, MAX_CONSUMERS))
    if compact:
        return [_section("\n".join(parts))]
    return [_section(p) for p in parts]


def _footer(documents: Sequence[Mapping[str, Any]], reason: str) -> dict[str, Any]:
    reports = [
        r
        for d in documents
        if (r := (d.get("tags") or {}).get("tfcompat:report") or d.get("report"))
    ]
    text = "tfcompat" + (f" · {reason}" if reason else "")
    if len(reports) == 1:
        text += f" · report `{reports[0]}`"
    return _context(text)


def owner_message(documents: Sequence[Mapping[str, Any]], team: str, reason: str = "") -> Message:
    """One message to one owner about one or more models (coalesced after a fleet change)."""
    if not documents:
        raise ValueError("a message needs at least one model")
    if len(documents) == 1:
        (document,) = documents
        status = str(document.get("status"))
        failing = [c["name"] for c in consumers(document)["failing"]]
        header = f"{EMOJI.get(status, '')} {status.capitalize()}: {short_name(document)}"
        text = f"{status.upper()}: {model_url(document)}" + (
            f" cannot load in {', '.join(failing)}" if failing else ""
        )
        blocks = [_header(header), *model_blocks(document), _footer(documents, reason)]
        return Message(clip(f"[{team}] {text}", MAX_TEXT), blocks)
    worst = Status.worst(str(d.get("status")) for d in documents)
    shown = list(documents[:MAX_MODELS])
    blocks = [_header(f"{EMOJI.get(worst, '')} {len(documents)} models need attention")]
    for document in shown:
        blocks += [*model_blocks(document, compact=True), {"type": "divider"}]
    if len(documents) > len(shown):
        blocks.append(_context(f"…and {len(documents) - len(shown)} more models"))
    blocks.append(_footer(documents, reason))
    text = f"[{team}] {len(documents)} models: " + ", ".join(short_name(d) for d in documents)
    return Message(clip(text, MAX_TEXT), blocks[:MAX_BLOCKS])
