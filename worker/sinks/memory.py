"""An in-memory ObjectStore for unit tests of the orchestration (no network).

Unversioned, like a bucket without versioning: a pinned ETag that no longer
matches raises `Superseded`, as S3 answers `If-Match` with 412.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from worker.errors import NotFound, Superseded
from worker.formats.source import BytesSource, Source
from worker.sinks.ports import ObjectHead, Pin, Seen, etag_equal
from worker.sinks.s3 import model_tree
from worker.sinks.tags import Tag


def _etag(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


class MemoryTree:
    """The store's objects under a prefix (an `ObjectTree`)."""

    def __init__(
        self, store: MemoryObjectStore, bucket: str, prefix: str, pins: Mapping[str, Pin]
    ) -> None:
        self._store, self._bucket = store, bucket
        self._prefix = prefix.rstrip("/") + "/" if prefix else ""
        self._pins = dict(pins)
        self._seen: dict[str, Seen] = {}

    @property
    def name(self) -> str:
        return f"s3://{self._bucket}/{self._prefix}".rstrip("/")

    def names(self) -> list[str]:
        return [k[len(self._prefix) :] for k in self._store.list_keys(self._bucket, self._prefix)]

    def open(self, name: str) -> Source:
        key = self._prefix + name
        data = self._store.data(self._bucket, key)
        pin = self._pins.get(name)
        if pin is not None:
            if pin.etag and not pin.version_id and not etag_equal(pin.etag, _etag(data)):
                raise Superseded(f"s3://{self._bucket}/{key}: written again since the event")
            self._seen[name] = Seen(_etag(data), None if pin.version_id else True, {})
        return BytesSource(f"s3://{self._bucket}/{key}", data)

    def seen(self, name: str) -> Seen | None:
        return self._seen.get(name)


class MemoryObjectStore:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}
        self.tags: dict[tuple[str, str], list[Tag]] = {}
        self.tag_writes = 0
        self.report_writes = 0

    def put(self, bucket: str, key: str, data: bytes, tags: list[Tag] | None = None) -> None:
        self.objects[(bucket, key)] = data
        self.tags[(bucket, key)] = list(tags or [])

    def data(self, bucket: str, key: str) -> bytes:
        try:
            return self.objects[(bucket, key)]
        except KeyError:
            raise NotFound(f"s3://{bucket}/{key}: not found") from None

    def head(self, bucket: str, key: str, version_id: str | None) -> ObjectHead:
        data = self.data(bucket, key)
        return ObjectHead(len(data), _etag(data), version_id)

    def tree(self, bucket: str, prefix: str, pins: Mapping[str, Pin] | None = None) -> MemoryTree:
        return MemoryTree(self, bucket, prefix, pins or {})

    def get_tags(self, bucket: str, key: str, version_id: str | None) -> list[Tag]:
        self.data(bucket, key)
        return [dict(t) for t in self.tags.get((bucket, key), [])]

    def put_tags(self, bucket: str, key: str, version_id: str | None, tags: list[Tag]) -> None:
        self.data(bucket, key)
        self.tags[(bucket, key)] = [dict(t) for t in tags]
        self.tag_writes += 1

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        data = self.objects.get((bucket, key))
        if data is None:
            return None
        document: dict[str, Any] = json.loads(data)
        return document

    def put_report(self, bucket: str, key: str, body: bytes) -> bool:
        if self.objects.get((bucket, key)) == body:
            return False
        self.objects[(bucket, key)] = body
        self.report_writes += 1
        return True

    def model_tree(self, bucket: str, key: str, version_id: str | None) -> tuple[Any, str]:
        """The model an event names, as a tree, and the tree's key prefix."""
        return model_tree(self, bucket, key, version_id)

    def put_bytes(self, bucket: str, key: str, body: bytes) -> None:
        self.put(bucket, key, body)

    def copy_object(self, bucket: str, source_key: str, key: str) -> None:
        self.put(bucket, key, self.data(bucket, source_key))

    def delete(self, bucket: str, key: str) -> None:
        self.objects.pop((bucket, key), None)

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return sorted(k for (b, k) in self.objects if b == bucket and k.startswith(prefix))

    def current_version(self, bucket: str, key: str) -> str | bool | None:
        return None if (bucket, key) in self.objects else False
