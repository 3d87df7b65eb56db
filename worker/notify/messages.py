"""What a notification says: Slack Block Kit built from stored report documents.

Pure. Written to be read on a phone: a short header, one section per thing
(the model, who cannot load it and why, the fix), bullets instead of tables,
and every text cut to Slack's limits (3000 characters per section, 150 per
header, 50 blocks per message), so a model with hundreds of findings still
posts. The fix is each finding's `fix` (data: the release to upgrade to, which
the report already made one that serves the model, `strip_default_attrs`, the
op to drop, `model.export()`...) rendered by `worker.notify.fixes`; nothing
here reads a message's text. Everything follows `serves`: a consumer that
loads a model and fails every request is among those that cannot use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from worker.formats.layout import in_saved_model, model_folder
from worker.model.digest import digest
from worker.model.verdict import Status, consumer_status_json
from worker.notify.fixes import alternative_text, fix_text

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_TEXT = 3000  # the notification preview (`text`): short on purpose
MAX_CONSUMERS = 8  # listed per model before "and N more"
MAX_REASONS = 3  # per consumer
MAX_MODELS = 20  # in one coalesced message

EMOJI = {
    Status.INCOMPATIBLE: ":red_circle:",
    Status.AT_RISK: ":large_orange_circle:",
    Status.UNKNOWN: ":white_circle:",
    Status.INVALID: ":white_circle:",
    Status.COMPATIBLE: ":large_green_circle:",
}


@dataclass(frozen=True)
class Message:
    text: str  # the fallback, and what a phone's notification shows
    blocks: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": self.blocks}


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_url(document: Mapping[str, Any]) -> str:
    """Where the model is: `s3://bucket/key`, or `mlflow://name/version` for a version
    of a registered model (what owners.yaml `locations` globs match)."""
    registered = document.get("model_version")
    if isinstance(registered, Mapping):
        return (
            f"{registered.get('registry')}://{registered.get('name')}/{registered.get('version')}"
        )
    obj = document.get("object") or {}
    return f"s3://{obj.get('bucket', '?')}/{obj.get('key', '?')}"


def short_name(document: Mapping[str, Any]) -> str:
    """The last path segments that name the model (`ranking/v3/1`, not `saved_model.pb`)."""
    registered = document.get("model_version")
    if isinstance(registered, Mapping):
        return f"{registered.get('name')} v{registered.get('version')}"
    key = str((document.get("object") or {}).get("key") or "?")
    folder = model_folder(key) if in_saved_model(key) else key
    parts = [p for p in folder.split("/") if p]
    return "/".join(parts[-3:]) or key


def artifact_version(document: Mapping[str, Any]) -> str:
    """The object version a document is about: version id, else the ETag seen."""
    registered = document.get("model_version")
    if isinstance(registered, Mapping):
        return f"{model_url(document)}@{registered.get('server')}"
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
    """The status and who serves it: a fleet change that changes either is a new verdict."""
    answers = sorted(
        (a.get("path", ""), c.get("name", ""), str(consumer_status_json(c)))
        for a in document.get("artifacts") or []
        for c in a.get("consumers") or []
    )
    return f"{document.get('status')}:{digest(answers)}"


def consumers(document: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each consumer's findings across the document's artifacts, grouped by its status:
    `failing` (cannot load it or cannot answer a request), `at_risk`, `unknown`."""
    merged: dict[str, dict[str, Any]] = {}
    for artifact in document.get("artifacts") or []:
        for consumer in artifact.get("consumers") or []:
            entry = merged.setdefault(
                consumer["name"],
                {
                    "name": consumer["name"],
                    "tensorflow": consumer.get("tensorflow"),
                    "status": Status.COMPATIBLE,
                    "findings": [],
                },
            )
            entry["status"] = Status.worst([entry["status"], consumer_status_json(consumer)])
            entry["findings"].extend(consumer.get("findings") or [])
    groups: dict[str, list[dict[str, Any]]] = {"failing": [], "at_risk": [], "unknown": []}
    key = {Status.INCOMPATIBLE: "failing", Status.AT_RISK: "at_risk", Status.UNKNOWN: "unknown"}
    for entry in merged.values():
        if entry["status"] in key:
            groups[key[entry["status"]]].append(entry)
    return groups


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
        "op.needs-cuda": f"op `{op}` runs only in a CUDA build (requests fail)",
        "attr.unknown": f"unknown attr {_code(op, attr)}",
        "attr.ignored": f"attr {_code(op, attr)} ignored",
        "attr.ignored-unverified": f"attr {_code(op, attr)} ignored (effect not verified)",
        "kernel.changed": f"`{op}` computes other results in this release",
        "kernel.nondeterministic": f"`{op}` answers otherwise from run to run in this release",
        "attr.default-dropped": f"attr {_code(op, attr)} dropped at load",
        "attr.missing": f"`{op}` lacks required attr `{attr}`",
        "attr.not-allowed": f"value of {_code(op, attr)} not allowed",
        "attr.wrong-type": f"{_code(op, attr)} has the wrong type",
        "attr.below-minimum": f"{_code(op, attr)} below its minimum",
        "node.inputs-mismatch": f"inputs of `{op}` do not match",
        "edge.type-mismatch": f"type mismatch at `{op}`",
        "edge.invalid-output": f"missing output at `{op}`",
        "resource.uninitialized": "variables the restore never fills (requests fail)",
        "request.checkpoint-io": f"`{op}` on the request path (requests fail)",
        "version.min-consumer": "GraphDef needs a newer consumer",
        "version.min-producer": "GraphDef older than this consumer accepts",
        "version.bad-consumer": "the model bans this release",
        "version.forward-window": "exported past TF's 21-day forward window",
        "policy.bad-consumer": "release banned by policy",
        "policy.model-does-not-ban": "model does not ban the banned releases",
        "registry.unavailable": "op registry unknown",
        "tflite.schema-version": "TFLite schema other than 3",
        "tflite.op-code-out-of-range": f"TFLite op `{op}` newer than this runtime",
        "tflite.op-version": f"TFLite op `{op}` at a version this runtime lacks",
        "tflite.flex": f"Select TF op `{op}` without the Flex delegate",
        "tflite.custom-op": f"TFLite custom op `{op}` not registered",
        "tflite.kernel-prepare": f"`{op}` kernel cannot prepare it",
        "tflite.wrong-values": f"`{op}` answers wrong values (requests fail)",
        "tflite.kernel-invoke": f"`{op}` kernel refuses its type when run (requests fail)",
        "tflite.runtime-unmeasured": "TFLite runtime not measured",
    }.get(code, code.replace(".", " ") or "unknown")
    if finding.get("severity") == "error" and finding.get("stage") == "request":
        short += " — loads, every request fails" if "requests fail" not in short else ""
    return short


