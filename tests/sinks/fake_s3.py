"""An in-memory stand-in for the boto3 S3 client's `get_object`, for unit tests of the
streamed reader: versions, ETags, `Range`, `If-Match`, stored SHA-256 checksums,
errors as botocore raises them, and bodies that can break mid-stream."""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError


def _error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject"
    )


class Body:
    """A response body; `breaks_after` bytes in, one read raises as a dropped connection."""

    def __init__(self, data: bytes, breaks_after: int | None = None) -> None:
        self._data = io.BytesIO(data)
        self._breaks_after = breaks_after
        self.closed = False

    def read(self, amount: int | None = None) -> bytes:
        breaks = self._breaks_after
        if breaks is not None and self._data.tell() + (amount or 0) > breaks:
            self._breaks_after = None
            raise ConnectionResetError("connection reset by peer")
        return self._data.read() if amount is None else self._data.read(amount)

    def close(self) -> None:
        self.closed = True


@dataclass
class Version:
    version_id: str
    data: bytes
    sha256: bool  # uploaded with ChecksumAlgorithm=SHA256

    @property
    def etag(self) -> str:
        return '"' + hashlib.md5(self.data).hexdigest() + '"'


@dataclass
class FakeS3:
    versions: dict[tuple[str, str], list[Version]] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    break_next_body_after: int | None = None

    def put(self, bucket: str, key: str, data: bytes, *, sha256: bool = False) -> Version:
        existing = self.versions.setdefault((bucket, key), [])
        version = Version(f"v{len(existing) + 1}", data, sha256)
        existing.append(version)
        return version

    def get_object(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        versions = self.versions.get((kwargs["Bucket"], kwargs["Key"]))
        if not versions:
            raise _error("NoSuchKey", 404)
        if "VersionId" in kwargs:
            matching = [v for v in versions if v.version_id == kwargs["VersionId"]]
            if not matching:
                raise _error("NoSuchVersion", 404)
            version = matching[0]
        else:
            version = versions[-1]
        if "IfMatch" in kwargs and kwargs["IfMatch"].strip('"') != version.etag.strip('"'):
            raise _error("PreconditionFailed", 412)
        data = version.data
        response: dict[str, Any] = {"ETag": version.etag, "VersionId": version.version_id}
        if "Range" in kwargs:
            first, _, last = kwargs["Range"].removeprefix("bytes=").partition("-")
            start, stop = int(first), (int(last) + 1 if last else len(data))
            data = data[start:stop]
        elif version.sha256 and kwargs.get("ChecksumMode") == "ENABLED":
            response["ChecksumSHA256"] = base64.b64encode(hashlib.sha256(data).digest()).decode()
            response["ChecksumType"] = "FULL_OBJECT"
        response["ContentLength"] = len(data)
        response["Body"] = Body(data, self.break_next_body_after)
        self.break_next_body_after = None
        return response

    def get_paginator(self, name: str) -> Any:
        assert name == "list_objects_v2"
        fake = self

        class Paginator:
            def paginate(self, Bucket: str, Prefix: str) -> list[dict[str, Any]]:
                fake.calls.append({"List": Prefix})
                keys = sorted(k for (b, k) in fake.versions if b == Bucket and k.startswith(Prefix))
                return [{"Contents": [{"Key": k} for k in keys]}]

        return Paginator()
