"""The measured kernel table: each change shows its input and where the results differ."""

from __future__ import annotations

import json
from typing import Any

import pytest

from worker.catalog.catalog import DATA, load_catalog
from worker.catalog.kernel_changes import ShippedKernelChanges

DOC = json.loads((DATA / "kernel_changes.json").read_text())
CHANGES: list[dict[str, Any]] = [c for c in DOC["changes"] if c["differs_in"]]


def test_every_catalogued_release_was_compared() -> None:
    catalog = load_catalog()
    assert set(DOC["releases"]) == set(catalog.registry_releases())
    assert DOC["newest"] == max(DOC["releases"], key=lambda v: [int(p) for p in v.split(".")])


@pytest.mark.parametrize("row", CHANGES, ids=[c["id"] for c in CHANGES])
def test_a_change_carries_its_input_and_the_first_difference(row: dict[str, Any]) -> None:
    assert row["inputs"] and row["evidence"]["first_difference"]
    assert row["evidence"]["release"] in row["differs_in"]
    assert row["evidence"]["result"] != row["newest_result"]


def test_a_release_is_matched_by_its_minor() -> None:
    table = ShippedKernelChanges((DATA / "kernel_changes.json").read_bytes())
    row = CHANGES[0]
    release = row["differs_in"][0]
    minor = ".".join(release.split(".")[:2])
    found = table.change(row["op"], row["dtype"], f"{minor}.0")
    assert found is not None and found.release == release
    assert table.change(row["op"], row["dtype"], DOC["newest"]) is None
