"""An in-memory ObjectStore for unit tests of the orchestration (no network)."""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any

from worker.errors import NotFound
from worker.formats.read import SAVED_MODEL_FILES, read_saved_model_dir, read_source
from worker.formats.source import BytesSource, MappingTree, Source, Tree
from worker.model.artifact import Artifact
from worker.sinks.ports import ObjectHead
from worker.sinks.tags import Tag


class MemoryObjectStore:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}
        self.tags: dict[tuple[str, str], list[Tag]] = {}
        self.tag_writes = 0

    def put(self, bucket: str, key: str, data: bytes, tags: list[Tag] | None = None) -> None:
        self.objects[(bucket, key)] = data
        self.tags[(bucket, key)] = list(tags or [])

    def _data(self, bucket: str, key: str) -> bytes:
        try:
            return self.objects[(bucket, key)]
        except KeyError:
            raise NotFound(f"s3://{bucket}/{key}: not found") from None

    def head(self, bucket: str, key: str, version_id: str | None) -> ObjectHead:
        data = self._data(bucket, key)
        return ObjectHead(len(data), hashlib.md5(data).hexdigest(), version_id)

    def read_artifacts(self, bucket: str, key: str, version_id: str | None) -> list[Artifact]:
        base = posixpath.basename(key)
        if base in SAVED_MODEL_FILES or key.endswith("variables/variables.index"):
            root = posixpath.dirname(key)
            if base not in SAVED_MODEL_FILES:
                root = posixpath.dirname(root)
            sources: dict[str, Source] = {
                k[len(root) + 1 :]: BytesSource(f"s3://{b}/{k}", v)
                for (b, k), v in self.objects.items()
                if b == bucket and k.startswith(root + "/")
            }
            tree = MappingTree(f"s3://{bucket}/{root}", sources)
            return [read_saved_model_dir(tree, "", f"s3://{bucket}/{root}")]
        url = f"s3://{bucket}/{key}"
        return read_source(BytesSource(url, self._data(bucket, key)), url)

    def get_tags(self, bucket: str, key: str, version_id: str | None) -> list[Tag]:
        self._data(bucket, key)
        return [dict(t) for t in self.tags.get((bucket, key), [])]

    def put_tags(self, bucket: str, key: str, version_id: str | None, tags: list[Tag]) -> None:
        self._data(bucket, key)
        self.tags[(bucket, key)] = [dict(t) for t in tags]
        self.tag_writes += 1

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        data = self.objects.get((bucket, key))
        if data is None:
            return None
        document: dict[str, Any] = json.loads(data)
        return document

    def put_json(self, bucket: str, key: str, body: bytes) -> None:
        self.objects[(bucket, key)] = body

    def model_tree(self, bucket: str, key: str, version_id: str | None) -> tuple[Tree, str]:
        """The model an event names, as a tree, and the tree's key prefix."""
        base = posixpath.basename(key)
        root = posixpath.dirname(key) if base in SAVED_MODEL_FILES else key
        if base in SAVED_MODEL_FILES:
            sources: dict[str, Source] = {
                k[len(root) + 1 :]: BytesSource(f"s3://{b}/{k}", v)
                for (b, k), v in self.objects.items()
                if b == bucket and k.startswith(root + "/")
            }
            return MappingTree(f"s3://{bucket}/{root}", sources), root
        return MappingTree(
            f"s3://{bucket}/{key}", {base: BytesSource(key, self._data(bucket, key))}
        ), posixpath.dirname(key)

    def put_bytes(self, bucket: str, key: str, body: bytes) -> None:
        self.put(bucket, key, body)

    def copy_object(self, bucket: str, source_key: str, key: str) -> None:
        self.put(bucket, key, self._data(bucket, source_key))

    def delete(self, bucket: str, key: str) -> None:
        self.objects.pop((bucket, key), None)

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        return sorted(k for (b, k) in self.objects if b == bucket and k.startswith(prefix))

    def current_version(self, bucket: str, key: str) -> str | bool | None:
        return None if (bucket, key) in self.objects else False
