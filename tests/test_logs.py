"""Log lines from processes that share one stderr stay whole lines.

The worker's prefork children inherit the parent's stderr, and the image and the demo
run Python unbuffered: a line written in two writes (text, then its newline) lets
another process's line land in between, and a JSON reader of the log then fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

WRITER = """
import structlog
from worker.logs import configure_logging
configure_logging("INFO", "json")
log = structlog.get_logger()
for i in range(1500):
    log.info("task.done", key="k/" + "x" * 500, i=i)
"""


@pytest.mark.slow
def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    out = tmp_path / "worker.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with out.open("wb") as shared:
        writers = [
            subprocess.Popen([sys.executable, "-c", WRITER], stderr=shared, env=env, cwd=ROOT)
            for _ in range(4)
        ]
        assert [w.wait(120) for w in writers] == [0, 0, 0, 0]
    lines = out.read_text().splitlines()
    assert len(lines) == 4 * 1500
    assert all(json.loads(line)["event"] == "task.done" for line in lines)


STDLIB = """
import logging
from worker.logs import configure_logging
configure_logging("INFO", "json")
logging.getLogger("botocore.credentials").info("Found credentials in %s", "environment")
logging.getLogger("uvicorn.error").warning("Started server process")
"""


def test_standard_library_records_come_out_as_the_same_json_lines() -> None:
    done = subprocess.run(
        [sys.executable, "-c", STDLIB], capture_output=True, text=True, cwd=ROOT, check=True
    )
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(x["logger"], x["level"], x["event"]) for x in lines] == [
        ("botocore.credentials", "info", "Found credentials in environment"),
        ("uvicorn.error", "warning", "Started server process"),
    ]
    assert all("timestamp" in x for x in lines)


def test_a_command_does_not_import_rich() -> None:
    code = (
        "import sys; from worker.cli import main; main(['settings']); "
        "print('rich' in sys.modules and sys.modules['rich'] is not None)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "False"
