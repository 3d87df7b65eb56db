#!/usr/bin/env python3
"""Precision and recall of `at-risk` on models real TensorFlow made and ran.

    .venv/bin/python tools/attrs/precision.py [DIR] [--json] [--exact] [--feed N]
                                          [--reference RELEASE]

DIR (default tests/fixtures/attrs-heldout) holds models made by tools/attrs/models.py
and the outcomes tools/attrs/outcomes.py recorded in every release. For each (model,
release) the release imported and served, the truth is whether it answered what the
producer release answered on every feed (numbers within 1e-6 relative count as the
same answer, as tools/attrs/kernels.py counts rounding; `--exact` counts every bit;
`--ulps N` counts float values within N ULPs of the output's dtype, the kernel
table's own measure: 1e-6 is less than one ULP of a half and billions of a double);
the prediction is `tfcompat check`'s status
for that release with the graph-import loader. Over those cells:
- precision: of the cells predicted `at-risk`, how many really answered otherwise;
- recall: of the cells that really answered otherwise, how many were `at-risk`.
Cells where the release refused the graph are counted apart (predicted
`incompatible` or not), since at-risk is a claim about models that load and answer:
so are cells where it imported the graph and then raised on every feed (HSVToRGB
half in 2.4 to 2.8: no kernel for the dtype, which `kernel.missing` says).
"Any warning" scores at-risk and `kernel.results-extremes` together as the
prediction that the release answers otherwise on some input; printed beside at-risk
on every feed and, where every case has two feeds or more, at-risk on the first
(ordinary) feed alone, which is what at-risk claims for the kernel held-out sets.
`--reference RELEASE` takes that release's answers as the truth's reference instead
of each case's producer's (cases made by several producers, scored against the
newest release the kernel table compares with). `--feed N` judges the truth on the
Nth feed alone (`--feed 0,2` on any of those): the kernel held-out cases
(tests/fixtures/kernels-heldout) feed ordinary values first and edge values second,
and from kernels-heldout-4 on integer values -10..100 third (the sweep's `indices`
class, which the table counts as ordinary), so `--feed 0` (`--feed 0,2` from
kernels-heldout-4 on) asks whether at-risk finds the changes met on ordinary inputs,
which is what it claims since changes met only on extreme inputs are information
(`kernel.results-extremes`, counted per cell as `extremes_info`).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "tools" / "kernels"))

import compare  # noqa: E402  (tools/kernels/compare.py: ULPs of a dtype)

from worker.catalog.catalog import load_catalog  # noqa: E402
from worker.compat.check import check_artifact  # noqa: E402
from worker.formats.read import read_path  # noqa: E402
from worker.model.consumer import Loader  # noqa: E402
from worker.model.verdict import Status  # noqa: E402

DEFAULT = REPO / "tests" / "fixtures" / "attrs-heldout"


ROUNDING = 1e-6  # relative: what tools/attrs/kernels.py calls rounding, not a change


def _within_ulps(a: dict[str, Any], b: dict[str, Any], ulps: float) -> bool:
    """One output against another: the same dtype and shape, float values within `ulps`
    ULPs of the output's dtype (tools/kernels/compare.py, the table's measure), others
    equal."""
    if a.get("dtype") != b.get("dtype") or a.get("shape") != b.get("shape"):
        return False
    x, y = a.get("values") or [], b.get("values") or []
    if len(x) != len(y):
        return False
    if a["dtype"] not in compare.EPSILON:
        return bool(x == y)
    return all(u == v or compare.ulps(u, v, a["dtype"]) <= ulps for u, v in zip(x, y, strict=True))


def _close(a: Any, b: Any, ulps: float | None = None) -> bool:
    """Equal, or numbers within ROUNDING of each other (NaN equals NaN), recursively;
    with `ulps`, an output's float values within that many ULPs of its dtype instead."""
    if ulps is not None and isinstance(a, dict) and isinstance(b, dict) and "values" in a:
        return _within_ulps(a, b, ulps)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, ulps) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], ulps) for k in a)
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    if math.isnan(x) and math.isnan(y):
        return True
    if math.isinf(x) or math.isinf(y) or math.isnan(x) or math.isnan(y):
        return False
    return abs(x - y) <= ROUNDING * max(1.0, abs(x), abs(y))


