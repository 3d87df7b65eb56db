"""Tar and tar.gz archives, read once front to back as a stream.

tarfile's streaming mode (`r|`) never seeks, so a gzip stream is inflated
here, a chunk at a time, and every byte handed to tarfile is spent against
the archive's budget first. A gzip file may hold several members one after
another (`cat a.gz b.gz`, or tools that flush in pieces); `gzip -d` and GNU
tar read them as one stream, and so does this.
"""

from __future__ import annotations

import io
import tarfile
import zlib

from worker.errors import InvalidArtifact
from worker.formats.archive_members import READ_CHUNK, Budget, Members, SourceFile, one_line
from worker.formats.source import Source

GZIP_MAGIC = b"\x1f\x8b"
_RAW_CHUNK = 64 << 10


class TarStream:
    """The bytes tarfile reads: the source itself, or the source inflated from
    gzip (every member in turn), at most a chunk per read; every byte handed
    out is spent against the budget.
    """

    def __init__(self, source: Source, budget: Budget, *, gzip: bool) -> None:
        self._raw = SourceFile(source)
        self._name = source.name
        self._budget = budget
        self._inflater = _gzip_inflater() if gzip else None
        self._pending = b""  # compressed bytes read ahead for the next gzip member

    def read(self, size: int = -1, /) -> bytes:
        want = READ_CHUNK if size < 0 else min(size, READ_CHUNK)
        data = self._raw.read(want) if self._inflater is None else self._inflate(want)
        self._budget.spend(len(data))
        return data

    def finish(self) -> None:
        """Inflate what tar did not need, so truncation and a bad gzip CRC are caught."""
        while self._inflater is not None and self.read(READ_CHUNK):
            pass

    def _next_member(self, inflater: zlib._Decompress) -> bool:
        """After a member's end: start the next one if gzip bytes follow.

        Bytes after the last member that are not a gzip header (zero padding
        from tape-style writers, say) are left unread, as before.
        """
        rest = inflater.unused_data or self._raw.read(_RAW_CHUNK)
        if len(rest) < len(GZIP_MAGIC):
            rest += self._raw.read(_RAW_CHUNK)
        if not rest.startswith(GZIP_MAGIC):
            return False
        self._inflater = _gzip_inflater()
        self._pending = rest
        return True

    def _inflate(self, want: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < want:
            inflater = self._inflater
            assert inflater is not None
            if inflater.eof:
                if not self._next_member(inflater):
                    break
                continue
            data, self._pending = self._pending, b""
            data = data or inflater.unconsumed_tail or self._raw.read(_RAW_CHUNK)
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


def _gzip_inflater() -> zlib._Decompress:
    return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)


def _read_tar(source: Source, stream: TarStream, members: Members, budget: Budget) -> int:
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
        raise InvalidArtifact(f"{name}: not a readable tar archive: {one_line(exc)}") from None
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


def read_tar(source: Source, members: Members, budget: Budget, *, gzip: bool) -> None:
    """Every member of a tar or tar.gz into `members`, within the budget."""
    stream = TarStream(source, budget, gzip=gzip)
    end = _read_tar(source, stream, members, budget)
    if gzip:
        stream.finish()
    else:
        _check_tar_end(source, end)
