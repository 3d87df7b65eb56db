"""Model objects read from S3 in one pass: a `Source` over a streamed GET, and a `Tree`.

Readers ask for byte ranges, mostly moving forward, and skip tensor contents.
`S3Object` serves them from one GET streamed from the start: what a reader
skips is read past (and hashed) rather than fetched again, so a whole object
costs its own bytes once and the sha256 comes out of the same pass. When the
store holds the SHA-256 of the object version (uploaded with
`--checksum-algorithm SHA256`), no byte is needed for the hash and a gap of
`SKIP` bytes or more (a large tensor) is skipped with a new ranged GET instead.
A read behind what is kept is a small ranged GET of its own, and so is a look
at the last `TAIL` bytes (where an archive's directory or a table's footer is)
before the stream gets there: one GET of the tail, kept.

Memory stays bounded whatever the object's size: `KEEP` bytes behind the
stream's position, `SIDE_CACHED` side reads, and the range being returned.
Objects up to `WHOLE` bytes are read whole in their first GET.

Every read of an unversioned object carries `If-Match` with the ETag of the
first response (or the event's): bytes never mix two writes, and content
overwritten since the event raises `Superseded`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import Any

from worker.errors import NotFound, Superseded, TransientError
from worker.formats.source import Source, truncated
from worker.sinks.ports import Pin, Seen
from worker.sinks.s3_client import PRECONDITION_CODES, error_code, s3_errors, translate

WHOLE = 8 << 20
KEEP = 8 << 20
SKIP = 4 << 20
STEP = 64 << 10
CHUNK = 1 << 20
SIDE = 1 << 20
SIDE_CACHED = 4
TAIL = 128 << 10
MAX_RESUMES = 3


def checksum_sha256(response: Mapping[str, Any]) -> str | None:
    """The hex SHA-256 of the whole object, when S3 returned one (not a composite of parts)."""
    value = response.get("ChecksumSHA256")
    if not isinstance(value, str) or "-" in value or response.get("ChecksumType") == "COMPOSITE":
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == 32 else None


class S3Object:
    """One object version as a `Source` (and `SelfHashing`: `sha256()` costs no re-read).

    `bytes_read` counts every body byte received; `on_read` is told each amount."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        key: str,
        pin: Pin | None = None,
        on_read: Callable[[int], None] | None = None,
    ) -> None:
        self._client, self.bucket, self.key = client, bucket, key
        self._on_read = on_read
        self.bytes_read = 0
        self.requests = 0
        self.version_id = pin.version_id if pin else None
        self._if_match = None if self.version_id else (pin.etag if pin else None)
        self.current: bool | None = None
        response = self._first_response()
        self._size = int(response["ContentLength"])
        self.etag: str | None = response.get("ETag")
        self.metadata: dict[str, str] = dict(response.get("Metadata") or {})  # x-amz-meta-*
        if self.version_id is None:
            self._if_match = self.etag or self._if_match  # later ranges: this very content
        self._known_sha256 = checksum_sha256(response)
        self._hasher = None if self._known_sha256 else hashlib.sha256()
        self._stream: Any = response["Body"]
        self._pos = 0  # the next byte the stream gives
        self._kept: deque[tuple[int, bytes]] = deque()  # chunks just behind _pos, in order
        self._side: OrderedDict[int, bytes] = OrderedDict()
        self._tail: bytes | None = None
        if self._size <= WHOLE:
            self._advance(self._size, keep_from=0)
            self._close()

    @property
    def name(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    @property
    def size(self) -> int:
        return self._size

    # --- requests -------------------------------------------------------------------------

    def _get(self, *, start: int | None = None, end: int | None = None, pinned: bool = True) -> Any:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self.key}
        if pinned and self.version_id:
            kwargs["VersionId"] = self.version_id
        if self._if_match:
            kwargs["IfMatch"] = self._if_match
        if start is None:
            kwargs["ChecksumMode"] = "ENABLED"
        else:
            kwargs["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        self.requests += 1
        try:
            return self._client.get_object(**kwargs)
        except s3_errors() as exc:
            code, status = error_code(exc)
            if code in PRECONDITION_CODES or status == "412":
                raise Superseded(f"{self.name}: written again since the event") from exc
            raise translate(exc, self.name) from exc

    def _first_response(self) -> Any:
        """The object's first GET. For a pinned version, the current object is asked
        first: when it is that version, we learn it is current at no extra request."""
        if not self.version_id:
            return self._get()
        try:
            response = self._get(pinned=False)
        except (NotFound, Superseded):
            response = None
        if response is not None and response.get("VersionId") == self.version_id:
            self.current = True
            return response
        if response is not None:
            response["Body"].close()
        self.current = False
        return self._get()

    def _count(self, size: int) -> None:
        self.bytes_read += size
        if self._on_read is not None:
            self._on_read(size)

    # --- the stream -----------------------------------------------------------------------

    def _close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _reopen(self, start: int) -> None:
        """Continue the stream at `start`: the same position after a broken connection,
        or further on, past a gap nobody needs (nothing is kept from before it)."""
        self._close()
        if start != self._pos:
            self._kept.clear()
            self._pos = start
        if start < self._size:
            self._stream = self._get(start=start)["Body"]

    def _read_stream(self, amount: int) -> bytes:
        for attempt in range(MAX_RESUMES + 1):
            try:
                if self._stream is None:
                    self._reopen(self._pos)
                data: bytes = self._stream.read(amount)
                if data:
                    return data
                error: Exception = TransientError(f"{self.name}: body ended at {self._pos}")
            except (Superseded, NotFound):
                raise
            except s3_errors() as exc:
                error = exc
            self._close()
            if attempt == MAX_RESUMES:
                raise translate(error, self.name) from error
        raise AssertionError("unreachable")

    def _advance(self, end: int, keep_from: int) -> None:
        """Read the stream up to `end`, hashing in passing; keep [keep_from, end) and at
        most KEEP bytes before it."""
        while self._pos < end:
            data = self._read_stream(min(max(end - self._pos, STEP), CHUNK, self._size - self._pos))
            if self._hasher is not None:
                self._hasher.update(data)
            self._count(len(data))
            self._kept.append((self._pos, data))
            self._pos += len(data)
            floor = min(keep_from, self._pos - KEEP)
            while self._kept and self._kept[0][0] + len(self._kept[0][1]) <= floor:
                self._kept.popleft()

    def _from_kept(self, offset: int, end: int) -> bytes:
        parts = []
        for start, data in self._kept:
            if start + len(data) <= offset or start >= end:
                continue
            parts.append(data[max(0, offset - start) : end - start])
        return b"".join(parts)

    def _kept_start(self) -> int:
        return self._kept[0][0] if self._kept else self._pos

    # --- Source ---------------------------------------------------------------------------

    def read_at(self, offset: int, length: int) -> bytes:
        end = offset + length
        if offset < 0 or length < 0 or end > self._size:
            raise truncated(self.name, offset, length, self._size)
        if length == 0:
            return b""
        if self._kept_start() <= offset and end <= self._pos:
            return self._from_kept(offset, end)
        if self._size > WHOLE and offset >= self._size - TAIL:
            return self._tail_read(offset, end)
        if offset >= self._kept_start():
            gap = offset - self._pos
            if gap >= SKIP and self._hasher is None:
                self._reopen(offset)
            self._advance(end, keep_from=offset)
            return self._from_kept(offset, end)
        return self._side_read(offset, end)

    def _tail_read(self, offset: int, end: int) -> bytes:
        """A range in the object's last TAIL bytes, fetched once, ahead of the stream."""
        start = self._size - TAIL
        if self._tail is None:
            self._tail = self._fetch(start, self._size)
        return self._tail[offset - start : end - start]

    def _fetch(self, start: int, stop: int) -> bytes:
        response = self._get(start=start, end=stop)
        try:
            data: bytes = response["Body"].read()
        except s3_errors() as exc:
            raise translate(exc, self.name) from exc
        self._count(len(data))
        if len(data) != stop - start:
            raise TransientError(f"{self.name}: short read at {start}")
        return data

    def _side_read(self, offset: int, end: int) -> bytes:
        """A range behind what the stream keeps, with a little of what follows it."""
        for start, cached in self._side.items():
            if start <= offset and end <= start + len(cached):
                self._side.move_to_end(start)
                return cached[offset - start : end - start]
        data = self._fetch(offset, min(self._size, max(end, offset + SIDE)))
        self._side[offset] = data
        while len(self._side) > SIDE_CACHED:
            self._side.popitem(last=False)
        return data[: end - offset]

    def sha256(self) -> str:
        """The object's SHA-256: the store's own, else the stream's, read to the end."""
        if self._known_sha256 is not None:
            return self._known_sha256
        assert self._hasher is not None
        self._advance(self._size, keep_from=self._size)
        self._close()
        return self._hasher.hexdigest()


class S3Tree:
    """The objects under a prefix, as a `Tree` (and `ObjectTree`): listed only when a
    reader asks for names; each opened object read with a streamed GET (`S3Object`),
    pinned ones at the version or content the event named."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        prefix: str,
        pins: Mapping[str, Pin] | None = None,
        on_read: Callable[[int], None] | None = None,
    ) -> None:
        self._client, self.bucket = client, bucket
        self.prefix = prefix.rstrip("/") + "/" if prefix else ""
        self._pins = dict(pins or {})
        self._on_read = on_read
        self._names: list[str] | None = None
        self._seen: dict[str, Seen] = {}

    @property
    def name(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}".rstrip("/")

    def names(self) -> list[str]:
        """Every object under the prefix (one LIST, kept); folder markers left out."""
        if self._names is None:
            found = []
            paginator = self._client.get_paginator("list_objects_v2")
            try:
                for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix):
                    found += [item["Key"][len(self.prefix) :] for item in page.get("Contents", [])]
            except s3_errors() as exc:
                raise translate(exc, self.name) from exc
            self._names = sorted(n for n in found if n and not n.endswith("/"))
        return list(self._names)

    def open(self, name: str) -> Source:
        pin = self._pins.get(name)
        source = S3Object(self._client, self.bucket, self.prefix + name, pin, self._on_read)
        if pin is not None:
            self._seen[name] = Seen(source.etag, source.current, source.metadata)
        return source

    def seen(self, name: str) -> Seen | None:
        return self._seen.get(name)
