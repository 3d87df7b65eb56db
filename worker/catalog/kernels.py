"""The kernel registries shipped with the package (`data/kernels.json.gz`).

Written by `tools/build_kernels.py` from each release's CPU wheel (format
`tfcompat-kernels/1`): every distinct per-op table once, and per release, op ->
table. Identical tables are the same object in every release that has them, so
a check can key on an op's table identity the way it keys on OpDefs.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from typing import Any

from worker.model.consumer import KernelDefs, RevivedType, RevivedTypes

KERNELS_FORMAT = "tfcompat-kernels/1"


class ShippedKernels:
    """Per release, op -> device -> kernels; decoded once, tables shared."""

    def __init__(self, data: bytes) -> None:
        doc = json.loads(gzip.decompress(data))
        if doc.get("format") != KERNELS_FORMAT:
            raise ValueError(f"kernels: unknown format {doc.get('format')!r}")
        self._tables: list[Any] = [_table(t) for t in doc["tables"]]
        self._releases: dict[str, dict[str, int]] = doc["releases"]
        self._decoded: dict[str, KernelDefs] = {}

    def versions(self) -> list[str]:
        return list(self._releases)

    def kernels(self, version: str) -> KernelDefs | None:
        """The kernel registry measured for exactly this release; None when not measured."""
        found = self._decoded.get(version)
        if found is None:
            ops = self._releases.get(version)
            if ops is None:
                return None
            tables = self._tables
            found = self._decoded[version] = {op: tables[i] for op, i in ops.items()}
        return found


def _table(
    raw: Mapping[str, Any],
) -> dict[str, tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]]:
    return {
        device: tuple(tuple((attr, tuple(types)) for attr, types in kernel) for kernel in kernels)
        for device, kernels in raw.items()
    }


def revived_types_from_json(raw: Any) -> RevivedTypes | None:
    """A release's (or a manifest's) `revived_types`; None when absent or malformed."""
    if not isinstance(raw, dict):
        return None
    try:
        return {
            str(identifier): tuple(
                RevivedType(
                    int(row["version"]),
                    int(row["min_producer_version"]),
                    int(row["min_consumer_version"]),
                    tuple(int(b) for b in row["bad_consumers"]),
                    tuple(str(m) for m in row["methods"]),
                )
                for row in rows
            )
            for identifier, rows in raw.items()
        }
    except (KeyError, TypeError, ValueError):
        return None


class ShippedRevivedTypes:
    """`data/revived_types.json` (tools/build_kernels.py): per release, what
    tf.saved_model.load revives by identifier."""

    def __init__(self, data: bytes) -> None:
        self._releases: dict[str, Any] = json.loads(data)["releases"]
        self._decoded: dict[str, RevivedTypes | None] = {}

    def revived(self, version: str) -> RevivedTypes | None:
        if version not in self._decoded:
            self._decoded[version] = revived_types_from_json(self._releases.get(version))
        return self._decoded[version]
