"""docs/verdicts/known-misses.md is what tools/known_misses.py prints: every known miss of
every fixture set with truth, and where each is xfailed. Rewrite it with
`.venv/bin/python tools/known_misses.py --write`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_known_misses_page_is_current() -> None:
    spec = importlib.util.spec_from_file_location("known_misses", ROOT / "tools/known_misses.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = tool  # its dataclasses look their module up
    spec.loader.exec_module(tool)
    assert tool.PAGE.read_text() == tool.render(), (
        "stale: run .venv/bin/python tools/known_misses.py --write"
    )


def test_no_false_yes_is_outside_a_strict_xfail() -> None:
    page = (ROOT / "docs" / "verdicts" / "known-misses.md").read_text()
    assert "**0 outside**" in page and "**in no xfail**" not in page
