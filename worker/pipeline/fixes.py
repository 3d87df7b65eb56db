"""Fixed copies in the pipeline (`TFCOMPAT_FIX_PREFIX`, off by default).

After an upload is checked, every fleet consumer that cannot serve it and that a
safe rewrite would make serve it (`worker.fix`) gets a copy beside it:
`<prefix>/<key>/for-<consumer>/<file>`. The original object is never modified.
Unchanged files (variables, assets) are copied server-side; only the rewritten
model file and a fresh fingerprint are uploaded. The copy is then checked
exactly like an upload (its own report and tags), and the original's report
gains `fixed_copies`: where each copy is, for whom, and its report, so Slack
messages and check runs can link it. Copies under the prefix are never fixed
again.
"""

from __future__ import annotations

import posixpath
from typing import Any

import structlog

from worker.fix.copy import CopyFile, copy_tree
from worker.fix.rewrite import render
from worker.fleet.checker import Checker
from worker.formats.access import ReadPolicy
from worker.formats.layout import read_object
from worker.ingest.gate import gate_object
from worker.model.events import ObjectEvent
from worker.model.outcome import Outcome
from worker.pipeline.process import ReportLocation, check_and_record, event_tree
from worker.sinks.reports import encode

log = structlog.get_logger(__name__)


def copy_prefix(prefix: str, key: str, consumer: str) -> str:
    return f"{prefix.strip('/')}/{key}/for-{consumer}"


def _body(item: CopyFile) -> bytes:
    if item.data is not None:
        return item.data
    assert item.pieces is not None
    return render(item.source, list(item.pieces))


def write_fixed_copies(
    event: ObjectEvent,
    outcome: Outcome,
    store: Any,
    checker: Checker,
    location: ReportLocation,
    prefix: str,
    policy: ReadPolicy,
) -> list[dict[str, Any]]:
    """Write, check and link a fixed copy for each fleet consumer that needs one. The
    original is read again only if the read rule (`policy`) allows it, and a copy is
    written only where the rule lets it be read back."""
    if outcome.action != "checked" or outcome.document is None:
        return []
    if event.key.startswith(prefix.strip("/") + "/"):
        return []  # a copy we wrote
    if outcome.status not in ("incompatible", "at-risk"):
        return []
    if any(a.get("format") == "tflite" for a in outcome.document.get("artifacts", [])):
        return []  # a .tflite is converted again, never rewritten
    if not gate_object(policy, event.bucket, event.key, "fix").allowed:
        return []
    tree, root = store.model_tree(event.bucket, event.key, event.version_id)
    display = f"s3://{event.bucket}/{event.key}"
    links = []
    for consumer in checker.consumers:
        copy = copy_tree(tree, display, [consumer], checker.catalog)
        states = [fix.state for plan in copy.plans for fix in plan.consumers]
        if "fixed" not in states or not copy.writable or copy.archive is not None:
            continue
        base = copy_prefix(prefix, event.key, consumer.name)
        if not gate_object(policy, event.bucket, f"{base}/", "fix").allowed:
            continue
        model_key = ""
        for item in copy.files:
            key = f"{base}/{item.name}"
            if item.changed:
                store.put_bytes(event.bucket, key, _body(item))
            else:
                store.copy_object(event.bucket, posixpath.join(root, item.name), key)
            if posixpath.basename(item.name) == posixpath.basename(event.key):
                model_key = key
        copy_event = ObjectEvent(
            event.bucket, model_key, "ObjectCreated:Put", source="tfcompat-fix"
        )
        tree, name, display = event_tree(copy_event, store, policy)
        artifacts = read_object(tree, name, display)
        checked = check_and_record(copy_event, artifacts, store, checker, location)
        links.append(
            {
                "consumer": consumer.name,
                "url": f"s3://{event.bucket}/{model_key}",
                "status": checked.status,
                "report": checked.report,
                "rewrites": sorted({f"{d.op}.{d.attr}" for p in copy.plans for d in p.drops}),
            }
        )
        log.info("fix.copy_written", consumer=consumer.name, key=model_key, status=checked.status)
    if links:
        # In place: hooks that run later (notifications, check runs) see the links too.
        outcome.document["fixed_copies"] = links
        bucket, key = location.of(event)
        store.put_report(bucket, key, encode(outcome.document))
    return links


def fix_hook(
    prefix: str | None, store: Any, checker: Checker, location: ReportLocation, policy: ReadPolicy
) -> Any:
    """The after-check hook, or None when fixed copies are off."""
    if not prefix:
        return None

    def write(event: ObjectEvent, outcome: Outcome) -> None:
        write_fixed_copies(event, outcome, store, checker, location, prefix, policy)

    return write
