"""Where a reader's bytes come from: positional reads over a sized source.

Readers ask for `read_at(offset, length)` and never for "the whole file", so
a 1.5 GB frozen graph, an archive member held in memory and an S3 object read
with ranged GETs look the same to them, and memory stays bounded by what a
reader chooses to keep.

A `Tree` is a set of named sources: a local directory, an archive's members, an
S3 prefix. Format detection works on trees.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from worker.errors import DeadlineExceeded, InvalidArtifact, NotFound

FILE_NAMES = frozenset({"saved_model.pb", "saved_model.pbtxt", "variables.index"})
"""Names a model reader opens as files; a directory so named is refused."""


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
    def path(self) -> str:
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
    """A local directory that never reads outside itself.

    A symlink inside it is followed only when it resolves to a file inside
    the directory; one that dangles, loops or leads outside is refused (it
    would make the model read something the upload does not hold), as is a
    directory where the model needs a file (`saved_model.pb/`,
    `variables.index/`). Symlinked directories are not descended into.
    """

    # names() lists every file under the root: a SavedModel whose assets/ is empty or
    # absent here ships no asset (a lone saved_model.pb of an object store does not say)
    complete_listing = True

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root)
        if not self._root.is_dir():
            raise NotFound(f"{self._root}: not a directory")
        self._real_root = os.path.realpath(self._root)

    @property
    def name(self) -> str:
        return str(self._root)

    def _inside(self, path: Path) -> str:
        """The real path of `path`, refused unless it is an existing file inside the root."""
        real = os.path.realpath(path)
        shown = path.relative_to(self._root).as_posix()
        if os.path.commonpath([real, self._real_root]) != self._real_root:
            raise InvalidArtifact(f"{self._root}: {shown} points outside the model directory")
        if not os.path.exists(real):
            raise InvalidArtifact(f"{self._root}: {shown} is a dangling or looping symlink")
        return real

    def names(self) -> list[str]:
        found = []
        for dirpath, dirs, files in os.walk(self._root):
            for entry in dirs:
                full = Path(dirpath, entry)
                if full.is_symlink():
                    self._inside(full)
                elif entry in FILE_NAMES:
                    shown = full.relative_to(self._root).as_posix()
                    raise InvalidArtifact(f"{self._root}: {shown} is a directory, not a file")
            for file in files:
                full = Path(dirpath, file)
                if full.is_symlink():
                    self._inside(full)
                if full.is_file():
                    found.append(full.relative_to(self._root).as_posix())
        return sorted(found)

    def open(self, name: str) -> Source:
        path = self._root / name
        self._inside(path)
        return FileSource(path)


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


class DeadlineTree:
    """Another tree, read only until a deadline (`TFCOMPAT_CHECK_DEADLINE`): past it,
    listing, opening or reading raises `DeadlineExceeded`, so a slow or dripping server
    cannot hold a check for longer than its budget (each request keeps its own
    timeout; this bounds their sum)."""

    def __init__(
        self, tree: Tree, seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._tree, self._clock = tree, clock
        self._seconds = seconds
        self._until = clock() + seconds

    @property
    def name(self) -> str:
        return self._tree.name

    def check(self) -> None:
        if self._clock() > self._until:
            raise DeadlineExceeded(
                f"{self._tree.name}: reading took longer than TFCOMPAT_CHECK_DEADLINE "
                f"({self._seconds:g} s)"
            )

    def names(self) -> list[str]:
        self.check()
        return self._tree.names()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tree, name)

    def open(self, name: str) -> Source:
        self.check()
        return DeadlineSource(self._tree.open(name), self)


class DeadlineSource:
    def __init__(self, source: Source, tree: DeadlineTree) -> None:
        self._source, self._tree = source, tree

    @property
    def name(self) -> str:
        return self._source.name

    @property
    def size(self) -> int:
        return self._source.size

    def read_at(self, offset: int, length: int) -> bytes:
        self._tree.check()
        return self._source.read_at(offset, length)

    def __getattr__(self, name: str) -> Any:
        # What else the source offers (`sha256`, `path`) stays visible to the readers.
        return getattr(self._source, name)
