"""Every path of the repository that the README names exists (a renamed file must take
its README line along)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TOP_LEVEL = ("worker", "tests", "tools", "config", "infra", "bench", "\\.ci")
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


def test_readme_paths_are_found_in_it() -> None:
    paths = named_paths(README.read_text())
    assert {"tests/fixtures/tf-real/matrix.jsonl.gz", "worker/formats/sniff.py"} <= paths
    assert "Dockerfile" in paths and "infra/aws/tfcompat.yaml" in paths
    assert len(paths) > 40


def test_every_path_the_readme_names_exists() -> None:
    missing = sorted(p for p in named_paths(README.read_text()) if not exists(p))
    assert missing == []


def test_a_missing_path_is_caught() -> None:
    text = "see `tests/fixtures/tf-real/matrix.jsonl` and tools/nothing_here.py."
    assert sorted(p for p in named_paths(text) if not exists(p)) == [
        "tests/fixtures/tf-real/matrix.jsonl",
        "tools/nothing_here.py",
    ]
