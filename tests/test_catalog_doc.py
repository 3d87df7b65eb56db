"""The catalog pages (docs/catalog/) are generated from worker/catalog/data by
tools/catalog_doc.py, with each file's `source`: the committed pages must be what the data
files give, and a file without a source says so."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def catalog_doc() -> ModuleType:
    spec = importlib.util.spec_from_file_location("catalog_doc", ROOT / "tools" / "catalog_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_catalog_pages_are_what_the_data_files_give() -> None:
    doc = catalog_doc()
    assert doc.stale(doc.pages()) == [], "stale: run python tools/catalog_doc.py --write"


def test_every_data_file_has_a_page_in_the_index() -> None:
    doc = catalog_doc()
    index = (ROOT / "docs" / "catalog" / "index.md").read_text()
    for path in doc.data_files():
        assert f"[`{path.name}`]({doc.stem(path)}.md)" in index


def test_a_file_without_a_source_says_it_is_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"format": "facts/1", "releases": ["2.15.1", "2.21.0"]}))
    page = catalog_doc().file_page(path)
    assert "**source: not recorded**" in page
    assert "- Covers (2): 2.15.1, 2.21.0" in page


def test_a_source_record_is_shown_field_by_field(tmp_path: Path) -> None:
    path = tmp_path / "facts.json"
    source = {"tool": "tools/build_facts.py", "releases": "1.13-2.21", "measured": "2026-12-01"}
    path.write_text(json.dumps({"format": "facts/1", "source": source}))
    page = catalog_doc().file_page(path)
    assert "- tool: tools/build_facts.py\n- releases: 1.13-2.21\n- measured: 2026-12-01" in page
    assert "not recorded" not in page


def test_a_rebuilt_data_file_makes_its_page_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = catalog_doc()
    data, out = tmp_path / "data", tmp_path / "pages"
    data.mkdir()
    shutil.copy(ROOT / "worker" / "catalog" / "data" / "tflite_kernels.json", data)
    monkeypatch.setattr(doc, "DATA", data)
    monkeypatch.setattr(doc, "OUT", out)
    monkeypatch.setattr(doc, "ROOT", tmp_path)
    assert doc.main(["--write"]) == 0 and doc.main(["--check"]) == 0
    facts = json.loads((data / "tflite_kernels.json").read_text())
    facts["source"] = "tools/tflite/kernel_bounds.py"
    (data / "tflite_kernels.json").write_text(json.dumps(facts))
    assert doc.main(["--check"]) == 1
    assert doc.main(["--write"]) == 0
    assert "**Source**: tools/tflite/kernel_bounds.py" in (out / "tflite_kernels.md").read_text()


def test_a_page_of_a_removed_data_file_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = catalog_doc()
    data, out = tmp_path / "data", tmp_path / "pages"
    data.mkdir()
    out.mkdir()
    (out / "gone.md").write_text("# gone\n")
    monkeypatch.setattr(doc, "DATA", data)
    monkeypatch.setattr(doc, "OUT", out)
    assert out / "gone.md" in doc.stale(doc.pages())
