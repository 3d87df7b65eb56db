"""The measured attr table covers every attr a release added, and each row shows its proof."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from worker.catalog.attr_effects import ShippedAttrEffects
from worker.catalog.catalog import DATA, load_catalog
from worker.model.effects import Effect

ROOT = Path(__file__).resolve().parents[2]
DOC = json.loads((DATA / "attr_effects.json").read_text())
ROWS: list[dict[str, Any]] = DOC["attrs"]


def _added_since(major: int, minor: int) -> set[tuple[str, str]]:
    """(op, attr) of every attr the shipped registries add to an existing op in
    release major.minor or later."""
    lines = (DATA / "registries.jsonl").read_bytes().split(b"\n")
    header = json.loads(lines[0])
    seen: dict[str, set[str]] = {}
    added: set[tuple[str, str]] = set()
    for release in header["releases"]:
        version = tuple(int(p) for p in release["version"].split(".")[:2])
        for op, line in release["set"].items():
            names = {a["name"] for a in json.loads(lines[1 + line]).get("attr", [])}
            if op in seen and version >= (major, minor):
                added |= {(op, name) for name in names - seen[op]}
            seen[op] = seen.get(op, set()) | names
    return added


def test_every_attr_added_after_2_4_is_classified() -> None:
    table = {(r["op"], r["attr"]) for r in ROWS}
    missing = _added_since(2, 5) - table
    assert not missing, sorted(missing)


def test_rows_are_sorted_and_unique() -> None:
    keys = [(r["op"], r["attr"]) for r in ROWS]
    assert keys == sorted(set(keys))


@pytest.mark.parametrize("row", [r for r in ROWS if r["effect"] == Effect.CHANGES_RESULTS])
def test_a_changing_attr_carries_the_input_and_both_results(row: dict[str, Any]) -> None:
    evidence = row["evidence"]
    assert row["measured_in"]
    assert "inputs" in evidence and "value" in evidence
    assert evidence["default_result"] != evidence["value_result"]


@pytest.mark.parametrize("row", [r for r in ROWS if r["effect"] == Effect.NO_EFFECT])
def test_a_harmless_attr_says_how_it_was_measured(row: dict[str, Any]) -> None:
    assert row["measured_in"]
    assert "the same results" in row["how"] and row["evidence"]["inputs"]


def test_unverified_rows_say_why() -> None:
    for row in ROWS:
        if row["effect"] == Effect.UNVERIFIED:
            assert len(row["how"]) > 20, row


def test_the_catalog_reads_the_table() -> None:
    catalog = load_catalog()
    found = catalog.attr_effect("CTCGreedyDecoder", "blank_index")
    assert found is not None and found.effect == Effect.CHANGES_RESULTS
    assert "blank_index" in found.evidence
    assert catalog.attr_effect("MatMul", "no_such_attr") is None


def test_the_docs_counts_are_the_tables() -> None:
    effects = ShippedAttrEffects((DATA / "attr_effects.json").read_bytes())
    page = (ROOT / "docs" / "verdicts" / "same-answer.md").read_text()
    for since, label in (((2, 5), "added from 2.5 on"), ((0, 0), "every attr")):
        counts = effects.counts(since)
        line = next(
            line.strip() for line in page.splitlines() if line.strip().startswith(f"| {label} ")
        )
        numbers = [int(n) for n in re.findall(r"\d+", line.split("|", 2)[2])]
        assert numbers == [
            sum(counts.values()),
            counts[Effect.CHANGES_RESULTS],
            counts[Effect.NO_EFFECT],
            counts[Effect.UNVERIFIED],
        ], line
