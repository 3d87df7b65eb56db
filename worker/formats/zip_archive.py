"""Zip archives: the central directory is checked first, then members are inflated.

zipfile trusts the central directory and reads the local header only for the
name. Streaming unzippers and some loaders trust the local header instead, so
an archive whose two headers disagree (name, compression method, sizes, CRC)
shows different files to different readers; it is refused.
"""

from __future__ import annotations

import stat
import struct
import zipfile
import zlib

from worker.errors import InvalidArtifact, LimitExceeded, UnsupportedArtifact
from worker.formats.archive_members import READ_CHUNK, Budget, Members, SourceFile, one_line
from worker.formats.source import Source

ZIP_DIRECTORY_BYTES_PER_MEMBER = 4096
ZIP_END_BYTES = 22
ZIP64_END_BYTES = 56
ZIP64_LOCATOR_BYTES = 20
ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
LOCAL_SIGNATURE = b"PK\x03\x04"
DATA_DESCRIPTOR_FLAG = 0x8
UTF8_FLAG = 0x800
ZIP64_EXTRA = 0x0001


def read_zip(source: Source, members: Members, budget: Budget) -> None:
    """Check every entry of the central directory, then inflate them in order."""
    name = source.name
    _check_zip_directory(source, members)
    try:
        with zipfile.ZipFile(SourceFile(source)) as archive:
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
                _check_local_header(source, info)
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
        raise InvalidArtifact(f"{name}: not a readable zip archive: {one_line(exc)}") from None


def _read_zip_member(
    archive: zipfile.ZipFile, path: str, info: zipfile.ZipInfo, members: Members, budget: Budget
) -> bytes:
    parts: list[bytes] = []
    with archive.open(info) as member:
        while chunk := member.read(READ_CHUNK):
            budget.spend(len(chunk))
            members.grow(path, len(chunk))
            parts.append(chunk)
    return b"".join(parts)


def _drain_zip_member(
    archive: zipfile.ZipFile, path: str, info: zipfile.ZipInfo, members: Members, budget: Budget
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


def _check_zip_directory(source: Source, members: Members) -> None:
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


def _check_local_header(source: Source, info: zipfile.ZipInfo) -> None:
    """The member's local header must say what the central directory says."""
    name = source.name
    where = f"{name}: member {info.filename!r}"
    if info.header_offset + LOCAL_HEADER.size > source.size:
        raise InvalidArtifact(f"{where}: local header lies past the end of the archive")
    fields = LOCAL_HEADER.unpack(source.read_at(info.header_offset, LOCAL_HEADER.size))
    signature, _version, flags, method, _time, _date, crc, csize, usize, nlen, xlen = fields
    if signature != LOCAL_SIGNATURE:
        raise InvalidArtifact(f"{where}: no local header where the central directory points")
    start = info.header_offset + LOCAL_HEADER.size
    if start + nlen + xlen > source.size:
        raise InvalidArtifact(f"{where}: local header runs past the end of the archive")
    raw_name = source.read_at(start, nlen)
    encoding = "utf-8" if info.flag_bits & UTF8_FLAG else "cp437"
    if raw_name != info.orig_filename.encode(encoding, "surrogateescape"):
        raise InvalidArtifact(f"{where}: local header names it {raw_name[:200]!r}")
    if method != info.compress_type:
        raise InvalidArtifact(
            f"{where}: local header says compression {method}, "
            f"the central directory {info.compress_type}"
        )
    if flags & DATA_DESCRIPTOR_FLAG and crc == csize == usize == 0:
        return  # sizes and CRC follow the data, as streaming writers do
    if 0xFFFFFFFF in (csize, usize):
        usize, csize = _zip64_sizes(source.read_at(start + nlen, xlen), usize, csize)
    if (crc, csize, usize) != (info.CRC, info.compress_size, info.file_size):
        raise InvalidArtifact(
            f"{where}: local header says {csize} bytes compressed, {usize} uncompressed, "
            f"CRC {crc:08x}; the central directory {info.compress_size}, {info.file_size}, "
            f"{info.CRC:08x}"
        )


def _zip64_sizes(extra: bytes, usize: int, csize: int) -> tuple[int, int]:
    """Sizes from a local header's zip64 extra field (only those set to 0xFFFFFFFF)."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + length]
        if tag == ZIP64_EXTRA:
            values = [v for (v,) in struct.iter_unpack("<Q", body[: len(body) // 8 * 8])]
            if usize == 0xFFFFFFFF and values:
                usize = values.pop(0)
            if csize == 0xFFFFFFFF and values:
                csize = values.pop(0)
            break
        pos += 4 + length
    return usize, csize
