"""Read a model from, and write its copy to, the local file system, without
following links.

Guarantees, for hostile input as much as for mistakes:
- the model path and everything under it is read only if it is a regular
  file or directory: a symbolic link anywhere (the path itself included), a
  device or a FIFO is refused, never followed;
- the copy is written only at `out`: a file, or a directory created for it,
  whose files are created with O_EXCL | O_NOFOLLOW, so nothing planted there
  meanwhile is written through; nothing is written when `out` exists, unless
  `force` (then `out` itself is removed first: a link as a link, a directory
  with its content, never what a link points to);
- `out` may not be the model, lie inside it, or contain it;
- a copy that fails half-way is removed.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from worker.catalog.catalog import Catalog
from worker.errors import InvalidArtifact, NotFound, TfcompatError
from worker.fix.archive import archive_copy, write_archive
from worker.fix.copy import CopyFile, ModelCopy, copy_tree
from worker.fix.rewrite import write_pieces
from worker.formats.archive import is_archive
from worker.formats.source import FileSource as _FileSource
from worker.formats.source import MappingTree, Source
from worker.model.consumer import Consumer


class OutputExists(TfcompatError):
    """The output path exists and --force was not given."""


class UnsafePath(TfcompatError):
    """A link or special file where a model or its copy should be."""


def model_tree(path: str) -> tuple[MappingTree, bool]:
    """The model at `path` as a tree, and whether it is a directory.

    A single file becomes a one-member tree named by its base name; a
    `saved_model.pb` path stands for its directory."""
    p = Path(path)
    try:
        info = p.lstat()
    except FileNotFoundError:
        raise NotFound(f"{path}: no such file or directory") from None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(f"{path}: is a symbolic link; fix never follows links")
    if stat.S_ISREG(info.st_mode) and p.name in ("saved_model.pb", "saved_model.pbtxt"):
        return model_tree(str(p.parent))
    if stat.S_ISREG(info.st_mode):
        return MappingTree(str(p), {p.name: _FileSource(p)}), False
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{path}: not a regular file or directory")
    sources: dict[str, Source] = {}
    for dirpath, dirs, files in os.walk(p):
        for entry in sorted(dirs) + sorted(files):
            full = Path(dirpath, entry)
            mode = full.lstat().st_mode
            relative = full.relative_to(p).as_posix()
            if stat.S_ISLNK(mode):
                raise UnsafePath(f"{full}: is a symbolic link; fix never follows links")
            if stat.S_ISREG(mode):
                sources[relative] = _FileSource(full)
            elif not stat.S_ISDIR(mode):
                raise UnsafePath(f"{full}: not a regular file or directory")
    if not sources:
        raise InvalidArtifact(f"{path}: empty directory")
    return MappingTree(str(p), sources), True


def check_output(model: str, out: str, force: bool) -> None:
    """Refuse an output that would overwrite without --force, or touch the model."""
    model_path = Path(model).resolve()
    if Path(model).is_file() and Path(model).name in ("saved_model.pb", "saved_model.pbtxt"):
        model_path = model_path.parent
    out_path = Path(os.path.abspath(out))
    resolved_parent = out_path.parent.resolve()
    target = resolved_parent / out_path.name
    if target == model_path or target.is_relative_to(model_path):
        raise UnsafePath(f"{out}: the copy cannot be written at or inside the model {model}")
    if model_path.is_relative_to(target):
        raise UnsafePath(f"{out}: the copy cannot replace a directory holding the model {model}")
    if not resolved_parent.is_dir():
        raise NotFound(f"{out}: its directory {out_path.parent} does not exist")
    if os.path.lexists(out_path) and not force:
        raise OutputExists(f"{out}: exists; give --force to replace it")


def _remove(out: Path) -> None:
    info = out.lstat()
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(out)  # removes links inside as links
    else:
        out.unlink()


def _create(path: Path) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, 0o644)


def _write_file(path: Path, item: CopyFile) -> None:
    fd = _create(path)
    with os.fdopen(fd, "wb") as handle:
        if item.data is not None:
            handle.write(item.data)
        elif item.pieces is not None:
            write_pieces(item.source, list(item.pieces), handle)
        else:
            write_pieces(item.source, [(0, item.source.size)], handle)


def write_copy(copy: ModelCopy, out: str, is_dir: bool, force: bool) -> None:
    """Write the copy at `out` (a directory when the model is one)."""
    files = copy.files
    out_path = Path(os.path.abspath(out))
    if os.path.lexists(out_path):
        if not force:
            raise OutputExists(f"{out}: exists; give --force to replace it")
        _remove(out_path)
    try:
        if copy.archive is not None:
            with os.fdopen(_create(out_path), "wb") as handle:
                write_archive(copy, handle)
            return
        if not is_dir:
            (only,) = files
            _write_file(out_path, only)
            return
        out_path.mkdir()
        for item in files:
            parts = item.name.split("/")
            if any(part in ("", ".", "..") for part in parts):
                raise UnsafePath(f"{item.name}: not a plain relative name")
            target = out_path.joinpath(*parts)
            parent = target.parent
            if parent != out_path:
                parent.mkdir(parents=True, exist_ok=True)
                if parent.is_symlink():
                    raise UnsafePath(f"{parent}: a link appeared in the copy")
            _write_file(target, item)
    except BaseException:
        if os.path.lexists(out_path):
            _remove(out_path)
        raise


def remove_output(out: str) -> None:
    """Remove a copy this run wrote (a link as a link)."""
    path = Path(os.path.abspath(out))
    if os.path.lexists(path):
        _remove(path)


def build_copy(
    path: str, consumers: Sequence[Consumer], catalog: Catalog
) -> tuple[ModelCopy, bool]:
    """The planned copy of the model at `path`, and whether the model is a directory."""
    tree, is_dir = model_tree(path)
    if not is_dir:
        (name,) = tree.names()
        source = tree.open(name)
        if source.size and is_archive(source):
            return archive_copy(source, path, consumers, catalog), False
        # the tree holds the file under its own name: name it from its folder, or the
        # file's path would read `FILE/FILE`
        return copy_tree(tree, str(Path(path).parent), consumers, catalog), False
    return copy_tree(tree, path, consumers, catalog), True
