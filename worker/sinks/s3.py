"""The object store adapter: open model files as a Tree, write tags and reports.

Everything boto3 stays in `sinks.s3*`: the client and its errors (`s3_client`),
streamed reads (`s3_read`), and here the `ObjectStore` port. Which files make a
model is `worker.formats.layout`'s business, not the store's.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from worker.errors import NotFound, TfcompatError
from worker.formats.layout import model_folder, read_object
from worker.formats.read import read_tree
from worker.model.artifact import Artifact
from worker.settings import Settings
from worker.sinks.ports import ObjectHead, Pin
from worker.sinks.s3_client import (
    PRECONDITION_CODES,
    error_code,
    s3_client,
    s3_errors,
    shared_client,
    translate,
)
from worker.sinks.s3_read import S3Object, S3Tree
from worker.sinks.tags import Tag

__all__ = [
    "S3Object",
    "S3ObjectStore",
    "S3Tree",
    "parse_s3_url",
    "read_s3_artifacts",
    "s3_client",
    "shared_client",
    "translate",
]

REPORT_DIGEST = "tfcompat-sha256"  # user metadata of a report: the sha256 of its bytes
_CONFLICT_CODES = {"ConditionalRequestConflict", "409"}


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
) -> list[Artifact]:
    """Artifacts of an s3:// object or prefix (a key ending in '/'); a saved_model.pb
    brings its directory. `on_read` is told the size of every body read."""
    bucket, key = parse_s3_url(url)
    client = client or shared_client(settings)
    if not key or key.endswith("/"):
        return read_tree(S3Tree(client, bucket, key, on_read=on_read), url.rstrip("/"))
    folder = model_folder(key)
    name = key[len(folder) + 1 :] if folder else key
    pins = {name: Pin(version_id)} if version_id else None
    tree = S3Tree(client, bucket, folder, pins, on_read)
    return read_object(tree, name, f"s3://{bucket}/{folder}".rstrip("/"))


def model_tree(store: Any, bucket: str, key: str, version_id: str | None) -> tuple[Any, str]:
    """`store.tree` over the model an event names: a SavedModel's folder with the named
    saved_model.pb pinned, or the one object under its own folder."""
    from worker.formats.read import SAVED_MODEL_FILES

    base = posixpath.basename(key)
    root = posixpath.dirname(key)
    pins = {base: Pin(version_id)} if version_id else {}
    if base in SAVED_MODEL_FILES:
        return store.tree(bucket, root, pins), root
    return _OneObject(store.tree(bucket, root, pins), base), root


class _OneObject:
    """A tree that shows one name of another tree (a single-file model's folder)."""

    def __init__(self, tree: Any, name: str) -> None:
        self._tree, self._name = tree, name

    @property
    def name(self) -> str:
        return f"{self._tree.name}/{self._name}"

    def names(self) -> list[str]:
        return [self._name]

    def open(self, name: str) -> Any:
        return self._tree.open(name)


class S3ObjectStore:
    """The ObjectStore port over boto3 (any S3-compatible endpoint).

    `bytes_read` totals the object bytes this store has read since it was built
    (metadata calls and reports not counted); it only grows."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self._client = client
        self._settings = settings
        self.bytes_read = 0
        self._conditional_puts = True  # the endpoint honours If-None-Match on PUT

    def _call(self, what: str, method: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._client, method)(**kwargs)
        except s3_errors() as exc:
            raise translate(exc, what) from exc

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

    def tree(self, bucket: str, prefix: str, pins: Mapping[str, Pin] | None = None) -> S3Tree:
        return S3Tree(self._client, bucket, prefix, pins, self._count_read)

    def model_tree(self, bucket: str, key: str, version_id: str | None) -> tuple[Any, str]:
        """The model an event names, as a tree, and the tree's key prefix: a SavedModel's
        directory (the named version of saved_model.pb pinned), or the one object."""
        return model_tree(self, bucket, key, version_id)

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

    def put_report(self, bucket: str, key: str, body: bytes) -> bool:
        """One PUT that only creates (`If-None-Match: *`); when a report is there already,
        its recorded digest (HEAD) says whether ours differs and must replace it. A
        duplicate delivery thus writes nothing, and a versioned bucket gains no version.
        Endpoints that refuse conditional PUTs get HEAD, then PUT when different."""
        digest = hashlib.sha256(body).hexdigest()
        what = f"s3://{bucket}/{key}"
        put: dict[str, Any] = {
            "Bucket": bucket,
            "Key": key,
            "Body": body,
            "ContentType": "application/json",
            "Metadata": {REPORT_DIGEST: digest},
        }
        if self._conditional_puts:
            try:
                self._client.put_object(**put, IfNoneMatch="*")
                return True
            except s3_errors() as exc:
                code, status = error_code(exc)
                if code == "NotImplemented" or status == "501":
                    self._conditional_puts = False
                elif not (code in PRECONDITION_CODES | _CONFLICT_CODES or status in ("409", "412")):
                    raise translate(exc, what) from exc
        try:
            stored = self.head(bucket, key, None).metadata.get(REPORT_DIGEST)
        except NotFound:
            stored = None
        if stored == digest:
            return False
        self._call(what, "put_object", **put)
        return True

    def delete(self, bucket: str, key: str) -> None:
        self._call(f"s3://{bucket}/{key}", "delete_object", Bucket=bucket, Key=key)

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        keys: list[str] = []
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
                keys += [item["Key"] for item in page.get("Contents", [])]
        except s3_errors() as exc:
            raise translate(exc, f"s3://{bucket}/{prefix}") from exc
        return keys

    def versions(self, bucket: str, key: str, limit: int) -> list[tuple[str, bool, str]]:
        """The object's newest `limit` versions, newest first: (version id, is the
        current one, when written in ISO 8601); [] when the bucket is not versioned."""
        answer = self._call(
            f"s3://{bucket}/{key}",
            "list_object_versions",
            Bucket=bucket,
            Prefix=key,
            MaxKeys=max(limit * 2, 10),
        )
        found = [
            (str(v["VersionId"]), bool(v.get("IsLatest")), str(v["LastModified"].isoformat()))
            for v in answer.get("Versions", [])
            if v.get("Key") == key and v.get("VersionId") not in (None, "null")
        ]
        return found[:limit]

    def current_version(self, bucket: str, key: str) -> str | bool | None:
        try:
            head = self.head(bucket, key, None)
        except NotFound:
            return False
        return head.version_id if head.version_id not in (None, "null") else None
