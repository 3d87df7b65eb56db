"""Fixed copies agree with what real TensorFlow did with them (tools/fixtures/verify_fixes.py).

The matrix holds a row per (consumer, copy, loader) for every copy `tfcompat fix`
wrote for a failing fixture, loaded and run by the consumer's real TensorFlow;
`fixes.json` says, per (artifact, consumer), whether a copy was written and
verified (same outputs as the original in the producer's release) or why not.
The copies are not stored: each is rebuilt here by the same code, then checked.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.truth import LOADERS, OWN
from worker.catalog.catalog import load_catalog
from worker.cli.fix import _consumers
from worker.compat.check import check_artifact
from worker.fix.local import build_copy, write_copy
from worker.fix.plan import serves
from worker.formats.read import read_path

FIXES = OWN / "fixes.json"


def fixed_rows() -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    text = gzip.decompress((OWN / "matrix.jsonl.gz").read_bytes()).decode()
    for line in text.splitlines():
        row = json.loads(line)
        if "fix" in row:
            rows[row["artifact"]].append(row)
    return dict(sorted(rows.items()))


ROWS = fixed_rows()
SUMMARY: dict[str, dict[str, Any]] = json.loads(FIXES.read_text()) if FIXES.exists() else {}


@cache
def artifacts_doc() -> dict[str, dict[str, Any]]:
    return {a["id"]: a for a in json.loads((OWN / "artifacts.json").read_text())}


def test_every_written_copy_was_loaded_by_real_tensorflow() -> None:
    assert SUMMARY, "fixes.json is missing: run tools/fixtures/verify_fixes.py"
    fixed = {k for k, v in SUMMARY.items() if v["state"] == "fixed"}
    assert fixed == set(ROWS)


def test_verified_copies_returned_the_originals_outputs() -> None:
    for key, entry in SUMMARY.items():
        if not entry.get("verified"):
            continue
        for row in ROWS[key]:
            if row["loader"] in entry["failing_loaders"]:
                assert row["ok"] and row.get("ran"), (key, row["loader"])
                assert row["fix"]["outputs_equal"], (key, row["loader"])


@pytest.mark.parametrize("key", list(ROWS))
def test_the_rebuilt_copy_gets_the_verdicts_real_tensorflow_gave(key: str, tmp_path: Path) -> None:
    rows = ROWS[key]
    fix = rows[0]["fix"]
    entry = artifacts_doc()[fix["of"]]
    model = OWN / entry["load_path"]
    if entry["format"] == "savedmodel" and not model.is_dir():
        model = model.parent
    catalog = load_catalog()
    copy, is_dir = build_copy(str(model), _consumers(fix["for"]), catalog)
    if not copy.writable:
        # `fix` writes only a copy every named consumer serves. It refuses one the
        # checks see failing at the first request; real TensorFlow must agree: the
        # copy it was given loaded, but no request ran.
        assert not any(row.get("ran") for row in rows), key
        return
    out = tmp_path / (model.name if not is_dir else "copy")
    write_copy(copy, str(out), is_dir, force=False)
    assert sorted({f"{d.op}.{d.attr}" for p in copy.plans for d in p.drops}) == fix["rewrites"]
    for row in rows:
        consumer = catalog.consumer(row["consumer_tf_version"], LOADERS[row["loader"]])
        verdicts = [check_artifact(a, consumer, catalog) for a in read_path(str(out))]
        loads = all(v.loads for v in verdicts)
        assert loads == row["ok"], (row["loader"], row.get("error"))
        if row["loader"] in SUMMARY[key]["failing_loaders"] and row.get("ran"):
            assert all(serves(v) for v in verdicts), row["loader"]
