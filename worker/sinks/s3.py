"""The object store adapter: read model objects, write tags and reports.

Everything boto3 stays here. botocore errors come out as our own: a missing
key or version as `NotFound`, throttling, 5xx and connection trouble as
`TransientError`, anything else as `TfcompatError` with the S3 error code.
"""

from __future__ import annotations

import json
import posixpath
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from worker.errors import ConfigError, NotFound, TfcompatError, TransientError
from worker.formats.source import Source
from worker.model.artifact import Artifact
from worker.settings import Settings
from worker.sinks.ports import ObjectHead
from worker.sinks.tags import Tag

BLOCK = 8 << 20
CACHED_BLOCKS = 4
_TRANSIENT_CODES = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "InternalError",
    "ServiceUnavailable",
    "503",
    "500",
    "502",
    "504",
}
_NOT_FOUND_CODES = {"NoSuchKey", "NoSuchVersion", "404", "NotFound", "NoSuchBucket"}


def s3_client(settings: Settings) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=settings.s3_endpoint_url,
        region_name=settings.aws_region,
        config=Config(
            retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5, read_timeout=30
        ),
    )


def translate(exc: Exception, what: str) -> TfcompatError:
    """A botocore exception as one of our errors."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        if code in _NOT_FOUND_CODES or status == "404":
            return NotFound(f"{what}: not found ({code or status})")
        if code in _TRANSIENT_CODES or status.startswith("5") or status == "429":
            return TransientError(f"{what}: S3 says {code or status}, try again")
        return TfcompatError(f"{what}: S3 error {code or status}")
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return ConfigError(f"{what}: no AWS credentials configured ({exc})")
    if isinstance(exc, BotoCoreError):
        return TransientError(f"{what}: {type(exc).__name__}: {exc}")
    return TransientError(f"{what}: {type(exc).__name__}: {exc}")


class S3Source:
    """One object version read with ranged GETs through a small block cache.

    Memory is bounded by CACHED_BLOCKS x BLOCK whatever the object's size. Every block
    fetched is counted in `bytes_read` and passed to `on_read` (the store's total)."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        key: str,
        version_id: str | None = None,
        size: int | None = None,
        on_read: Callable[[int], None] | None = None,
    ) -> None:
        self._client, self.bucket, self.key, self.version_id = client, bucket, key, version_id
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self.bytes_read = 0
        self._on_read = on_read
        if size is None:
            head = self._call("head_object", Bucket=bucket, Key=key, **self._version())
            size = int(head["ContentLength"])
            self.version_id = version_id or head.get("VersionId")
        self._size = size

    def _version(self) -> dict[str, str]:
        return {"VersionId": self.version_id} if self.version_id else {}

    def _call(self, method: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._client, method)(**kwargs)
        except Exception as exc:
            raise translate(exc, f"s3://{self.bucket}/{self.key}") from None

    @property
    def name(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    @property
    def size(self) -> int:
        return self._size

    def _block(self, index: int) -> bytes:
        if index in self._blocks:
            self._blocks.move_to_end(index)
            return self._blocks[index]
        start = index * BLOCK
        end = min(start + BLOCK, self._size) - 1
        response = self._call(
            "get_object",
            Bucket=self.bucket,
            Key=self.key,
            Range=f"bytes={start}-{end}",
            **self._version(),
        )
        try:
            data: bytes = response["Body"].read()
        except Exception as exc:
            raise translate(exc, self.name) from None
        self.bytes_read += len(data)
        if self._on_read is not None:
            self._on_read(len(data))
        self._blocks[index] = data
        while len(self._blocks) > CACHED_BLOCKS:
            self._blocks.popitem(last=False)
        return data

    def read_at(self, offset: int, length: int) -> bytes:
        from worker.formats.source import truncated

        if offset < 0 or length < 0 or offset + length > self._size:
            raise truncated(self.name, offset, length, self._size)
        parts = []
        position = offset
        while position < offset + length:
            index = position // BLOCK
            block = self._block(index)
            start = position - index * BLOCK
            take = min(len(block) - start, offset + length - position)
            if take <= 0:
                raise truncated(self.name, offset, length, self._size)
            parts.append(block[start : start + take])
            position += take
        return b"".join(parts)


class S3PrefixTree:
    """The objects under a prefix (a SavedModel directory): their current versions,
    except those `pinned` to a version (the object an event named)."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        prefix: str,
        on_read: Callable[[int], None] | None = None,
        pinned: dict[str, str] | None = None,
    ) -> None:
        self._client, self.bucket = client, bucket
        self._on_read = on_read
        self._pinned = pinned or {}
        self.prefix = prefix.rstrip("/") + "/" if prefix else ""
        self._sizes: dict[str, int] = {}
        paginator = client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=bucket, Prefix=self.prefix):
                for item in page.get("Contents", []):
                    self._sizes[item["Key"][len(self.prefix) :]] = int(item["Size"])
        except Exception as exc:
            raise translate(exc, f"s3://{bucket}/{self.prefix}") from None

    @property
    def name(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def names(self) -> list[str]:
        return sorted(self._sizes)

    def open(self, name: str) -> Source:
        if name not in self._sizes:
            raise NotFound(f"{self.name}/{name}: not found")
        version = self._pinned.get(name)
        return S3Source(
            self._client,
            self.bucket,
            self.prefix + name,
            version,
            # a pinned version's size may differ from the current one's: asked anew
            size=None if version else self._sizes[name],
            on_read=self._on_read,
        )


def parse_s3_url(url: str) -> tuple[str, str]:
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise TfcompatError(f"{url}: expected s3://bucket/key")
    return parsed.netloc, parsed.path.lstrip("/")


def read_s3_artifacts(
    url: str,
    settings: Settings,
    client: Any = None,
    version_id: str | None = None,
    on_read: Callable[[int], None] | None = None,
) -> list[Any]:
    """Artifacts of an s3:// object or prefix; a saved_model.pb brings its directory.
    `on_read` is told the size of every block read."""
    from worker.formats.read import SAVED_MODEL_FILES, read_saved_model_dir, read_source, read_tree

    bucket, key = parse_s3_url(url)
    client = client or s3_client(settings)
    if not key or key.endswith("/"):
        return read_tree(S3PrefixTree(client, bucket, key, on_read), url.rstrip("/"))
    base = posixpath.basename(key)
    if base in SAVED_MODEL_FILES or key.endswith("variables/variables.index"):
        root = posixpath.dirname(key)
        if base not in SAVED_MODEL_FILES:
            root = posixpath.dirname(root)
        pinned = {key[len(root) + 1 :]: version_id} if version_id else {}
        tree = S3PrefixTree(client, bucket, root, on_read, pinned)
        return [read_saved_model_dir(tree, "", f"s3://{bucket}/{root}")]
    return read_source(S3Source(client, bucket, key, version_id, on_read=on_read), url)


class S3ObjectStore:
    """The ObjectStore port over boto3 (any S3-compatible endpoint).

    `bytes_read` totals the object bytes this store has read since it was built
    (metadata calls and reports not counted); it only grows."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._settings = settings
        self.bytes_read = 0

    def _call(self, what: str, method: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._client, method)(**kwargs)
        except Exception as exc:
            raise translate(exc, what) from None

    @staticmethod
    def _version(version_id: str | None) -> dict[str, str]:
        return {"VersionId": version_id} if version_id else {}

    def head(self, bucket: str, key: str, version_id: str | None) -> ObjectHead:
        head = self._call(
            f"s3://{bucket}/{key}",
            "head_object",
            Bucket=bucket,
            Key=key,
            **self._version(version_id),
        )
        return ObjectHead(
            int(head["ContentLength"]),
            head.get("ETag"),
            head.get("VersionId"),
            head.get("Metadata") or {},
        )

    def read_artifacts(self, bucket: str, key: str, version_id: str | None) -> list[Artifact]:
        return read_s3_artifacts(
            f"s3://{bucket}/{key}", self._settings, self._client, version_id, self._count_read
        )

    def model_tree(self, bucket: str, key: str, version_id: str | None) -> tuple[Any, str]:
        """The model an event names, as a tree, and the tree's key prefix: a SavedModel's
        directory (the named version of saved_model.pb pinned), or the one object."""
        from worker.formats.read import SAVED_MODEL_FILES
        from worker.formats.source import MappingTree

        base = posixpath.basename(key)
        if base in SAVED_MODEL_FILES:
            root = posixpath.dirname(key)
            pinned = {base: version_id} if version_id else {}
            return S3PrefixTree(self._client, bucket, root, self._count_read, pinned), root
        source = S3Source(self._client, bucket, key, version_id, on_read=self._count_read)
        return MappingTree(f"s3://{bucket}/{key}", {base: source}), posixpath.dirname(key)

    def put_bytes(self, bucket: str, key: str, body: bytes) -> None:
        self._call(f"s3://{bucket}/{key}", "put_object", Bucket=bucket, Key=key, Body=body)

    def copy_object(self, bucket: str, source_key: str, key: str) -> None:
        """A server-side copy (variables and assets of a fixed copy never pass through us)."""
        self._call(
            f"s3://{bucket}/{key}",
            "copy_object",
            Bucket=bucket,
            Key=key,
            CopySource={"Bucket": bucket, "Key": source_key},
        )

    def _count_read(self, size: int) -> None:
        self.bytes_read += size

    def get_tags(self, bucket: str, key: str, version_id: str | None) -> list[Tag]:
        response = self._call(
            f"s3://{bucket}/{key}",
            "get_object_tagging",
            Bucket=bucket,
            Key=key,
            **self._version(version_id),
        )
        return [{"Key": t["Key"], "Value": t["Value"]} for t in response.get("TagSet", [])]

    def put_tags(self, bucket: str, key: str, version_id: str | None, tags: list[Tag]) -> None:
        self._call(
            f"s3://{bucket}/{key}",
            "put_object_tagging",
            Bucket=bucket,
            Key=key,
            Tagging={"TagSet": tags},
            **self._version(version_id),
        )

    def get_json(self, bucket: str, key: str) -> dict[str, Any] | None:
        try:
            response = self._call(f"s3://{bucket}/{key}", "get_object", Bucket=bucket, Key=key)
        except NotFound:
            return None
        try:
            document = json.loads(response["Body"].read())
        except ValueError:
            return None
        return document if isinstance(document, dict) else None

    def put_json(self, bucket: str, key: str, body: bytes) -> None:
        self._call(
            f"s3://{bucket}/{key}",
            "put_object",
            Bucket=bucket,
            Key=key,
            Body=body,
            ContentType="application/json",
        )

    def delete(self, bucket: str, key: str) -> None:
        self._call(f"s3://{bucket}/{key}", "delete_object", Bucket=bucket, Key=key)

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        keys: list[str] = []
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
                keys += [item["Key"] for item in page.get("Contents", [])]
        except Exception as exc:
            raise translate(exc, f"s3://{bucket}/{prefix}") from None
        return keys

    def current_version(self, bucket: str, key: str) -> str | bool | None:
        try:
            head = self.head(bucket, key, None)
        except NotFound:
            return False
        return head.version_id if head.version_id not in (None, "null") else None
