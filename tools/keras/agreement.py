"""Agreement of our Keras verdicts with real Keras loads, tuned and held-out rows apart.

    .venv/bin/python tools/keras/agreement.py [-v]

Uses the same comparison as tests/compat/test_keras_agreement.py (`disagreement`);
-v lists every row that disagrees and why.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.compat.test_keras_agreement import FAMILIES, disagreement, family, rows


def main() -> None:
    verbose = "-v" in sys.argv[1:]
    for name in FAMILIES:
        picked = [r for r in rows() if family(r) == name]
        wrong = [(r, why) for r in picked if (why := disagreement(r)) is not None]
        print(f"{name:>10}: {len(picked) - len(wrong)}/{len(picked)} rows agree")
        if verbose:
            for row, why in wrong:
                print(f"          {row['consumer']} {row['model']}: {why}")


if __name__ == "__main__":
    main()
