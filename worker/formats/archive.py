"""Open a `.tar`, `.tar.gz`/`.tgz` or `.zip` upload as a tree of in-memory members.

Models arrive packed (SageMaker's `model.tar.gz`, a zipped TF Serving base
path), and an archive is hostile until proven otherwise: path traversal,
links, decompression bombs, millions of members. So nothing is ever written
to disk, the kind is decided by magic bytes rather than by name, and every cap
in `ArchiveLimits` is checked as bytes come out, before the next chunk is
inflated, so a bomb stops after at most one chunk past its cap.

What the returned tree holds, and what a hostile archive gets instead:

- regular files only, keyed by their normalised relative path (`./a//b` is
  `a/b`; backslashes count as separators); directories are skipped;
- symlinks, hard links, devices, FIFOs and unknown member types are rejected
  with `InvalidArtifact`: a model needs none, and dropping one silently would
  make the model look incomplete for a reason nobody could see;
- absolute paths, drive letters and `..` components are rejected, as are two
  members with the same normalised name and a name used both as a file and as
  a directory;
- a member that is itself an archive is skipped, not opened, and the skip is
  listed in `ArchiveTree.notes`: SavedModel assets may legitimately be
  archives, and nesting would multiply every cap;
- caps (`LimitExceeded`): member count, bytes per member, bytes in total, and
  the expansion ratio of the whole archive (for a tar.gz, of the gzip stream,
  tar headers included).
"""

from __future__ import annotations

import io
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats.source import BytesSource, MappingTree, Source

GIB = 1 << 30
MIB = 1 << 20

SNIFF_BYTES = 262  # "ustar" ends at offset 262
READ_CHUNK = MIB
TAR_OVERHEAD_PER_MEMBER = 64 << 10  # headers, padding, long-name records
ZIP_DIRECTORY_BYTES_PER_MEMBER = 4096
ZIP_END_BYTES = 22
ZIP64_END_BYTES = 56
ZIP64_LOCATOR_BYTES = 20
ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})


@dataclass(frozen=True)
class ArchiveLimits:
    """Safety caps for one archive; the defaults fit a large model held in memory."""

    max_members: int = 10_000  # entries of any kind, directories included
    max_member_bytes: int = 2 * GIB
    max_total_bytes: int = 4 * GIB  # all regular files, uncompressed
    max_ratio: float = 200.0  # uncompressed bytes per archive byte
    ratio_floor_bytes: int = MIB  # expansion below this is never refused


class ArchiveTree(MappingTree):
    """An archive's regular files, plus notes on members deliberately skipped."""

    def __init__(self, name: str, sources: dict[str, Source], notes: tuple[str, ...]) -> None:
        super().__init__(name, sources)
        self.notes = notes


def is_archive(source: Source) -> bool:
    """True when the first bytes say gzip, zip or tar (whatever the name says)."""
    head = source.read_at(0, min(source.size, SNIFF_BYTES))
    return _archive_kind(head) is not None


def open_archive(
    source: Source,
    *,
    limits: ArchiveLimits = ArchiveLimits(),
    wanted: Callable[[str], bool] | None = None,
) -> ArchiveTree:
    """The archive's regular files, read into memory within `limits`.

    With `wanted`, only members it accepts are kept; the others are still read
    (and counted against the caps) but discarded, and appear as placeholders
    whose bytes cannot be read: a SavedModel's multi-gigabyte `.data` shards
    never sit in memory when only its `.index` is read.

    Raises UnsupportedArtifact when the bytes are no archive we read,
    LimitExceeded when a cap is crossed and InvalidArtifact for anything else
    wrong, each naming the member involved.
    """
    head = source.read_at(0, min(source.size, SNIFF_BYTES))
    kind = _archive_kind(head)
    members = _Members(source.name, limits, wanted)
    budget = _Budget(source.name, source.size, limits)
    if kind == "zip":
        _read_zip(source, members, budget)
    elif kind == "gzip":
        stream = _TarStream(source, budget, gzip=True)
        _read_tar(source, stream, members, budget)
        stream.finish()
    elif kind == "tar":
        end = _read_tar(source, _TarStream(source, budget, gzip=False), members, budget)
        _check_tar_end(source, end)
    else:
        raise UnsupportedArtifact(f"{source.name}: not a tar, tar.gz or zip archive")
    return ArchiveTree(source.name, members.sources, tuple(members.notes))


def _archive_kind(head: bytes) -> str | None:
    # gzip: magic plus CM=8 (deflate, the only method RFC 1952 defines).
    if head.startswith(b"\x1f\x8b\x08"):
        return "gzip"
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head[257:262] == b"ustar":
        return "tar"
    return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# --- Members and caps --------------------------------------------------------


class _Budget:
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


