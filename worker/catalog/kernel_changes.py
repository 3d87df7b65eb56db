"""Ops whose kernels compute differently between releases (`data/kernel_changes.json`).

Written by tools/attrs/kernels.py (format `tfcompat-kernel-changes/1`): common ops,
each with one dtype and edge-case inputs, run in every catalogued release; per
(op, dtype), the releases whose results differ from the newest release's, and the
input and results that show it. Differences within rounding (1e-6 relative) are
kept in the file but are no change here. A release is matched by its minor: the
patch releases of a minor run the measured one's kernels as far as the catalog
knows (the registries say the same).
"""

from __future__ import annotations

import json
from typing import Any

from worker.model.effects import KernelChange

KERNEL_CHANGES_FORMAT = "tfcompat-kernel-changes/1"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


class ShippedKernelChanges:
    """(op, dtype, minor) -> the change measured there."""

    def __init__(self, data: bytes) -> None:
        doc = json.loads(data)
        if doc.get("format") != KERNEL_CHANGES_FORMAT:
            raise ValueError(f"kernel changes: unknown format {doc.get('format')!r}")
        self.newest: str = doc["newest"]
        self.releases: list[str] = sorted(doc["releases"], key=_key)
        self.compared: list[str] = doc["compared"]
        self._by_key: dict[tuple[str, str, str], KernelChange] = {}
        self._ops: set[str] = set()
        for row in doc["changes"]:
            differs = set(row["differs_in"])
            for release in differs:
                key = (row["op"], row["dtype"], _minor(release))
                if key in self._by_key:
                    continue  # several cases of one op and dtype: the first one's evidence
                self._by_key[key] = KernelChange(
                    op=row["op"],
                    dtype=row["dtype"],
                    release=release,
                    newest=self.newest,
                    evidence=_evidence(row),
                    same_from=next(
                        (r for r in self.releases if _key(r) > _key(release) and r not in differs),
                        None,
                    ),
                )
                self._ops.add(row["op"])
        self._frozen_ops = frozenset(self._ops)

    @property
    def ops(self) -> frozenset[str]:
        return self._frozen_ops

    def change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        if op not in self._ops:
            return None
        return self._by_key.get((op, dtype, _minor(release)))

    def changed_pairs(self) -> set[tuple[str, str]]:
        return {(k[0], k[1]) for k in self._by_key}


def _evidence(row: dict[str, Any]) -> str:
    found = row.get("evidence") or {}
    inputs = ", ".join(
        json.dumps(i.get("tensor", {}).get("value"), separators=(",", ":"))[:60]
        for i in row.get("inputs", [])
    )
    return (
        f"on input {inputs}, {found.get('release')} gives "
        f"{found.get('first_difference', 'other results')}"
    )