def _differs(
    real: dict[str, Any],
    producer: dict[str, Any],
    rounding: bool,
    feed: int | tuple[int, ...] | None,
    ulps: float | None = None,
) -> bool:
    """Whether the release answered otherwise than the producer (on `feed` alone if
    given; on any of several feeds if given a tuple)."""
    if isinstance(feed, tuple):
        return any(_differs(real, producer, rounding, f, ulps) for f in feed)
    if feed is None:
        differs = not real["same"]
        if rounding and differs and real["loads"]:
            differs = not _close(real.get("outputs"), producer.get("outputs"), ulps)
        return bool(differs)
    mine, theirs = (real.get("outputs") or []), (producer.get("outputs") or [])
    if not real["loads"] or feed >= len(theirs):
        return not real["same"]
    if feed >= len(mine):
        return True
    if rounding:
        return not _close(mine[feed], theirs[feed], ulps)
    return bool(mine[feed] != theirs[feed])


def cells(
    root: Path,
    rounding: bool,
    feed: int | tuple[int, ...] | None = None,
    reference: str | None = None,
    ulps: float | None = None,
) -> list[dict[str, Any]]:
    catalog = load_catalog()
    found = []
    for path in sorted(root.glob("*/outcomes.json")):
        doc = json.loads(path.read_text())
        (artifact,) = read_path(str(path.parent / "frozen_graph.pb"))
        producer = doc["releases"][doc["producer"]]
        if reference is not None and reference != doc["producer"]:
            # the answer of another release is the truth's reference: compare outputs
            producer = doc["releases"][reference]
            for real in doc["releases"].values():
                real["same"] = bool(real["loads"]) and real.get("outputs") == producer.get(
                    "outputs"
                )
        for release, real in sorted(doc["releases"].items()):
            differs = _differs(real, producer, rounding, feed, ulps)
            feeds = real.get("outputs") or []
            answers = bool(real["loads"]) and (
                not feeds or any(not isinstance(f, dict) or "error" not in f for f in feeds)
            )
            consumer = catalog.consumer(release, Loader.GRAPH_IMPORT)
            verdict = check_artifact(artifact, consumer, catalog)
            found.append(
                {
                    "case": doc["case"],
                    "release": release,
                    "loads": bool(real["loads"]),
                    "answers": answers,
                    "feeds": len(feeds),
                    "differs": differs,
                    "status": str(verdict.status),
                    "warnings": sorted(
                        {str(f.code) for f in verdict.findings if f.severity == "warning"}
                    ),
                    "extremes_info": any(
                        str(f.code) == "kernel.results-extremes" for f in verdict.findings
                    ),
                }
            )
    return found


def _warned(cell: dict[str, Any]) -> bool:
    return cell["status"] == Status.AT_RISK or bool(cell["extremes_info"])


def score(found: list[dict[str, Any]]) -> dict[str, Any]:
    """At-risk against the truth over the cells the release served (imported and answered
    on some feed), and "any warning" (at-risk or kernel.results-extremes) likewise."""
    served = [c for c in found if c.get("answers", c["loads"])]
    tp = sum(c["status"] == Status.AT_RISK and c["differs"] for c in served)
    fp = sum(c["status"] == Status.AT_RISK and not c["differs"] for c in served)
    fn = sum(c["status"] != Status.AT_RISK and c["differs"] for c in served)
    tn = sum(c["status"] != Status.AT_RISK and not c["differs"] for c in served)
    wtp = sum(_warned(c) and c["differs"] for c in served)
    wfp = sum(_warned(c) and not c["differs"] for c in served)
    wfn = sum(not _warned(c) and c["differs"] for c in served)
    refused = [c for c in found if not c.get("answers", c["loads"])]
    return {
        "any_warning": {
            "true_positive": wtp,
            "false_positive": wfp,
            "false_negative": wfn,
            "precision": round(wtp / (wtp + wfp), 3) if wtp + wfp else None,
            "recall": round(wtp / (wtp + wfn), 3) if wtp + wfn else None,
        },
        "refused_at_run": sum(c["loads"] for c in refused),
        "cells": len(found),
        "served": len(served),
        "true_positive": tp,
        "false_positive": fp,
        "false_negative": fn,
        "true_negative": tn,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "extremes_info": sum(c["extremes_info"] for c in served),
        "extremes_info_differs": sum(c["extremes_info"] and c["differs"] for c in served),
        "refused": len(refused),
        "refused_predicted_incompatible": sum(c["status"] == Status.INCOMPATIBLE for c in refused),
        "misses": [
            f"{c['case']}@{c['release']}: {c['status']}, differs={c['differs']}"
            for c in served
            if (c["status"] == Status.AT_RISK) != c["differs"]
        ],
    }


