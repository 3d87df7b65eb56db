"""The ports the pipeline talks through; adapters live beside them.

`ObjectStore` has a real adapter (`sinks.s3.S3ObjectStore`, boto3 against any
S3-compatible endpoint) and an in-memory one (`sinks.memory.MemoryObjectStore`)
for unit tests of the orchestration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from worker.model.artifact import Artifact
from worker.sinks.tags import Tag


@dataclass(frozen=True)
class ObjectHead:
    size: int
    etag: str | None
    version_id: str | None
    metadata: Mapping[str, str] = field(default_factory=dict)  # user metadata (x-amz-meta-*)


class ObjectStore(Protocol):
    def head(self, bucket: str, key: str, version_id: str | None) -> ObjectHead:
        """The object's current head; NotFound if it (or that version) is gone."""
        ...

    def read_artifacts(self, bucket: str, key: str, version_id: str | None) -> list[Artifact]:
        """Artifacts of the object; a saved_model.pb or variables.index brings its directory."""
        ...

    def get_tags(self, bucket: str, key: str, version_id: str | None) -> list[Tag]: ...

    def put_tags(self, bucket: str, key: str, version_id: str | None, tags: list[Tag]) -> None: ...

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        """A JSON document we stored, or None if there is none."""
        ...

    def put_json(self, bucket: str, key: str, body: bytes) -> None: ...

    def delete(self, bucket: str, key: str) -> None: ...


def etag_equal(a: str | None, b: str | None) -> bool:
    return (a or "").strip('"') == (b or "").strip('"')
