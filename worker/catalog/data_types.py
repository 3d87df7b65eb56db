"""Each release's `DataType` enum (`data/data_types.json`).

Written by `tools/build_data_types.py` (format `tfcompat-data-types/1`) from the
`data_types` of each release's own manifest: the names of its `types_pb2.DataType`,
read in an install of that release (the same `worker/fleet/dump_manifest.py` a
consumer's manifest comes from). TensorFlow only appends to the enum
(`types.proto`), so a release between two measured ones surely holds what the older
one holds and at most what the newer one holds; a name the two disagree on is
"not measured" for it, never "known". A release's kernel table (`at_least`, dumped in
the release) names types its enum surely has: known there and in every later release.
"""

from __future__ import annotations

import json
from typing import Any

from packaging.version import InvalidVersion, Version

from worker.model.consumer import DataTypes

DATA_TYPES_FORMAT = "tfcompat-data-types/1"


class ShippedDataTypes:
    """Per release, what its DataType enum holds (measured, or bounded by measured ones)."""

    def __init__(self, data: bytes) -> None:
        doc: dict[str, Any] = json.loads(data)
        if doc.get("format") != DATA_TYPES_FORMAT:
            raise ValueError(f"data types: unknown format {doc.get('format')!r}")
        measured = sorted(
            ((Version(v), frozenset(names)) for v, names in doc["releases"].items()),
            key=lambda row: row[0],
        )
        self._measured = measured
        self._at_least = sorted(
            ((Version(v), frozenset(names)) for v, names in doc.get("at_least", {}).items()),
            key=lambda row: row[0],
        )
        self._first: dict[str, str] = {}
        for version, names in sorted([*measured, *self._at_least], key=lambda row: row[0]):
            for name in names:
                self._first.setdefault(name, str(version))
        self._cache: dict[str, DataTypes | None] = {}

    def versions(self) -> list[str]:
        return [str(v) for v, _ in self._measured]

    def data_types(self, release: str) -> DataTypes | None:
        """What `release`'s enum holds; None when no measured release bounds it."""
        if release in self._cache:
            return self._cache[release]
        try:
            version = Version(release)
        except InvalidVersion:
            return None
        older = [(v, names) for v, names in self._measured if v <= version]
        newer = [(v, names) for v, names in self._measured if v >= version]
        if not older and not newer:
            found = None
        else:
            bounds = sorted({str(v) for v, _ in (*older[-1:], *newer[:1])}, key=Version)
            source = ("measured in " if len(bounds) == 1 and newer else "bounded by ") + (
                " and ".join(bounds)
            )
            known = frozenset().union(
                *(names for _, names in older[-1:]),
                *(names for v, names in self._at_least if v <= version),
            )
            found = DataTypes(known, newer[0][1] if newer else None, source, self._first)
        self._cache[release] = found
        return found
