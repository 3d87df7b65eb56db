"""Where each shipped table of facts came from: the `source` record of a data file.

Every data file the package ships (`worker/catalog/data`, `worker/fleet/data`) was
written by a tool from real releases, and says so in a `source` record (written by
`tools/provenance.py`): the tool, what it ran, the releases, wheels or files it read,
and the day it wrote the file. The record sits where each loader skips it: a top-level
key of a JSON or YAML document, the header line of `registries.jsonl`. A file without
one is a table nobody can rebuild or audit; `tests/catalog/test_sources.py` fails on it.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CATALOG_DATA = Path(__file__).resolve().parent / "data"
FLEET_DATA = Path(__file__).resolve().parent.parent / "fleet" / "data"


@dataclass(frozen=True)
class Source:
    tool: str  # repository-relative path of the tool that wrote the file
    how: str
    read: tuple[str, ...]  # releases, wheels or files, as the tool named them
    date: dt.date


def source_of(document: dict[str, Any], where: str) -> Source:
    """The `source` record of a parsed data document; ValueError saying what is missing."""
    record = document.get("source")
    if not isinstance(record, dict):
        raise ValueError(f"{where}: no source record (tool, how, read, date)")
    missing = [k for k in ("tool", "how", "read", "date") if not record.get(k)]
    if missing:
        raise ValueError(f"{where}: source record lacks {', '.join(missing)}")
    read = record["read"]
    if not isinstance(read, list) or not all(isinstance(r, str) and r for r in read):
        raise ValueError(f"{where}: source read must be a list of names")
    try:
        date = dt.date.fromisoformat(str(record["date"]))
    except ValueError:
        raise ValueError(f"{where}: source date {record['date']!r} is not YYYY-MM-DD") from None
    return Source(str(record["tool"]), str(record["how"]), tuple(read), date)


def read_source(path: Path) -> Source:
    """The record of one shipped data file, whatever its format."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    if path.suffix in (".yaml", ".yml"):
        import yaml  # here: the catalog's loaders read JSON only, and start fast

        document = yaml.safe_load(raw)
    elif path.name.endswith(".jsonl"):
        document = json.loads(raw.split(b"\n", 1)[0])  # the header line
    else:
        document = json.loads(raw)
    if not isinstance(document, dict):
        raise ValueError(f"{path.name}: not a document with a source record")
    return source_of(document, path.name)


def shipped_data_files() -> list[Path]:
    """Every data file the package ships, in a stable order."""
    return sorted(p for d in (CATALOG_DATA, FLEET_DATA) for p in d.iterdir() if p.is_file())
