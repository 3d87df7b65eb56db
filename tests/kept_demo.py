"""One `make demo KEEP=1` stack for the whole suite.

The demo takes about half a minute to start (its own Redis, moto, MLflow, a worker,
the SQS bridge and the receiver, then uploads and an MLflow registration). Two test
modules read what it leaves running: tests/cli/test_demo.py (its table, env.sh and a
fleet change against its index) and tests/ui/test_browser.py (the fleet page). Neither
changes it, so they share one stack: the session fixture `kept_demo` (tests/conftest.py)
starts it at first use and stops it at the end, where the stop itself is checked.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from worker.cli.demo_stack import alive

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if not k.startswith("TFCOMPAT_")}
STACK = ("redis", "moto", "mlflow", "worker", "sqs-bridge", "receiver")


def demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m worker.cli.demo ARGS`, as `make demo` runs it, outside any test settings."""
    return subprocess.run(
        [sys.executable, "-m", "worker.cli.demo", *args],
        capture_output=True,
        text=True,
        env=env or ENV,
        cwd=ROOT,
        timeout=600,
    )


def exported(env_sh: Path) -> dict[str, str]:
    """The variables the kept demo's env.sh exports (PATH aside), unquoted."""
    found = {}
    for line in env_sh.read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        if name != "PATH":
            found[name] = shlex.split(value)[0]
    return found


@dataclass(frozen=True)
class KeptDemo:
    state: Path
    stdout: str  # what `make demo KEEP=1` printed
    env: dict[str, str]  # what its env.sh exports
    record: dict[str, dict[str, str]]  # stack.json: each process's pid and start time


def kept_demo_stack(state: Path) -> Iterator[KeptDemo]:
    """Start the demo with --keep, yield it, then stop it and check that every process
    it recorded has ended."""
    record: dict[str, dict[str, str]] = {}
    try:
        result = demo("--keep", "--state", str(state))
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        record = json.loads((state / "stack.json").read_text())
        yield KeptDemo(state, result.stdout, exported(state / "env.sh"), record)
    finally:
        stopped = demo("--stop", "--state", str(state))
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith("stopped " + ", ".join(STACK)), stopped.stdout
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(
        alive(p["pid"], p["started"]) for p in record.values()
    ):
        time.sleep(0.1)
    assert not any(alive(p["pid"], p["started"]) for p in record.values())