def consumer_line(consumer: Mapping[str, Any]) -> str:
    findings = list(consumer.get("findings") or [])
    errors = [f for f in findings if f.get("severity") == "error"]
    wanted = errors or [f for f in findings if f.get("severity") == "warning"] or findings
    distinct = list({(f.get("code"), f.get("op"), f.get("attr")): f for f in wanted}.values())
    reasons = list(dict.fromkeys(reason(f) for f in distinct[: MAX_REASONS * 2]))
    hidden = len(distinct) - min(len(distinct), MAX_REASONS)
    more = f"; +{hidden} more" if hidden else ""
    tf = f" (TF {consumer['tensorflow']})" if consumer.get("tensorflow") else ""
    return f"• *{consumer['name']}*{tf}: {'; '.join(reasons[:MAX_REASONS]) or 'see report'}{more}"


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in release.split("."))


def fixes(document: Mapping[str, Any]) -> list[str]:
    """Concrete fixes from the findings' fix data, most useful first, without repeats:
    fixed copies the worker already wrote (`TFCOMPAT_FIX_PREFIX`), re-exports (they
    help every consumer), then one upgrade per consumer, then the other ways out."""
    exports: list[str] = []
    upgrades: list[str] = []
    others: list[str] = []
    groups = consumers(document)
    for consumer in groups["failing"] + groups["at_risk"] + groups["unknown"]:
        if consumer in groups["failing"]:
            wanted: tuple[str, ...] = ("error",)
        elif consumer in groups["at_risk"]:
            wanted = ("warning",)
        else:
            wanted = ("info", "warning")
        releases: list[str] = []
        for f in consumer.get("findings", []):
            fix = f.get("fix")
            if f.get("severity") not in wanted or not fix:
                continue
            if fix.get("kind") == "upgrade_to":
                if fix.get("release"):
                    releases.append(str(fix["release"]))
                alternative = alternative_text(fix)
                if alternative:
                    others.append(alternative)
                continue
            text = fix_text(fix, consumer["name"])
            if not text:
                continue
            if fix.get("kind") in ("strip_default_attrs", "drop_attr", "use_model_export"):
                exports.append(text)
            else:
                others.append(text)
        if releases:
            target = max(releases, key=_release_key)
            upgrades.append(f"Upgrade `{consumer['name']}` to TensorFlow >= {target}")
    exports.sort(key=lambda line: "strip_default_attrs" not in line)  # helps most models
    copies = [
        f"`{copy['consumer']}` can use this fixed copy: `{copy['url']}` ({copy.get('status')})"
        for copy in document.get("fixed_copies") or []
        if copy.get("consumer") and copy.get("url")
    ]
    return list(dict.fromkeys(copies + exports + upgrades + others))


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
    mark = f"{EMOJI.get(Status(status), '') if status in set(Status) else ''} " if compact else ""
    releases = ", ".join(document.get("compatible_releases") or []) or "none known"
    version = (document.get("object") or {}).get("version_id")
    lines = [
        f"{mark}*{status.upper()}* `{model_url(document)}`",
        f"Serves in TensorFlow *{releases}*"
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
    unknown = [consumer_line(c) for c in groups["unknown"]]
    fix = [f"• {line}" for line in fixes(document)]
    parts = [_summary(document, compact)]
    if failing:
        parts.append(_bullets("Cannot serve it", failing, MAX_CONSUMERS))
    if at_risk:
        parts.append(_bullets("At risk", at_risk, MAX_CONSUMERS))
    if unknown:
        parts.append(_bullets("Unknown (no op registry)", unknown, MAX_CONSUMERS))
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
        emoji = EMOJI.get(Status(status), "") if status in set(Status) else ""
        header = f"{emoji} {status.capitalize()}: {short_name(document)}"
        text = f"{status.upper()}: {model_url(document)}" + (
            f" cannot serve in {', '.join(failing)}" if failing else ""
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
