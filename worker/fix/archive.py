"""The copy of an archived model: the same archive with its model files rewritten.

The archive is first opened by `formats.archive.open_archive` (every cap and
every refusal of links, escapes and bombs applies; only model files are kept
in memory), the copy planned over that tree like a directory, then the archive
is streamed again member by member into a new one of the same kind: members
the plan rewrites get their new bytes, every other member (variables, assets)
is copied with its original header fields. Nothing is extracted to disk.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from collections.abc import Sequence
from typing import BinaryIO

from worker.catalog.catalog import Catalog
from worker.errors import InvalidArtifact
from worker.fix.copy import CopyFile, ModelCopy, copy_tree
from worker.fix.rewrite import render
from worker.formats.archive import open_archive
from worker.formats.archive_members import archive_kind
from worker.formats.read import is_model_file
from worker.formats.source import Source
from worker.model.consumer import Consumer


def _normal(raw: str) -> str:
    return "/".join(p for p in raw.replace("\\", "/").split("/") if p not in ("", "."))


def archive_copy(
    source: Source, display: str, consumers: Sequence[Consumer], catalog: Catalog
) -> ModelCopy:
    tree = open_archive(source, wanted=is_model_file)
    copy = copy_tree(tree, display, consumers, catalog)
    changed = tuple(f for f in copy.files if f.changed)
    return ModelCopy(copy.plans, changed, archive=source)


def _content(item: CopyFile) -> bytes:
    if item.data is not None:
        return item.data
    assert item.pieces is not None
    return render(item.source, list(item.pieces))


class _SourceReader(io.RawIOBase):
    def __init__(self, source: Source) -> None:
        self._source = source
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._source.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        length = min(len(buffer), self._source.size - self._pos)
        if length <= 0:
            return 0
        data = self._source.read_at(self._pos, length)
        buffer[:length] = data
        self._pos += length
        return length


def write_archive(copy: ModelCopy, out: BinaryIO) -> None:
    """Stream the archive again into `out`, with the rewritten members replaced."""
    assert copy.archive is not None
    source = copy.archive
    replaced = {f.name: _content(f) for f in copy.files}
    head = source.read_at(0, min(source.size, 262))
    kind = archive_kind(head)
    reader = io.BufferedReader(_SourceReader(source), buffer_size=1 << 20)
    if kind == "zip":
        _write_zip(reader, replaced, out)
    elif kind in ("gzip", "tar"):
        _write_tar(reader, replaced, out, compressed=kind == "gzip")
    else:
        raise InvalidArtifact(f"{source.name}: not a tar, tar.gz or zip archive")


def _write_tar(
    reader: BinaryIO, replaced: dict[str, bytes], out: BinaryIO, compressed: bool
) -> None:
    sink: BinaryIO = (
        gzip.GzipFile(fileobj=out, mode="wb", mtime=0)  # type: ignore[assignment]
        if compressed
        else out
    )
    try:
        with (
            tarfile.open(fileobj=reader, mode="r|*") as original,
            tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as target,
        ):
            for info in original:
                name = _normal(info.name)
                if info.isfile() and name in replaced:
                    data = replaced[name]
                    new = tarfile.TarInfo(info.name)
                    for attribute in ("mode", "uid", "gid", "uname", "gname", "mtime"):
                        setattr(new, attribute, getattr(info, attribute))
                    new.size = len(data)
                    target.addfile(new, io.BytesIO(data))
                elif info.isfile():
                    target.addfile(info, original.extractfile(info))
                else:
                    target.addfile(info)
    finally:
        if sink is not out:
            sink.close()


def _write_zip(reader: BinaryIO, replaced: dict[str, bytes], out: BinaryIO) -> None:
    with zipfile.ZipFile(reader) as original, zipfile.ZipFile(out, "w") as target:
        for info in original.infolist():
            name = _normal(info.filename)
            if name in replaced and not info.is_dir():
                target.writestr(info, replaced[name], compress_type=info.compress_type)
            elif info.is_dir():
                target.writestr(info, b"")
            else:
                with original.open(info) as member, target.open(info, "w") as copy:
                    while chunk := member.read(1 << 20):
                        copy.write(chunk)
