"""Object-store events, whatever carried them, as plain `ObjectEvent`s.

Pure parsing: S3 notification `Records` (also what MinIO's webhook target and
S3->SQS/SNS deliver), EventBridge "Object Created"/"Object Deleted" events, and
the filter that decides which events start work. Every malformed input raises
`MalformedEvent` with a one-line reason; nothing here does I/O.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from worker.errors import MalformedEvent
from worker.formats.layout import is_saved_model_part
from worker.model.events import ObjectEvent

Enqueue = Callable[[ObjectEvent], None]
"""Hands an event to the pipeline (a Celery task in production)."""


MAX_SIZE = 1 << 63
"""Sizes at or above this are no object's (S3's largest is 50 TB): refused, not converted."""

METADATA_ONLY = frozenset({"PutTagging", "DeleteTagging", "PutRetention", "PutLegalHold"})
"""MinIO's `s3:ObjectCreated:*` events that change an object's tags, retention or legal
hold, not its bytes. `mc event add --event put` subscribes to them too, and our own tag
writes send the first: checking on them would re-check every object we tag."""


def load_json(body: bytes | str) -> Any:
    """The JSON document in a delivery body, or MalformedEvent: never RecursionError
    (100,000 nested arrays) or the int-conversion limit (a 5,000-digit number)."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise MalformedEvent(f"body is not JSON ({reason})") from None


def _str(data: dict[str, Any], *path: str) -> str:
    value: Any = data
    for part in path:
        if not isinstance(value, dict) or part not in value:
            raise MalformedEvent(f"missing {'.'.join(path)}")
        value = value[part]
    if not isinstance(value, str) or not value:
        raise MalformedEvent(f"{'.'.join(path)} is not a string")
    return _unicode(value, ".".join(path))


def _unicode(value: str, name: str) -> str:
    """JSON escapes can smuggle lone surrogates, which no object key holds and no
    broker message can encode."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MalformedEvent(f"{name} is not valid Unicode") from None
    return value


def _opt(data: dict[str, Any], *path: str) -> Any:
    value: Any = data
    for part in path:
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _size(value: Any) -> int | None:
    """S3 sends sizes as numbers, some senders as digit strings; anything else is unknown.
    Absurd sizes are refused before `int()` meets Python's 4,300-digit limit."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        if len(value) > 20:
            raise MalformedEvent(f"size has {len(value)} digits")
        number = int(value)
    else:
        return None
    if not 0 <= number < MAX_SIZE:
        raise MalformedEvent("size is out of range")
    return number


