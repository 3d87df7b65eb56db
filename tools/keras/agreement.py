"""Agreement of our Keras verdicts with real Keras loads, tuned and held-out rows apart.

    .venv/bin/python tools/keras/agreement.py [-v]

Uses the same comparison as tests/compat/test_keras_agreement.py (`disagreement`);
-v lists every row that disagrees and why. The real files PyPI packages ship
(tests/fixtures/keras-real, tests/compat/test_keras_real_agreement.py) are printed
apart, held-out and tuned files apart again, and the whole Keras 2 models loaded by
Keras 3 (tests/fixtures/keras-apps and, second round, keras-apps-2), and the Keras 2
layer and model names loaded by Keras 3 (keras-names, keras-names-2), and the Keras 2
models used as layers loaded by Keras 3 (keras-nested: loads, and the first error's
code where both fail), and Sequential H5 files with and without a declared input
(keras-unbuilt: loads, the first error's code, and the rows whose error is the 0-layers
weights mismatch). Under
each figure: whether those rows are held-out or in-sample now, and the held-out figure
as first measured (tests/fixtures/held_out.json): a family tuned on is in-sample after its tuning.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.compat.test_keras_agreement import FAMILIES, disagreement, family, rows
from tests.compat.test_keras_apps2_agreement import apps2_disagreement
from tests.compat.test_keras_apps2_agreement import rows as apps2_rows
from tests.compat.test_keras_apps_agreement import apps_disagreement
from tests.compat.test_keras_apps_agreement import rows as apps_rows
from tests.compat.test_keras_names2_agreement import names2_disagreement
from tests.compat.test_keras_names2_agreement import rows as names2_rows
from tests.compat.test_keras_names_agreement import names_disagreement
from tests.compat.test_keras_names_agreement import rows as names_rows
from tests.compat.test_keras_nested import disagreement as nested_disagreement
from tests.compat.test_keras_nested import figures as nested_figures
from tests.compat.test_keras_nested import record as nested_rows
from tests.compat.test_keras_real_agreement import held_out, real_disagreement
from tests.compat.test_keras_real_agreement import rows as real_rows
from tests.compat.test_keras_unbuilt import disagreement as unbuilt_disagreement
from tests.compat.test_keras_unbuilt import figures as unbuilt_figures
from tests.compat.test_keras_unbuilt import rows as unbuilt_rows
from tests.held_out import HeldOutSet, held_out_set

KERAS = Path("tests/fixtures/keras")
KERAS_REAL = Path("tests/fixtures/keras-real")
KERAS_APPS = Path("tests/fixtures/keras-apps")
KERAS_APPS_2 = Path("tests/fixtures/keras-apps-2")
KERAS_NAMES = Path("tests/fixtures/keras-names")
KERAS_NAMES_2 = Path("tests/fixtures/keras-names-2")
KERAS_NESTED = Path("tests/fixtures/keras-nested")
KERAS_UNBUILT = Path("tests/fixtures/keras-unbuilt")


def label(found: HeldOutSet | None) -> str:
    """The held-out set's label (tests/fixtures/held_out.json); the rows the rules were
    written from are in-sample."""
    return found.label() if found else "in-sample: the rules were written from them"


def main() -> None:
    verbose = "-v" in sys.argv[1:]
    for name in FAMILIES:
        picked = [r for r in rows() if family(r) == name]
        wrong = [(r, why) for r in picked if (why := disagreement(r)) is not None]
        print(f"{name:>10}: {len(picked) - len(wrong)}/{len(picked)} rows agree")
        print(f"            {label(held_out_set(KERAS, family=name))}")
        if verbose:
            for row, why in wrong:
                print(f"          {row['consumer']} {row['model']}: {why}")
    for name, held in (("real", False), ("real held-out", True)):
        picked = [r for r in real_rows() if held_out(r) is held]
        wrong = [(r, why) for r in picked if (why := real_disagreement(r)) is not None]
        print(f"{name:>13}: {len(picked) - len(wrong)}/{len(picked)} rows agree (real files)")
        print(f"               {label(held_out_set(KERAS_REAL, held_out=held))}")
        if verbose:
            for row, why in wrong:
                print(f"          {row['consumer']} {row['model']}: {why}")
    picked = apps_rows()
    wrong = [(r, why) for r in picked if (why := apps_disagreement(r)) is not None]
    print(f"{'apps':>13}: {len(picked) - len(wrong)}/{len(picked)} rows agree (whole models)")
    print(f"               {label(held_out_set(KERAS_APPS))}")
    if verbose:
        for row, why in wrong:
            print(f"          {row['consumer']} {row['model']}: {why}")
    sets = (
        ("apps-2", apps2_rows, apps2_disagreement, KERAS_APPS_2, "whole models"),
        ("names", names_rows, names_disagreement, KERAS_NAMES, "layer and model names"),
        ("names-2", names2_rows, names2_disagreement, KERAS_NAMES_2, "layer and model names"),
    )
    for name, rows_of, why_of, fixture, what in sets:
        picked = rows_of()
        wrong = [(r, why) for r in picked if (why := why_of(r)) is not None]
        print(f"{name:>13}: {len(picked) - len(wrong)}/{len(picked)} rows agree ({what})")
        print(f"               {label(held_out_set(fixture))}")
        if verbose:
            for row, why in wrong:
                print(f"          {row['consumer']} {row['model']}: {why}")
    picked = nested_rows()
    found = nested_figures(picked)
    shown = ", ".join(f"{k} {a}/{n}" for k, (a, n) in found.items())
    print(f"{'nested':>13}: {shown} agree (models used as layers)")
    print(f"               {label(held_out_set(KERAS_NESTED))}")
    if verbose:
        for row in picked:
            if (why := nested_disagreement(row)) is not None:
                print(f"          {row['consumer']} {row['writer']}/{row['model']}: {why}")
    for round_ in (1, 2):
        picked = unbuilt_rows(round_)
        found = unbuilt_figures(picked)
        shown = ", ".join(f"{k} {a}/{n}" for k, (a, n) in found.items())
        print(f"{f'unbuilt-{round_}':>13}: {shown} agree (Sequentials with and without an input)")
        print(f"               {label(held_out_set(KERAS_UNBUILT, round=round_))}")
        if verbose:
            for row in picked:
                if (why := unbuilt_disagreement(row)) is not None:
                    print(f"          {row['consumer']} {row['model']}: {why}")


if __name__ == "__main__":
    main()
