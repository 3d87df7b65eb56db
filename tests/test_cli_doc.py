"""The command-line reference page (docs/reference/cli.md) is generated from the parser by
tools/cli_doc.py: the committed page must be what the parser gives, so a new command or
option cannot ship undocumented."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from worker.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent


def cli_doc() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_doc", ROOT / "tools" / "cli_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_cli_page_is_what_the_parser_gives() -> None:
    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert page == cli_doc().page(), "stale: run python tools/cli_doc.py --write"


def test_every_command_and_option_is_on_the_page() -> None:
    page = cli_doc().page()
    for heading in (
        "## `tfcompat check`",
        "## `tfcompat fleet impact`",
        "## `tfcompat index rebuild`",
    ):
        assert heading in page
    assert "| `--consumer SPEC` |" in page and "| `--jobs N` |" in page
    assert "| `--format {text,json,sarif,junit}` |" in page


def test_a_new_option_makes_the_page_stale() -> None:
    doc = cli_doc()
    grown = build_parser()
    sub = next(a for a in grown._actions if isinstance(a, argparse._SubParsersAction))
    sub.choices["check"].add_argument("--new-knob", metavar="K", help="a knob added later")
    page = doc.page(grown)
    assert "| `--new-knob K` | a knob added later |" in page
    assert page != doc.page()


def test_a_new_subcommand_gets_its_section() -> None:
    doc = cli_doc()
    grown = build_parser()
    sub = next(a for a in grown._actions if isinstance(a, argparse._SubParsersAction))
    sub.add_parser("frobnicate", help="frobnicate the index")
    assert "## `tfcompat frobnicate`\n\nFrobnicate the index." in doc.page(grown)


def test_the_check_mode_fails_on_a_stale_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = cli_doc()
    stale = tmp_path / "cli.md"
    stale.write_text("# old\n")
    monkeypatch.setattr(doc, "PAGE", stale)
    monkeypatch.setattr(doc, "ROOT", tmp_path)
    assert doc.main(["--check"]) == 1
    assert doc.main(["--write"]) == 0
    assert doc.main(["--check"]) == 0