def _text(value: Any, name: str) -> str | None:
    """An optional string field: absent or empty is None, any other type is malformed."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MalformedEvent(f"{name} is not a string")
    return _unicode(value, name)


def is_test_event(doc: Any) -> bool:
    """S3 sends `{"Event": "s3:TestEvent", ...}` when a notification is configured."""
    return isinstance(doc, dict) and doc.get("Event") == "s3:TestEvent"


def parse_records(doc: Any, source: str = "s3") -> list[ObjectEvent]:
    """Events from an S3 notification document (`{"Records": [...]}`).

    Keys arrive URL-encoded with '+' for spaces and are decoded with
    unquote_plus, as S3 documents. A test event yields nothing.
    """
    if is_test_event(doc):
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("Records"), list):
        raise MalformedEvent("expected an object with a Records list")
    events = []
    for index, record in enumerate(doc["Records"]):
        if not isinstance(record, dict):
            raise MalformedEvent(f"Records[{index}] is not an object")
        try:
            name = _str(record, "eventName").removeprefix("s3:")
            bucket = _str(record, "s3", "bucket", "name")
            key = _unicode(unquote_plus(_str(record, "s3", "object", "key")), "s3.object.key")
            obj = record["s3"]["object"]
            events.append(
                ObjectEvent(
                    bucket=bucket,
                    key=key,
                    event_name=name,
                    version_id=_text(obj.get("versionId"), "s3.object.versionId"),
                    sequencer=_text(obj.get("sequencer"), "s3.object.sequencer"),
                    event_time=_text(record.get("eventTime"), "eventTime"),
                    size=_size(obj.get("size")),
                    etag=_text(obj.get("eTag") or obj.get("etag"), "s3.object.eTag"),
                    source=source,
                )
            )
        except MalformedEvent as exc:
            raise MalformedEvent(f"Records[{index}]: {exc}") from None
    return events


_EVENTBRIDGE_TYPES = {
    "Object Created": "ObjectCreated:Put",
    "Object Deleted": "ObjectRemoved:Delete",
}


def parse_eventbridge(doc: Any) -> list[ObjectEvent]:
    """An EventBridge S3 event (`detail-type` "Object Created" / "Object Deleted")."""
    if not isinstance(doc, dict):
        raise MalformedEvent("expected an EventBridge event object")
    if doc.get("source") != "aws.s3":
        raise MalformedEvent(f"source is {doc.get('source')!r}, not 'aws.s3'")
    kind = doc.get("detail-type")
    if kind not in _EVENTBRIDGE_TYPES:
        return []  # other S3 event types (tags changed, restores) start nothing
    detail = doc.get("detail")
    if not isinstance(detail, dict):
        raise MalformedEvent("missing detail")
    reason = _opt(detail, "reason")
    name = _EVENTBRIDGE_TYPES[kind]
    if isinstance(reason, str) and reason and name.startswith("ObjectCreated"):
        name = f"ObjectCreated:{reason}"
    return [
        ObjectEvent(
            bucket=_str(detail, "bucket", "name"),
            key=_str(detail, "object", "key"),  # EventBridge keys are not URL-encoded
            event_name=name,
            version_id=_text(_opt(detail, "object", "version-id"), "detail.object.version-id"),
            sequencer=_text(_opt(detail, "object", "sequencer"), "detail.object.sequencer"),
            event_time=_text(doc.get("time"), "time"),
            size=_size(_opt(detail, "object", "size")),
            etag=_text(_opt(detail, "object", "etag"), "detail.object.etag"),
            source="eventbridge",
        )
    ]


def parse_s3_body(body: bytes | str, source: str = "s3") -> list[ObjectEvent]:
    return parse_records(load_json(body), source)


def parse_eventbridge_body(body: bytes | str) -> list[ObjectEvent]:
    return parse_eventbridge(load_json(body))


def parse_queue_message(body: str) -> list[ObjectEvent]:
    """An SQS message body: S3 Records directly, an SNS envelope around them, or an
    EventBridge event (all three can target a queue)."""
    doc = load_json(body)
    if isinstance(doc, dict) and doc.get("Type") == "Notification" and "Message" in doc:
        inner = doc["Message"]
        if not isinstance(inner, str):
            raise MalformedEvent("SNS Message is not a string")
        return parse_records(load_json(inner), "sns")
    if isinstance(doc, dict) and doc.get("source") == "aws.s3":
        return parse_eventbridge(doc)
    return parse_records(doc, "sqs")


@dataclass(frozen=True)
class EventFilter:
    """Which events start work: model-looking keys only, and never our own writes."""

    patterns: tuple[str, ...]
    ignore_prefixes: tuple[str, ...] = ()  # where our reports go: writing them must not loop

    def wants(self, event: ObjectEvent) -> bool:
        if not (event.created or event.removed):
            return False
        if event.event_name.rsplit(":", 1)[-1] in METADATA_ONLY:
            return False
        if any(event.key.startswith(p) for p in self.ignore_prefixes if p):
            return False
        if is_saved_model_part(event.key):
            return False
        return any(fnmatch.fnmatchcase(event.key, p) for p in self.patterns)

    def select(self, events: Iterable[ObjectEvent]) -> list[ObjectEvent]:
        return [e for e in events if self.wants(e)]
