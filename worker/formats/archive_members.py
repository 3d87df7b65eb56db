"""What every archive member passes, whatever the format: names, kinds and caps.

Tar and zip readers (`tar_archive`, `zip_archive`) hand each member here
before its bytes are read (`Members.admit`) and as they come out
(`Members.grow`, `Budget.spend`), so a cap is checked before the next chunk is
inflated and a hostile name is refused before anything is kept.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats.source import BytesSource, Source

GIB = 1 << 30
MIB = 1 << 20

SNIFF_BYTES = 262  # "ustar" ends at offset 262
READ_CHUNK = MIB
TAR_OVERHEAD_PER_MEMBER = 64 << 10  # headers, padding, long-name records


@dataclass(frozen=True)
class ArchiveLimits:
    """Safety caps for one archive; the defaults fit a large model held in memory."""

    max_members: int = 10_000  # entries of any kind, directories included
    max_member_bytes: int = 2 * GIB
    max_total_bytes: int = 4 * GIB  # all regular files, uncompressed
    max_ratio: float = 200.0  # uncompressed bytes per archive byte
    ratio_floor_bytes: int = MIB  # expansion below this is never refused


def archive_kind(head: bytes) -> str | None:
    """'gzip', 'zip' or 'tar' from the first SNIFF_BYTES bytes, else None."""
    # gzip: magic plus CM=8 (deflate, the only method RFC 1952 defines).
    if head.startswith(b"\x1f\x8b\x08"):
        return "gzip"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head[257:262] == b"ustar":
        return "tar"
    return None


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class Budget:
    """Bytes coming out of the archive stream, against the ratio and stream caps.

    `reading` names the member being read, so a cap crossed says where.
    """

    def __init__(self, name: str, archive_bytes: int, limits: ArchiveLimits) -> None:
        self._name = name
        self._limits = limits
        self._archive_bytes = archive_bytes
        self._ratio_ceiling = max(limits.ratio_floor_bytes, int(limits.max_ratio * archive_bytes))
        self._stream_ceiling = limits.max_total_bytes + limits.max_members * TAR_OVERHEAD_PER_MEMBER
        self.total = 0
        self.reading = "the archive headers"

    def spend(self, length: int) -> None:
        self.total += length
        if self.total > self._ratio_ceiling:
            raise LimitExceeded(
                f"{self._name}: expands more than {self._limits.max_ratio:g}:1 "
                f"({self.total} bytes from {self._archive_bytes}, at {self.reading}); "
                "refusing a likely decompression bomb"
            )
        if self.total > self._stream_ceiling:
            raise LimitExceeded(
                f"{self._name}: archive stream exceeds {self._stream_ceiling} bytes "
                f"(at {self.reading})"
            )


class Members:
    """The kept members and the rules every member passes, whatever the format."""

    def __init__(
        self, name: str, limits: ArchiveLimits, wanted: Callable[[str], bool] | None = None
    ) -> None:
        self._name = name
        self.limits = limits
        self.wanted = wanted or (lambda _name: True)
        self.sources: dict[str, Source] = {}
        self.notes: list[str] = []
        self._files: set[str] = set()
        self._dirs: set[str] = set()
        self._seen = 0
        self._total = 0

    def count(self, raw: str) -> None:
        self._seen += 1
        if self._seen > self.limits.max_members:
            raise LimitExceeded(
                f"{self._name}: more than {self.limits.max_members} members (at {raw!r})"
            )

    def path(self, raw: str) -> str:
        """The member's normalised relative path; refuses escapes and odd names."""
        if "\x00" in raw:
            raise InvalidArtifact(f"{self._name}: member {raw!r} has a NUL byte in its name")
        text = raw.replace("\\", "/")
        if text.startswith("/") or re.match(r"[A-Za-z]:", text):
            raise InvalidArtifact(f"{self._name}: member {raw!r} has an absolute path")
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise InvalidArtifact(f"{self._name}: member {raw!r} climbs out of the archive (..)")
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArtifact(
                f"{self._name}: member {raw!r} has a name that is not UTF-8"
            ) from None
        return "/".join(parts)

    def admit(self, raw: str, declared: int) -> str:
        """Reserve a regular file's name and declared size before its bytes are read."""
        name = self.path(raw)
        if not name:
            raise InvalidArtifact(f"{self._name}: member {raw!r} has an empty name")
        if name in self._files:
            raise InvalidArtifact(f"{self._name}: member {name!r} appears twice")
        parents = ["/".join(name.split("/")[:i]) for i in range(1, name.count("/") + 1)]
        if name in self._dirs or any(parent in self._files for parent in parents):
            raise InvalidArtifact(
                f"{self._name}: member {name!r} is used both as a file and as a directory"
            )
        self._files.add(name)
        self._dirs.update(parents)
        self._check_size(name, declared)
        return name

    def skip(self, name: str, size: int) -> None:
        self.sources[name] = Placeholder(f"{self._name}/{name}", size)

    def keep(self, name: str, data: bytes) -> None:
        if archive_kind(data[:SNIFF_BYTES]) is not None:
            self.notes.append(f"skipped {name}: an archive inside the archive is not opened")
            return
        self.sources[name] = BytesSource(f"{self._name}/{name}", data)

    def grow(self, name: str, length: int) -> None:
        """Count bytes of a member as they come out (declared sizes may lie)."""
        self._total += length
        limits = self.limits
        if self._total > limits.max_total_bytes:
            raise LimitExceeded(
                f"{self._name}: members exceed {limits.max_total_bytes} bytes in total "
                f"(at {name!r})"
            )

    def _check_size(self, name: str, declared: int) -> None:
        limits = self.limits
        if declared > limits.max_member_bytes:
            raise LimitExceeded(
                f"{self._name}: member {name!r} is {declared} bytes, "
                f"more than the {limits.max_member_bytes} allowed"
            )
        if self._total + declared > limits.max_total_bytes:
            raise LimitExceeded(
                f"{self._name}: members exceed {limits.max_total_bytes} bytes in total "
                f"(at {name!r})"
            )


class Placeholder:
    """A member that was read and counted but not kept: its size, no bytes."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size

    def read_at(self, offset: int, length: int) -> bytes:
        raise UnsupportedArtifact(f"{self.name}: member content is not kept (not a model file)")


class SourceFile:
    """A read-only, seekable file over a Source, as tarfile and zipfile want one.

    Reads past the end return what is there, like a file, instead of raising.
    """

    def __init__(self, source: Source) -> None:
        self._source = source
        self._pos = 0

    def read(self, size: int = -1, /) -> bytes:
        end = self._source.size if size < 0 else min(self._source.size, self._pos + size)
        if end <= self._pos:
            return b""
        data = self._source.read_at(self._pos, end - self._pos)
        self._pos = end
        return data

    def seek(self, offset: int, whence: int = io.SEEK_SET, /) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._source.size}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")  # as a real file does; zipfile expects it
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return True

    def write(self, data: bytes, /) -> int:
        raise io.UnsupportedOperation("read-only")

    def close(self) -> None:
        pass
