"""An object-store change, as every event source is reduced to it.

S3, SNS, EventBridge, MinIO and SQS deliveries all become `ObjectEvent`s; tasks
carry them as plain JSON, and workers ignore fields they do not know, so old
and new workers can share a queue during a rolling upgrade.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from worker.errors import MalformedEvent


@dataclass(frozen=True)
class ObjectEvent:
    """One object-level change; the identity is (bucket, key, version_id or sequencer)."""

    bucket: str
    key: str
    event_name: str  # "ObjectCreated:Put", "ObjectRemoved:Delete", ...
    version_id: str | None = None
    sequencer: str | None = None
    event_time: str | None = None
    size: int | None = None
    etag: str | None = None
    source: str = "s3"

    @property
    def created(self) -> bool:
        return self.event_name.startswith("ObjectCreated")

    @property
    def removed(self) -> bool:
        return self.event_name.startswith("ObjectRemoved")

    @property
    def identity(self) -> str:
        return f"{self.bucket}/{self.key}@{self.version_id or self.sequencer or '-'}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ObjectEvent:
        if not isinstance(data, dict):
            raise MalformedEvent("an object event is a JSON object")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        for name in ("bucket", "key", "event_name"):
            if not isinstance(known.get(name), str) or not known[name]:
                raise MalformedEvent(f"object event without {name}")
        return cls(**known)
