"""Run tools/kernels/probe.py in each release and keep its raw lines under .cache/.

A release's lines live in `<cache>/<release>-<probe digest>.jsonl`: a change of the
probe starts afresh, a re-run only does what is missing. The probe writes
{"start": op} before each op, so an op that kills the process (a kernel's CHECK, the
address-space limit) or hangs (no line for TIMEOUT seconds) is recorded as
{"op", "crashed": true} and the probe restarted past it: one op never loses the
release. Standard library only.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

PROBE = Path(__file__).with_name("probe.py")
STRUCTURED = Path(__file__).with_name("structured.py")
MIXED = Path(__file__).with_name("mixed.py")
TIMEOUT = 300.0
MAX_RESTARTS = 300


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


def ready_envs(envs: Path, only: set[str] | None = None) -> list[tuple[str, Path]]:
    """(release, its python) for every venv whose READY marker is written."""
    found = []
    for ready in envs.glob("*/READY"):
        release = ready.parent.name
        if only and release not in only:
            continue
        found.append((release, Path(ready.read_text().strip().splitlines()[0].strip())))
    return sorted(found, key=lambda r: version_key(r[0]))


def probe_digest(script: Path = PROBE) -> str:
    """The script's code, formatting aside: a reformat keeps the cache, a change does not.
    The structured builders' cache also follows the probe they import."""
    texts = [script.read_text()] + ([PROBE.read_text()] if script != PROBE else [])
    tree = "".join(ast.dump(ast.parse(t)) for t in texts)
    return hashlib.sha256(tree.encode()).hexdigest()[:12]


def cache_path(cache: Path, release: str, script: Path = PROBE, only: str = "") -> Path:
    """`<release>-[<script>-]<digest>[-only<ops digest>].jsonl`: a run of some ops only
    (`only`, comma-separated) is cached apart from the whole sweep."""
    kind = "" if script == PROBE else f"{script.stem}-"
    part = ""
    if only:
        names = ",".join(sorted(set(filter(None, only.split(",")))))
        part = "-only" + hashlib.sha256(names.encode()).hexdigest()[:8]
    return cache / f"{release}-{kind}{probe_digest(script)}{part}.jsonl"


def read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for text in path.read_text().splitlines():
        with contextlib.suppress(ValueError):  # a line cut short by a crash
            lines.append(json.loads(text))
    return lines


def is_complete(path: Path) -> bool:
    return any(line.get("done") for line in read_lines(path))


def _run_once(command: list[str], out: Path) -> None:
    """One probe process appending to `out`, killed when it writes nothing for TIMEOUT."""
    with out.open("a") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.DEVNULL, start_new_session=True
        )
        last_size, last_change = out.stat().st_size, time.monotonic()
        while process.poll() is None:
            time.sleep(2.0)
            size = out.stat().st_size
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > TIMEOUT:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def probe_release(
    python: Path, out: Path, only: str = "", script: Path = PROBE
) -> list[dict[str, Any]]:
    """The release's op lines, restarted past any op that crashes or hangs the probe."""
    lines = read_lines(out)
    for _ in range(MAX_RESTARTS):
        if any(line.get("done") for line in lines):
            break
        finished = {line["op"] for line in lines if "op" in line}
        crashed = [
            line["start"] for line in lines if "start" in line and line["start"] not in finished
        ]
        with out.open("a") as sink:
            for op in crashed:
                sink.write(json.dumps({"op": op, "crashed": True}) + "\n")
        command = [
            "nice",
            "-n",
            "19",
            str(python),
            str(script),
            "--skip",
            ",".join(sorted(finished | set(crashed))),
        ]
        if only:
            command += ["--only", only]
        _run_once(command, out)
        lines = read_lines(out)
    return [line for line in lines if "op" in line]