def _figures(found: dict[str, Any]) -> str:
    tp, fp, fn = found["true_positive"], found["false_positive"], found["false_negative"]
    return (
        f"precision {found['precision']} ({tp}/{tp + fp}), recall {found['recall']} "
        f"({tp}/{tp + fn})"
    )


def _feeds(text: str) -> int | tuple[int, ...]:
    """`--feed`'s value: one feed's number, or several separated by commas."""
    found = tuple(int(t) for t in text.split(",") if t.strip())
    if not found:
        raise argparse.ArgumentTypeError("give a feed's number, or several as 0,2")
    return found[0] if len(found) == 1 else found


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("root", type=Path, nargs="?", default=DEFAULT)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--exact",
        action="store_true",
        help="count last-bit differences as differing (default: within 1e-6 relative is same)",
    )
    parser.add_argument(
        "--ulps",
        type=float,
        default=None,
        help="count float values within this many ULPs of the output's dtype as the same "
        "answer instead of 1e-6 (4: the kernel table's tolerance)",
    )
    parser.add_argument(
        "--feed",
        type=_feeds,
        default=None,
        help="judge the truth on this feed alone, or on any of several (0,2) "
        "(kernels-heldout: 0 ordinary, 1 edge values; from kernels-heldout-4: 2 integers)",
    )
    parser.add_argument(
        "--reference",
        default=None,
        help="the release whose answers are the truth's reference (default: each case's "
        "producer); the kernel table compares every release with the newest",
    )
    args = parser.parse_args()
    rounding, ulps = not args.exact, args.ulps
    every = cells(args.root, rounding, feed=args.feed, reference=args.reference, ulps=ulps)
    found = score(every)
    ordinary = None
    if args.feed is None and every and min(c["feeds"] for c in every if c["loads"]) >= 2:
        ordinary = score(cells(args.root, rounding, feed=0, reference=args.reference, ulps=ulps))
        found["ordinary_feed"] = {k: v for k, v in ordinary.items() if k != "misses"}
    if args.json:
        json.dump(found, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    print(
        f"{found['cells']} cells ({found['served']} served, {found['refused']} refused: "
        f"{found['refused_predicted_incompatible']} predicted incompatible; "
        f"{found['refused_at_run']} of them imported the graph and raised on every feed)"
    )
    on = (
        "every feed"
        if args.feed is None
        else f"feeds {','.join(map(str, args.feed))}"
        if isinstance(args.feed, tuple)
        else f"feed {args.feed}"
    )
    print(f"at-risk vs the truth on {on}: {_figures(found)}")
    if ordinary is not None:
        print(f"at-risk vs the truth on the ordinary feed (feed 0): {_figures(ordinary)}")
    print(
        f"any warning (at-risk or kernel.results-extremes) vs the truth on {on}: "
        f"{_figures(found['any_warning'])}"
    )
    if found["extremes_info"]:
        print(
            f"kernel.results-extremes (information) on {found['extremes_info']} served cells, "
            f"{found['extremes_info_differs']} of them answering otherwise"
        )
    for miss in found["misses"]:
        print(f"  miss: {miss}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
