"""The `source` record every data file the tools write carries (worker/catalog/sources.py
reads it back; tests/catalog/test_sources.py requires it of every shipped file).

    {"tool": "tools/attrs/measure.py",            the tool that wrote the file
     "how": "...",                                 what it ran, in one sentence
     "read": ["tensorflow-cpu==2.21.0", ...],      the releases, wheels or files it read
     "date": "2026-12-03"}                         the day it wrote the file

A rebuild writes today's date; the records already committed carry the date of the
commit that last wrote the data (`git log -1 --format=%ad --date=short -- FILE`).
Plain Python 3.7 (some tools run in old releases' environments).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from packaging.version import Version


def source_record(
    tool: str, how: str, read: Iterable[str], date: dt.date | str | None = None
) -> dict[str, Any]:
    """The record, keys sorted as every writer dumps them; `read` keeps its order."""
    day = date if isinstance(date, str) else (date or dt.date.today()).isoformat()
    read = list(read)
    if not read:
        raise ValueError(f"{tool}: a source must name what it read")
    return {"date": day, "how": how, "read": read, "tool": tool}


def cpu_wheels(versions: Iterable[str]) -> list[str]:
    """The wheels the measuring tools install for each release: tensorflow-cpu from 2.1
    (its CPU-only wheel), tensorflow before (there was no other), in version order."""
    ordered = sorted(set(versions), key=Version)
    return [
        f"tensorflow-cpu=={v}" if Version(v) >= Version("2.1") else f"tensorflow=={v}"
        for v in ordered
    ]


FIXTURE_SOURCES = "tfcompat-fixture-sources/1"


def record_fixture_source(
    path: Path, tool: str, how: str, read: Iterable[str], date: dt.date | str | None = None
) -> None:
    """Write the source record of a fixture truth file into `sources.json` beside it: a
    matrix is one row per line and an artifacts list one entry per item, so the record
    cannot sit inside them where their readers would skip it."""
    sidecar = path.parent / "sources.json"
    doc = (
        json.loads(sidecar.read_text())
        if sidecar.exists()
        else {"format": FIXTURE_SOURCES, "files": {}}
    )
    doc["files"][path.name] = source_record(tool, how, read, date)
    doc["files"] = dict(sorted(doc["files"].items()))
    sidecar.write_text(json.dumps(doc, indent=1) + "\n")


def releases_read(rows: Iterable[dict[str, Any]], *keys: str) -> list[str]:
    """The distinct values of the first of `keys` each row has (consumer releases, runtimes,
    producers), in first-seen order, for a matrix's `read`."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in keys:
            if row.get(key):
                seen.setdefault(str(row[key]), None)
                break
    return list(seen)
