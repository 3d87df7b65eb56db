"""The repository stands alone: nothing committed reads or cites a path outside it.

A fresh clone is all a new user has, so a fixture, a tool's default or a document
that points beside the clone (a sibling folder, a machine path, `ROOT.parent / ...`)
works on one machine and fails everywhere else. The scan covers every committed
text file; each exception below is named, with its reason.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]

# Written to or cited as if beside the clone, or a machine's own folders.
OUTSIDE = re.compile(r"\.\./shared|shared/fixtures|/work/")
# Relative paths with `..` steps: checked against the file's own depth.
CLIMB = re.compile(r"(?<![\w.])(?:\.\./)+[\w.-]*")
# Python climbing above the repository: `ROOT.parent`, `parents[N]` past the root.
ROOT_PARENT = re.compile(r"\bROOT\.parent\b|\bREPO\.parent\b")
PARENTS = re.compile(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d+)\](\.parent\b)?")

# Files that quote a machine's paths because real TensorFlow printed them: the
# recorded truth is kept verbatim (a test compares against it), so `/work/` there is
# a quoted message, never a path anything reads.
RECORDED = (
    "tests/fixtures/keras/matrix.jsonl",
    "tests/fixtures/tflite/models.json",
    "tests/fixtures/unsafe/tflite2.15/cases.json",
    "tests/fixtures/unsafe/tflite2.21/cases.json",
    "worker/catalog/data/attr_effects.json",
)
PENDING_REWRITE: tuple[str, ...] = ()


def committed_text_files() -> list[str]:
    """Every committed or staged file, minus the binary ones (git's own judgement)."""
    out = subprocess.run(
        ["git", "grep", "-I", "-l", "--cached", "-e", ""],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(out.split())


def climbs_out(file: str, text: str) -> bool:
    """A `../` path in `text` that, taken from `file`'s folder, ends above the root."""
    depth = len(PurePosixPath(file).parts) - 1
    return any(match.group(0).count("../") > depth for match in CLIMB.finditer(text))


def python_climbs_out(file: str, text: str) -> bool:
    """`ROOT.parent`, or `Path(__file__).resolve().parents[N]` past the root."""
    if ROOT_PARENT.search(text):
        return True
    depth = len(PurePosixPath(file).parts) - 1  # parents[depth] is the root
    for match in PARENTS.finditer(text):
        steps = int(match.group(1)) + (1 if match.group(2) else 0)
        if steps > depth:
            return True
    return False


def outside_references(file: str, text: str) -> list[str]:
    found = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        hit = OUTSIDE.search(line)
        if hit and not (file in RECORDED and hit.group(0) == "/work/"):
            found.append(f"{file}:{line_number}: {hit.group(0)}")
        elif climbs_out(file, line):
            found.append(f"{file}:{line_number}: climbs above the repository")
        elif file.endswith(".py") and python_climbs_out(file, line):
            found.append(f"{file}:{line_number}: a Python path above the repository")
    return found


def test_no_committed_file_reads_or_cites_a_path_outside_the_repository() -> None:
    found = []
    for file in committed_text_files():
        if file in PENDING_REWRITE or file == "tests/test_standalone.py":
            continue
        found += outside_references(file, (ROOT / file).read_text(errors="replace"))
    assert found == []


def test_the_scan_covers_documents_settings_and_fixture_notes() -> None:
    files = committed_text_files()
    assert {"README.md", "pyproject.toml", "Makefile", "tests/fixtures/tf-real/README.md"} <= set(
        files
    )
    assert "tests/fixtures/tf-base/artifacts/tf2.21/new_op/saved_model.pb" not in files  # binary


# What the scan catches: a sibling folder, a machine path, a climb past the root.
def test_a_sibling_fixture_folder_is_caught() -> None:
    sibling = "../" + "shared"  # spelled in two pieces: this file cites no such folder
    assert outside_references("tests/x.py", f'A = ROOT / "{sibling}/fixtures/tf-real"\n')


def test_a_machine_path_is_caught() -> None:
    assert outside_references("tools/x.py", 'ENVS = Path("/work/tfenvs")\n')


def test_a_relative_path_above_the_root_is_caught() -> None:
    assert outside_references("docs/page.md", "see [it](../../elsewhere/page.md)\n")


def test_a_relative_path_inside_the_repository_passes() -> None:
    assert outside_references("docs/sub/page.md", "see [it](../../README.md)\n") == []


def test_a_python_path_above_the_root_is_caught() -> None:
    assert outside_references("tests/formats/x.py", "P = Path(__file__).resolve().parents[3]\n")
    assert outside_references("bench/x.py", 'M = ROOT.parent / "shared"\n')


def test_a_python_path_at_the_root_passes() -> None:
    assert (
        outside_references("tests/formats/x.py", "P = Path(__file__).resolve().parents[2]\n") == []
    )


def test_a_recorded_message_may_quote_a_machine_path() -> None:
    line = '{"error": "OSError: file does not exist at: /work/wt-x/model"}\n'
    assert outside_references("tests/fixtures/keras/matrix.jsonl", line) == []
    assert outside_references("tests/fixtures/keras/other.jsonl", line)
