"""The sha256 of an artifact's bytes, computed beside the reader when it can be.

An artifact's digest covers every byte, tensor contents included, while the
readers skip those: on a large local file, hashing is most of the work. So
for a local file the hash runs in a thread (hashlib and pread release the
GIL) while the reader parses, and costs the wall time of whichever is
longer, not both. Other sources (S3 objects, archive members) are hashed in
the caller's thread: their reads share caches that are not thread-safe.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator

from worker.formats.source import FileSource, SelfHashing, Source, truncated

HASH_CHUNK = 1 << 20


def chunks(size: int, chunk: int) -> Iterator[tuple[int, int]]:
    offset = 0
    while offset < size:
        length = min(chunk, size - offset)
        yield offset, length
        offset += length


def sha256_of(source: Source) -> str:
    """Every byte's sha256; a `SelfHashing` source (an object store that holds the
    checksum, a stream that hashed what the reader passed over) answers itself."""
    if isinstance(source, SelfHashing):
        return source.sha256()
    digest = hashlib.sha256()
    for offset, length in chunks(source.size, HASH_CHUNK):
        digest.update(source.read_at(offset, length))
    return digest.hexdigest()


def _sha256_of_file(path: str, size: int, name: str, stop: threading.Event) -> str:
    """Hash through one reused buffer: memory stays at HASH_CHUNK whatever the size."""
    digest = hashlib.sha256()
    buffer = bytearray(HASH_CHUNK)
    view = memoryview(buffer)
    fd = os.open(path, os.O_RDONLY)
    try:
        for offset, length in chunks(size, HASH_CHUNK):
            if stop.is_set():
                return ""
            got = os.preadv(fd, [view[:length]], offset)
            if got != length:
                raise truncated(name, offset, length, size)
            digest.update(view[:length])
    finally:
        os.close(fd)
    return digest.hexdigest()


class Sha256:
    """A digest being computed; `result()` waits for it, `cancel()` abandons it."""

    def __init__(self, source: Source) -> None:
        self._value: str | None = None
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if isinstance(source, FileSource):
            self._thread = threading.Thread(
                target=self._run, args=(source,), name="sha256", daemon=True
            )
            self._thread.start()
        else:
            self._source: Source = source

    def _run(self, source: FileSource) -> None:
        try:
            self._value = _sha256_of_file(source.path, source.size, source.name, self._stop)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def result(self) -> str:
        if self._thread is None:
            return sha256_of(self._source)
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value

    def cancel(self) -> None:
        self._stop.set()
