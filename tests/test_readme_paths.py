"""Every path of the repository that the README or a docs page names exists (a renamed file
must take its line along).
Links between docs pages are checked by `mkdocs build --strict` (make docs)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").rglob("*.md")))
TOP_LEVEL = (
    "worker",
    "tests",
    "tools",
    "config",
    "infra",
    "bench",
    "docs",
    "\\.ci",
)
FILES = ("Dockerfile", "Makefile", "pyproject\\.toml", "README\\.md")
# A path starts at a top-level folder (not inside a URL or another path) or is a
# backquoted top-level file; it ends where path characters end.
PATH = re.compile(
    rf"(?<![\w/.-])(?:(?:{'|'.join(TOP_LEVEL)})/[\w./*-]*|(?<=`)(?:{'|'.join(FILES)})(?=`))"
)


def named_paths(text: str) -> set[str]:
    return {match.rstrip(".") for match in PATH.findall(text)}


def exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path))
    return (ROOT / path).exists()


def documented_paths() -> set[str]:
    return set().union(*(named_paths(page.read_text()) for page in PAGES))


def test_readme_paths_are_found_in_it() -> None:
    paths = named_paths(README.read_text())
    assert {"docs/getting-started.md", "docs/reference/cli.md"} <= paths


def test_docs_paths_are_found_in_them() -> None:
    paths = documented_paths()
    assert {"tests/fixtures/tf-real/matrix.jsonl.gz", "worker/formats/sniff.py"} <= paths
    assert "Dockerfile" in paths and "infra/aws/tfcompat.yaml" in paths
    assert len(paths) > 40


def test_every_path_the_readme_and_docs_name_exists() -> None:
    missing = sorted(p for p in documented_paths() if not exists(p))
    assert missing == []


def test_a_missing_path_is_caught() -> None:
    text = "see `tests/fixtures/tf-real/matrix.jsonl` and tools/nothing_here.py."
    assert sorted(p for p in named_paths(text) if not exists(p)) == [
        "tests/fixtures/tf-real/matrix.jsonl",
        "tools/nothing_here.py",
    ]
