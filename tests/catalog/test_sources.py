"""Every table of facts the package ships says where it came from (its `source` record)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from worker.catalog.sources import read_source, shipped_data_files, source_of

ROOT = Path(__file__).resolve().parents[2]
FILES = shipped_data_files()


def test_the_package_ships_data_files_in_both_folders() -> None:
    assert {p.parent.name for p in FILES} == {"data"}
    assert {p.parent.parent.name for p in FILES} == {"catalog", "fleet"}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_shipped_data_file_names_the_tool_that_wrote_it(path: Path) -> None:
    source = read_source(path)
    assert (ROOT / source.tool).is_file(), f"{path.name}: {source.tool} is not in the repository"
    assert source.tool.startswith("tools/")


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_shipped_data_file_names_what_it_read_and_when(path: Path) -> None:
    source = read_source(path)
    assert source.read and all(source.read)
    assert dt.date(2026, 1, 1) <= source.date <= dt.date.today()
    assert source.how


# What the reader refuses: a document without the record, or with part of it.
@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({"format": "x"}, "no source record"),
        ({"source": "tools/x.py: a sentence"}, "no source record"),
        ({"source": {"tool": "tools/x.py", "how": "h", "read": ["a"]}}, "lacks date"),
        ({"source": {"tool": "tools/x.py", "how": "h", "read": [], "date": "2026-12-01"}}, "read"),
        (
            {"source": {"tool": "tools/x.py", "how": "h", "read": ["a"], "date": "Dec 1"}},
            "not YYYY-MM-DD",
        ),
    ],
)
def test_a_document_without_a_whole_source_record_is_refused(
    document: dict[str, object], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        source_of(document, "table.json")


def test_a_catalog_table_measured_per_release_names_each_release_it_read() -> None:
    catalog = {p.name: read_source(p) for p in FILES}
    assert "tensorflow-cpu==2.21.0" in catalog["kernels.json.gz"].read
    assert "tensorflow==1.13.2" in catalog["registries.jsonl"].read
    assert "ai-edge-litert==1.0.1" in catalog["tflite_runtimes.json"].read


# Fixture truth files a tool or the history wrote, whose readers skip a top-level key.
TRUTH = [
    ROOT / "tests" / "fixtures" / "keras" / "keras_inputs.json",
    ROOT / "tests" / "fixtures" / "held_out.json",
]


@pytest.mark.parametrize("path", TRUTH, ids=[p.name for p in TRUTH])
def test_a_fixture_truth_file_with_a_document_root_names_its_source(path: Path) -> None:
    source = read_source(path)
    assert source.read and source.how


# The matrices and artifact lists are one row per line or item: their records sit in the
# folder's sources.json (tools/fixture_sources.py). GitHub's payloads are copied from
# GitHub's documentation, not written by a tool.
FIXTURES = ROOT / "tests" / "fixtures"
WRITTEN = sorted(
    p
    for p in FIXTURES.glob("*/*")
    if p.name.endswith((".json", ".jsonl", ".jsonl.gz"))
    and p.name != "sources.json"
    and p.parent.name != "github"
)


def _sidecar_source(path: Path) -> dict[str, object] | None:
    sidecar = path.parent / "sources.json"
    if not sidecar.exists():
        return None
    files = json.loads(sidecar.read_text())["files"]
    return {"source": files[path.name]} if path.name in files else None


@pytest.mark.parametrize("path", WRITTEN, ids=[f"{p.parent.name}/{p.name}" for p in WRITTEN])
def test_every_fixture_truth_file_a_tool_wrote_names_its_source(path: Path) -> None:
    document = _sidecar_source(path)
    source = source_of(document, path.name) if document else read_source(path)
    assert (ROOT / source.tool).is_file(), f"{path.name}: {source.tool} is not in the repository"
    assert source.read


def test_a_sources_file_names_only_files_beside_it() -> None:
    for sidecar in FIXTURES.glob("*/sources.json"):
        for name in json.loads(sidecar.read_text())["files"]:
            assert (sidecar.parent / name).is_file(), f"{sidecar}: {name}"
