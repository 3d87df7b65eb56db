"""Agreement of our predictions with real TensorFlow, over every fixture matrix.

    .venv/bin/python tools/agreement.py [--family NAME ...] [--producer tfX.Y ...] [--misses N]

Prints, for the in-sample rows and apart for each held-out set (artifacts built to
test rules after those rules were committed: `held_out_after` in artifacts.json;
tests/fixtures/held_out.json gives each set's first-measured figure, the held-out one,
and the commits that tuned on it, after which its rows are in-sample),
rows, loads / serves / first-error-code agreement (code: over the rows where
TensorFlow failed to load or to run), and the precision of `at-risk`: the share of
at-risk cells where real TensorFlow failed to load or serve, or returned other
outputs than the producer's own load of the same model (on the matrix's input, or on
an input chosen to exercise the hazard: tests/fixtures/tf-real/hazard_probes.jsonl).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.truth import (  # noqa: E402
    FIXTURE_SETS,
    Row,
    expected_codes,
    hazard_confirmed,
    matrix_path,
    predict,
    rows,
    sample_label,
)


def outputs_by_row() -> dict[tuple[str, str, str, str], object]:
    found: dict[tuple[str, str, str, str], object] = {}
    for fixture_set in FIXTURE_SETS:
        path = matrix_path(fixture_set)
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode()
        for line in text.splitlines():
            if line.strip():
                r = json.loads(line)
                if r.get("outputs") is not None:
                    key = (str(fixture_set), r["consumer_tf_version"], r["artifact"], r["loader"])
                    found[key] = r["outputs"]
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", action="append", default=[], help="artifact name filter")
    parser.add_argument("--producer", action="append", default=[], help="e.g. tf2.18")
    parser.add_argument("--misses", type=int, default=10, help="misses to print")
    args = parser.parse_args()
    selected = [
        r
        for r in rows()
        if (not args.family or r.artifact.split("/", 1)[1] in args.family)
        and (not args.producer or r.artifact.split("/", 1)[0] in args.producer)
    ]
    outputs = outputs_by_row()
    groups: dict[str, list[Row]] = {}
    for row in selected:
        groups.setdefault(sample_label(row), []).append(row)
    for label in sorted(groups, key=lambda g: (g.startswith("held-out"), g)):
        print(f"== {label}")
        report(groups[label], outputs, args.misses)
    return 0


def report(
    selected: list[Row], outputs: dict[tuple[str, str, str, str], object], shown: int
) -> None:
    loads_ok = serves_ok = code_ok = code_rows = 0
    misses: list[str] = []
    at_risk = confirmed = security = 0
    risky: Counter[str] = Counter()
    for row in selected:
        p = predict(row)
        loads_ok += p.loads == row.ok
        serves_ok += p.serves == row.serves
        if not row.serves:
            code_rows += 1
            codes = expected_codes(row)
            hit = codes is not None and p.code in codes
            code_ok += hit
            if not hit:
                misses.append(
                    f"code {p.code} vs {sorted(codes or [])}: {row.id} {row.failure[:120]!r}"
                )
        if p.loads != row.ok or p.serves != row.serves:
            misses.append(
                f"loads {p.loads}/{row.ok} serves {p.serves}/{row.serves}: {row.id} "
                f"{row.failure[:120]!r} ours {p.reasons[:2]}"
            )
        if (
            "at-risk" in p.statuses
            and p.warnings
            and all(w.startswith("unsafe.") for w in p.warnings)
        ):
            security += 1  # flagged by what the graph holds: the op is the evidence
            continue
        if "at-risk" in p.statuses and p.serves:
            at_risk += 1
            own = outputs.get(
                (str(row.fixture_set), _producer_version(row), row.artifact, row.loader)
            )
            mine = outputs.get(
                (str(row.fixture_set), row.consumer_version, row.artifact, row.loader)
            )
            differs = own is not None and mine is not None and own != mine
            probed = hazard_confirmed(row.artifact, row.consumer_version, row.loader)
            if not row.serves or differs or probed:
                confirmed += 1
            state = (
                "confirmed"
                if not row.serves or differs
                else "confirmed by a probe (hazard_probes.jsonl)"
                if probed
                else ("not confirmed" if mine is not None or probed is False else "no outputs")
            )
            risky[f"{row.artifact.split('/')[1]} {sorted(set(p.warnings))} ({state})"] += 1
        elif "at-risk" in p.statuses:
            at_risk += 1
            confirmed += not row.serves
            risky[f"{row.artifact.split('/')[1]} (predicted to fail too)"] += 1
    n = len(selected)
    print(f"rows {n}")
    print(f"loads agreement  {loads_ok}/{n} ({100 * loads_ok / n:.2f}%)")
    print(f"serves agreement {serves_ok}/{n} ({100 * serves_ok / n:.2f}%)")
    if code_rows:
        share = 100 * code_ok / code_rows
        print(f"code agreement   {code_ok}/{code_rows} failing rows ({share:.2f}%)")
    print(
        f"at-risk cells {at_risk}; real TF failed or returned other outputs in {confirmed}"
        + (f" (precision {100 * confirmed / at_risk:.1f}%)" if at_risk else "")
    )
    if security:
        print(f"security hazards (unsafe.*, the op in the graph is the evidence): {security}")
    for name, count in risky.most_common():
        print(f"  at-risk {count:5} {name}")
    for miss in misses[:shown]:
        print("  miss:", miss)


_CONSUMERS: dict[str, str] = {}


def _producer_version(row: Row) -> str:
    """The producer's own release as a consumer of its model (its `consumer_tf_version`)."""
    if not _CONSUMERS:
        for fixture_set in FIXTURE_SETS:
            doc = (
                json.loads((fixture_set / "consumers.json").read_text())
                if (fixture_set / "consumers.json").exists()
                else {}
            )
            items = doc.items() if isinstance(doc, dict) else []
            for key, value in items:
                version = value.get("tf_version") if isinstance(value, dict) else None
                if version:
                    _CONSUMERS[key] = version
    return _CONSUMERS.get(row.artifact.split("/")[0], "")


if __name__ == "__main__":
    raise SystemExit(main())
