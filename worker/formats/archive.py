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

The formats live in `tar_archive` and `zip_archive`; the rules every member
passes in `archive_members`.
"""

from __future__ import annotations

from collections.abc import Callable

from worker.errors import UnsupportedArtifact
from worker.formats.archive_members import (
    SNIFF_BYTES,
    ArchiveLimits,
    Budget,
    Members,
    archive_kind,
)
from worker.formats.source import MappingTree, Source
from worker.formats.tar_archive import read_tar
from worker.formats.zip_archive import read_zip

__all__ = ["ArchiveLimits", "ArchiveTree", "is_archive", "open_archive"]

DEFAULT_LIMITS = ArchiveLimits()


class ArchiveTree(MappingTree):
    """An archive's regular files, plus notes on members deliberately skipped."""

    complete_listing = True  # every member is listed, kept or not (a Placeholder)

    def __init__(self, name: str, sources: dict[str, Source], notes: tuple[str, ...]) -> None:
        super().__init__(name, sources)
        self.notes = notes


def is_archive(source: Source) -> bool:
    """True when the first bytes say gzip, zip or tar (whatever the name says)."""
    head = source.read_at(0, min(source.size, SNIFF_BYTES))
    return archive_kind(head) is not None


def open_archive(
    source: Source,
    *,
    limits: ArchiveLimits = DEFAULT_LIMITS,
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
    kind = archive_kind(head)
    members = Members(source.name, limits, wanted)
    budget = Budget(source.name, source.size, limits)
    if kind == "zip":
        read_zip(source, members, budget)
    elif kind in ("gzip", "tar"):
        read_tar(source, members, budget, gzip=kind == "gzip")
    else:
        raise UnsupportedArtifact(f"{source.name}: not a tar, tar.gz or zip archive")
    return ArchiveTree(source.name, members.sources, tuple(members.notes))
