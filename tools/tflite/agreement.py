"""Agreement of our TFLite verdicts with real runtimes, in-sample and held-out apart.

    .venv/bin/python tools/tflite/agreement.py [--misses N] [--family NAME] [--set NAME]

For each fixture set (tests/fixtures/tflite: converter models; tests/fixtures/tflite-real:
files PyPI packages ship) and apart for its in-sample and held-out rows
(tests/tflite_truth.py says which are which): rows, how many got a null answer
(`loads` or `serves` unknown), and agreement of `loads`, `serves`, the first error's
code, and all three at once, with the runtime's observed outcome. Under a held-out
line: its first-measured figure (tests/fixtures/held_out.json), the held-out one. A set
held out in rounds (tflite-features: `held_out_after` in models.json) has a line per round.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.held_out import held_out_set  # noqa: E402
from tests.tflite_truth import Row, outcome, predicted, rows  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--misses", type=int, default=10, help="disagreements to print")
    parser.add_argument("--family", default="")
    parser.add_argument("--set", default="", help="one fixture set: tflite, tflite-real, ...")
    args = parser.parse_args()
    groups: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows():
        if args.family and row.family != args.family:
            continue
        if args.set and row.fixture_set.name != args.set:
            continue
        part = "held-out" if row.held_out else "in-sample"
        groups[(row.fixture_set.name, part, row.held_out_after or "")].append(row)
    misses: list[str] = []
    print(f"{'set':<12} {'rows':<10} {'n':>5} {'null':>5} {'loads':>6} {'serves':>6} "
          f"{'code':>6} {'all':>6}")  # fmt: skip
    for (name, part, _), members in sorted(groups.items()):
        loads = serves = code = both = null = 0
        for row in members:
            want, got = outcome(row), predicted(row)
            null += got[0] is None or got[1] is None
            loads += want[0] == got[0]
            serves += want[1] == got[1]
            code += want[2] == got[2]
            both += want == got
            if want != got:
                misses.append(f"{row.id}: real {want} predicted {got} {row.error[:160]!r}")
        n = len(members)
        print(f"{name:<12} {part:<10} {n:>5} {null:>5} {loads:>6} {serves:>6} {code:>6} {both:>6}")
        if part == "held-out":
            found = held_out_set(Path("tests/fixtures") / name, **members[0].held_out_select())
            print(f"{'':<23} {found.label() if found else 'no first-measured record'}")
    for line in misses[: args.misses]:
        print(line)
    if len(misses) > args.misses:
        print(f"... {len(misses) - args.misses} more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
