"""The ports the pipeline talks through; adapters live beside them.

`ObjectStore` has a real adapter (`sinks.s3.S3ObjectStore`, boto3 against any
S3-compatible endpoint) and an in-memory one (`sinks.memory.MemoryObjectStore`)
for unit tests of the orchestration. A store knows files, not models: it opens
a `Tree` under a prefix and `worker.formats.layout` decides what to read there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from worker.formats.source import Tree
from worker.sinks.tags import Tag


@dataclass(frozen=True)
class ObjectHead:
    size: int
    etag: str | None
    version_id: str | None
    metadata: Mapping[str, str] = field(default_factory=dict)  # user metadata (x-amz-meta-*)


@dataclass(frozen=True)
class Pin:
    """Read exactly what an event named: its version, or (unversioned) its content.

    With `etag` and no version, a read of content that has changed since raises
    `Superseded` (the newer write's own event will follow)."""

    version_id: str | None = None
    etag: str | None = None


@dataclass(frozen=True)
class Seen:
    """What reading a pinned object told us, at no extra request."""

    etag: str | None
    current: bool | None  # the version read is the object's current one; None: not known
    metadata: Mapping[str, str] | None = None  # its user metadata (x-amz-meta-*); None: unknown


class ObjectTree(Tree, Protocol):
    def seen(self, name: str) -> Seen | None:
        """What was learnt opening `name` (None if it was not opened)."""
        ...


class ObjectStore(Protocol):
    def head(self, bucket: str, key: str, version_id: str | None) -> ObjectHead:
        """The object's current head; NotFound if it (or that version) is gone."""
        ...

    def tree(self, bucket: str, prefix: str, pins: Mapping[str, Pin] | None = None) -> ObjectTree:
        """The objects under `prefix` ('' for the whole bucket; names are relative to it),
        listed only when asked; `pins` name the versions to read of some of them."""
        ...

    def get_tags(self, bucket: str, key: str, version_id: str | None) -> list[Tag]: ...

    def put_tags(self, bucket: str, key: str, version_id: str | None, tags: list[Tag]) -> None: ...

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        """A JSON document we stored, or None if there is none."""
        ...

    def put_report(self, bucket: str, key: str, body: bytes) -> bool:
        """Store a report unless the very same bytes are stored there; True if written."""
        ...

    def delete(self, bucket: str, key: str) -> None: ...


def etag_equal(a: str | None, b: str | None) -> bool:
    return (a or "").strip('"') == (b or "").strip('"')
