"""The measured bounds of each kernel change, from the converter matrix.

    .venv/bin/python tools/tflite/kernel_bounds.py            # print them
    .venv/bin/python tools/tflite/kernel_bounds.py --write    # into tflite_kernels.json

For every kernel change in worker/catalog/data/tflite_kernels.json, the converter
models (tests/fixtures/tflite) and the in-sample real files (tests/fixtures/tflite-real,
never the held-out ones) whose operators show its feature, and per runtime
family the rows of those models that got far enough to tell: a runtime lacks the
change where such a model fails to prepare (`prepare-fails`), fails to invoke that op
(`invoke-fails`) or runs and answers wrong (`wrong-values`), and has it where it runs
right. `lacks_through` is the
newest runtime that lacks it and `from` the oldest that has it above every one
that lacks it; a family with a runtime that has it below one that lacks it is
refused (the measurements contradict a single change). Rows where the model failed
for another reason (an op the runtime lacks) say nothing and are skipped. Only the
TensorFlow and tflite-runtime rows are used: LiteRT's bounds come from its history
(every LiteRT release was built from TensorFlow sources after 2.16) and its rows
stay held out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections import defaultdict
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.tflite_truth import CONVERTED, REAL, Row, artifact, rows  # noqa: E402
from worker.catalog.tflite import DATA, KERNELS_FILE  # noqa: E402
from worker.compat.tflite import has_feature  # noqa: E402

FROM_ROWS = ("tensorflow", "tflite-runtime")


def shows(row: Row, change: dict[str, str]) -> bool:
    model = artifact(row.fixture_set, row.model).tflite
    assert model is not None
    return any(
        model.operator_codes[k.opcode_index].name == change["op"]
        and has_feature(k, change["feature"])
        for k in model.operator_kinds
    )


def verdict(row: Row, change: dict[str, str]) -> bool | None:
    """True: the runtime has the change; False: it lacks it; None: the row cannot tell."""
    if change["without"] == "invoke-fails":
        if row.stage == "allocated" and f"({change['op']}) failed to invoke" in row.error:
            return False
        return True if row.stage == "invoked" and row.matches is not False else None
    if change["without"] == "prepare-fails":
        if row.stage == "built" and f"({change['op']})" in row.error and "prepare" in row.error:
            return False
        return True if row.stage == "invoked" and row.matches is not False else None
    if row.stage != "invoked":
        return None
    return row.matches is not False


def bounds(change: dict[str, str]) -> dict[str, dict[str, str | None]]:
    seen: dict[str, dict[str, set[bool]]] = defaultdict(lambda: defaultdict(set))
    for row in rows():
        if row.family not in FROM_ROWS or row.fixture_set not in (CONVERTED, REAL):
            continue
        if row.fixture_set == REAL and row.held_out:  # held-out real files tune nothing
            continue
        if not shows(row, change):
            continue
        found = verdict(row, change)
        if found is not None:
            seen[row.family][row.runtime_version].add(found)
    result: dict[str, dict[str, str | None]] = {}
    for family, versions in sorted(seen.items()):
        if any(len(v) > 1 for v in versions.values()):
            raise SystemExit(f"{change['op']} {change['feature']}: {family} rows disagree")
        lacks = sorted((Version(v) for v, s in versions.items() if s == {False}))
        has = sorted((Version(v) for v, s in versions.items() if s == {True}))
        if lacks and has and has[0] < lacks[-1]:
            raise SystemExit(f"{change['op']} {change['feature']}: {family} {has[0]} < {lacks[-1]}")
        result[family] = {
            "lacks_through": str(lacks[-1]) if lacks else None,
            "from": str(has[0]) if has else None,
        }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    path = DATA / KERNELS_FILE
    doc = json.loads(path.read_text())
    for change in doc["kernel_changes"]:
        found = bounds(change)
        print(change["op"], change["feature"], json.dumps(found))
        change["has"] = {**change["has"], **found}
    if args.write:
        doc["source"]["date"] = dt.date.today().isoformat()  # the bounds it rewrote
        path.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