class _Members:
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
        self.sources[name] = _Placeholder(f"{self._name}/{name}", size)

    def keep(self, name: str, data: bytes) -> None:
        if _archive_kind(data[:SNIFF_BYTES]) is not None:
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


class _Placeholder:
    """A member that was read and counted but not kept: its size, no bytes."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = size

    def read_at(self, offset: int, length: int) -> bytes:
        raise UnsupportedArtifact(f"{self.name}: member content is not kept (not a model file)")


# --- File-like views -----------------------------------------------------------


class _SourceFile:
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


class _TarStream:
    """The bytes tarfile reads: the source itself, or the source inflated from
    gzip, at most a chunk per read; every byte handed out is spent against the
    budget. Only the first gzip member is read, as tarfile itself does.
    """

    def __init__(self, source: Source, budget: _Budget, *, gzip: bool) -> None:
        self._raw = _SourceFile(source)
        self._name = source.name
        self._budget = budget
        self._inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS) if gzip else None

    def read(self, size: int = -1, /) -> bytes:
        want = READ_CHUNK if size < 0 else min(size, READ_CHUNK)
        inflater = self._inflater
        data = self._raw.read(want) if inflater is None else self._inflate(inflater, want)
        self._budget.spend(len(data))
        return data

    def finish(self) -> None:
        """Inflate what tar did not need, so truncation and a bad gzip CRC are caught."""
        while self._inflater is not None and not self._inflater.eof:
            self.read(READ_CHUNK)

    def _inflate(self, inflater: zlib._Decompress, want: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < want and not inflater.eof:
            data = inflater.unconsumed_tail or self._raw.read(64 << 10)
            try:
                out = inflater.decompress(data, want - got)
            except zlib.error as exc:
                raise InvalidArtifact(f"{self._name}: corrupt gzip stream: {exc}") from None
            if not data and not out:
                raise InvalidArtifact(f"{self._name}: truncated gzip stream")
            parts.append(out)
            got += len(out)
        return b"".join(parts)

    # The rest of tarfile's file protocol: a stream neither writes nor seeks.
    def write(self, data: bytes, /) -> int:
        raise io.UnsupportedOperation("read-only")

    def tell(self) -> int:
        raise io.UnsupportedOperation("stream")

    def seek(self, offset: int, /) -> int:
        raise io.UnsupportedOperation("stream")

    def close(self) -> None:
        pass


# --- tar -------------------------------------------------------------------------


def _read_tar(source: Source, stream: _TarStream, members: _Members, budget: _Budget) -> int:
    """Walk the tar stream once, front to back (tarfile's streaming mode).

    Returns the stream offset where tarfile saw the end of the archive.
    """
    name = source.name
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for info in tar:
                members.count(info.name)
                if info.isdir():
                    members.path(info.name)
                    continue
                if not info.isreg():
                    raise InvalidArtifact(
                        f"{name}: member {info.name!r} is a {_tar_kind(info)}; "
                        "archives may hold only regular files and directories"
                    )
                path = members.admit(info.name, info.size)
                budget.reading = f"member {path!r}"
                member = tar.extractfile(info)
                if not members.wanted(path):
                    seen = 0
                    while member is not None and (chunk := member.read(READ_CHUNK)):
                        seen += len(chunk)
                        members.grow(path, len(chunk))
                    if seen != info.size:
                        raise InvalidArtifact(f"{name}: member {path!r} is truncated")
                    members.skip(path, seen)
                    budget.reading = f"the headers after {path!r}"
                    continue
                data = member.read(info.size) if member is not None else b""
                if len(data) != info.size:
                    raise InvalidArtifact(f"{name}: member {path!r} is truncated")
                members.grow(path, len(data))
                members.keep(path, data)
                budget.reading = f"the headers after {path!r}"
            end = tar.offset
    except (tarfile.TarError, EOFError, OSError, ValueError, zlib.error) as exc:
        raise InvalidArtifact(f"{name}: not a readable tar archive: {_one_line(exc)}") from None
    return end


def _check_tar_end(source: Source, end: int) -> None:
    # tarfile ends quietly at the first unreadable header, so a tar cut at a
    # member boundary would pass for a shorter archive; a real one ends with
    # zero blocks.
    block = source.read_at(end, min(512, max(0, source.size - end)))
    if len(block) < 512 or block.count(0) != 512:
        raise InvalidArtifact(
            f"{source.name}: tar archive is truncated or corrupt at offset {end} "
            "(no end-of-archive block)"
        )


def _tar_kind(info: tarfile.TarInfo) -> str:
    if info.issym():
        return f"symlink to {info.linkname!r}"
    if info.islnk():
        return f"hard link to {info.linkname!r}"
    if info.ischr() or info.isblk():
        return "device"
    if info.isfifo():
        return "FIFO"
    return f"member of unknown type {info.type!r}"


# --- zip --------------------------------------------------------------------------


def _read_zip(source: Source, members: _Members, budget: _Budget) -> None:
    """Check every entry of the central directory, then inflate them in order."""
    name = source.name
    _check_zip_directory(source, members)
    try:
        with zipfile.ZipFile(_SourceFile(source)) as archive:
            infos = archive.infolist()
            admitted: list[tuple[str, zipfile.ZipInfo]] = []
            for info in infos:
                members.count(info.filename)
                if _zip_is_dir(info):
                    members.path(info.filename)
                    continue
                _check_zip_entry(name, info)
                admitted.append((members.admit(info.filename, info.file_size), info))
            for path, info in admitted:
                budget.reading = f"member {path!r}"
                if members.wanted(path):
                    members.keep(path, _read_zip_member(archive, path, info, members, budget))
                else:
                    members.skip(path, _drain_zip_member(archive, path, info, members, budget))
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        OSError,
        ValueError,
        NotImplementedError,
        RuntimeError,
        zlib.error,
        struct.error,
    ) as exc:
        raise InvalidArtifact(f"{name}: not a readable zip archive: {_one_line(exc)}") from None


def _read_zip_member(
    archive: zipfile.ZipFile, path: str, info: zipfile.ZipInfo, members: _Members, budget: _Budget
) -> bytes:
    parts: list[bytes] = []
    with archive.open(info) as member:
        while chunk := member.read(READ_CHUNK):
            budget.spend(len(chunk))
            members.grow(path, len(chunk))
            parts.append(chunk)
    return b"".join(parts)


def _drain_zip_member(
    archive: zipfile.ZipFile, path: str, info: zipfile.ZipInfo, members: _Members, budget: _Budget
) -> int:
    """Inflate and count a member nobody reads (its CRC still checked); keep nothing."""
    length = 0
    with archive.open(info) as member:
        while chunk := member.read(READ_CHUNK):
            budget.spend(len(chunk))
            members.grow(path, len(chunk))
            length += len(chunk)
    return length


def _zip_is_dir(info: zipfile.ZipInfo) -> bool:
    return info.is_dir() or (info.create_system == 3 and stat.S_ISDIR(info.external_attr >> 16))


def _check_zip_entry(name: str, info: zipfile.ZipInfo) -> None:
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        kind = "symlink" if stat.S_ISLNK(mode) else "special file"
        raise InvalidArtifact(
            f"{name}: member {info.filename!r} is a {kind}; "
            "archives may hold only regular files and directories"
        )
    if info.flag_bits & 0x1:
        raise InvalidArtifact(f"{name}: member {info.filename!r} is encrypted")
    if info.compress_type not in ZIP_METHODS:
        # bzip2 and lzma inflate without an output bound in zipfile, so a
        # small chunk could become gigabytes before any cap is checked.
        raise UnsupportedArtifact(
            f"{name}: member {info.filename!r} uses zip compression method "
            f"{info.compress_type}; re-create the zip with deflate or no compression"
        )


def _check_zip_directory(source: Source, members: _Members) -> None:
    """Refuse a central directory too large for the member cap before zipfile reads it.

    zipfile builds one object per directory entry, so the directory's size
    bounds its memory. The end records are found as zipfile finds them.
    """
    name = source.name
    tail_length = min(source.size, ZIP_END_BYTES + 0xFFFF + ZIP64_END_BYTES + ZIP64_LOCATOR_BYTES)
    tail = source.read_at(source.size - tail_length, tail_length)
    at = len(tail) - ZIP_END_BYTES
    if at < 0 or tail[at : at + 4] != b"PK\x05\x06":
        at = tail.rfind(b"PK\x05\x06", 0, max(0, len(tail) - 3))
    if at < 0 or at + ZIP_END_BYTES > len(tail):
        raise InvalidArtifact(f"{name}: zip has no end-of-central-directory record (truncated?)")
    entries, directory_bytes = struct.unpack_from("<HI", tail, at + 10)
    zip64 = at - ZIP64_LOCATOR_BYTES - ZIP64_END_BYTES
    if (
        zip64 >= 0
        and tail[at - ZIP64_LOCATOR_BYTES : at - ZIP64_LOCATOR_BYTES + 4] == b"PK\x06\x07"
        and tail[zip64 : zip64 + 4] == b"PK\x06\x06"
    ):
        entries, directory_bytes = struct.unpack_from("<QQ", tail, zip64 + 32)
    limits = members.limits
    if entries > limits.max_members:
        raise LimitExceeded(
            f"{name}: zip lists {entries} members, more than the {limits.max_members} allowed"
        )
    if directory_bytes > limits.max_members * ZIP_DIRECTORY_BYTES_PER_MEMBER:
        raise LimitExceeded(
            f"{name}: zip central directory is {directory_bytes} bytes, "
            f"too large for {limits.max_members} members"
        )
