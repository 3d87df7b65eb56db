"""The first ten minutes: what the demo prints to try on a kept stack is one text, and
the getting-started page quotes it exactly; the demo's timings count from the upload."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from worker.cli import demo
from worker.cli.demo_stack import Stack

ROOT = Path(__file__).resolve().parents[2]
GETTING_STARTED = ROOT / "docs" / "getting-started.md"


def kept(state: Path) -> str:
    stack = Stack(state)
    stack.env["TFCOMPAT_UI_TOKEN"] = "t0ken"
    stack.env["TFCOMPAT_UI_PORT"] = "8124"  # the page's own listener
    return demo.next_steps(stack, "8123")


def test_the_getting_started_page_quotes_the_kept_demo_s_instructions_verbatim() -> None:
    assert demo.KEPT_INSTRUCTIONS in GETTING_STARTED.read_text()


def test_a_kept_demo_prints_its_instructions_as_they_are() -> None:
    printed = kept(demo.STATE)
    assert printed.endswith(demo.KEPT_INSTRUCTIONS.rstrip("\n"))
    assert "http://127.0.0.1:8124/ui" in printed and "t0ken" in printed
    assert "not var/demo/env.sh" not in printed


def test_a_kept_demo_elsewhere_says_where_its_settings_are(tmp_path: Path) -> None:
    printed = kept(tmp_path)
    assert f"Its settings are in {tmp_path / 'env.sh'}" in printed


class TaggedS3:
    """An object store whose objects are tagged already."""

    def get_object_tagging(self, Bucket: str, Key: str) -> dict[str, Any]:
        return {"TagSet": [{"Key": "tfcompat:status", "Value": "compatible"}]}


def test_each_model_s_wait_counts_from_the_upload(capsys: pytest.CaptureFixture[str]) -> None:
    uploaded = time.monotonic() - 12.0  # uploaded 12 s before the wait starts
    demo.wait_for_tags(TaggedS3(), [("a", "m/a.pb"), ("b", "m/b.pb")], 5, uploaded)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("     ")]
    assert len(lines) == 2
    for line in lines:
        seconds = float(line.rsplit("(tagged ", 1)[1].split("s after upload)")[0])
        assert seconds >= 12.0


def test_make_venv_says_what_it_installs_and_shows_pip_s_progress() -> None:
    import subprocess

    planned = subprocess.run(
        ["make", "-n", "-B", "venv"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    installs = [line for line in planned.splitlines() if "pip install" in line]
    assert installs and not any("--quiet" in line or " -q" in line for line in installs)
    assert "venv: installing the worker and its development tools" in planned
    assert "about 2 minutes" in planned
