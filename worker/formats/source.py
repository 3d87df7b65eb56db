"""Where a reader's bytes come from: positional reads over a sized source.

Readers ask for `read_at(offset, length)` and never for "the whole file", so
a 1.5 GB frozen graph, an archive member held in memory and an S3 object read
with ranged GETs look the same to them, and memory stays bounded by what a
reader chooses to keep.

A `Tree` is a set of named sources: a local directory, an archive's members, an
S3 prefix. Format detection works on trees.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from worker.errors import InvalidArtifact, NotFound

HASH_CHUNK = 1 << 20


class Source(Protocol):
    """A sized blob that can be read at any offset."""

    @property
    def name(self) -> str: ...

    @property
    def size(self) -> int: ...

    def read_at(self, offset: int, length: int) -> bytes:
        """Exactly `length` bytes at `offset`, or InvalidArtifact if the blob ends first."""
        ...


@runtime_checkable
class SelfHashing(Protocol):
    """A source that knows its own sha256 without being read again from the start: an
    object store that holds the checksum, or a stream that hashed its bytes in passing."""

    def sha256(self) -> str: ...


class Tree(Protocol):
    """Named sources under one root; names use '/' and are relative."""

    @property
    def name(self) -> str: ...

    def names(self) -> list[str]: ...

    def open(self, name: str) -> Source: ...


def truncated(source_name: str, offset: int, length: int, size: int) -> InvalidArtifact:
    return InvalidArtifact(
        f"{source_name}: truncated: wanted {length} bytes at offset {offset}, file has {size}"
    )


class BytesSource:
    """An in-memory blob (archive members, tests)."""

    def __init__(self, name: str, data: bytes) -> None:
        self._name = name
        self._data = data

    @property
    def name(self) -> str:
        return self._name

    @property
    def size(self) -> int:
        return len(self._data)

    def read_at(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > len(self._data):
            raise truncated(self._name, offset, length, len(self._data))
        return self._data[offset : offset + length]


class FileSource:
    """A local file read with pread; nothing is held between reads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        try:
            self._size = self._path.stat().st_size
        except FileNotFoundError as exc:
            raise NotFound(f"{self._path}: no such file") from exc
        self._fd: int | None = None

    @property
    def name(self) -> str:
        return str(self._path)

    @property
    def size(self) -> int:
        return self._size

    def read_at(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self._size:
            raise truncated(self.name, offset, length, self._size)
        if self._fd is None:
            self._fd = os.open(self._path, os.O_RDONLY)
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise truncated(self.name, offset, length, self._size)
        return data

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


class DirectoryTree:
    """A local directory; symlinks pointing outside it are not followed."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root)
        if not self._root.is_dir():
            raise NotFound(f"{self._root}: not a directory")

    @property
    def name(self) -> str:
        return str(self._root)

    def names(self) -> list[str]:
        found = []
        root = self._root.resolve()
        for dirpath, _dirs, files in os.walk(self._root):
            for file in files:
                full = Path(dirpath, file)
                if full.is_symlink() and not full.resolve().is_relative_to(root):
                    continue
                if full.is_file():
                    found.append(full.relative_to(self._root).as_posix())
        return sorted(found)

    def open(self, name: str) -> Source:
        return FileSource(self._root / name)


class MappingTree:
    """Sources held in a dict (an archive's members)."""

    def __init__(self, name: str, sources: dict[str, Source]) -> None:
        self._name = name
        self._sources = sources

    @property
    def name(self) -> str:
        return self._name

    def names(self) -> list[str]:
        return sorted(self._sources)

    def open(self, name: str) -> Source:
        try:
            return self._sources[name]
        except KeyError as exc:
            raise NotFound(f"{self._name}: no member {name}") from exc


def sha256_of(source: Source) -> str:
    if isinstance(source, SelfHashing):
        return source.sha256()
    digest = hashlib.sha256()
    for offset, length in chunks(source.size, HASH_CHUNK):
        digest.update(source.read_at(offset, length))
    return digest.hexdigest()


def chunks(size: int, chunk: int) -> Iterator[tuple[int, int]]:
    offset = 0
    while offset < size:
        length = min(chunk, size - offset)
        yield offset, length
        offset += length
