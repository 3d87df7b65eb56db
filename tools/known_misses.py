"""Every known miss of our verdicts against the recorded truth, and where each is xfailed.

    .venv/bin/python tools/known_misses.py            # print the page
    .venv/bin/python tools/known_misses.py --write    # rewrite docs/verdicts/known-misses.md

Walks every fixture set that holds truth: the TensorFlow matrices (tests/truth.py), the
Keras ones (tests/fixtures/keras*), the TFLite ones (tests/tflite_truth.py), and the
kernel held-out cells (tests/same_answer_truth.py). Each disagreement is a false "yes"
(we say it loads, serves or answers the same, or warn of nothing, where the release did
not), a false "no" (the other way), an unknown (we say neither) or other (loads and
serves agree, the first error's code or a detail differs); each is looked up in the
strict xfails of the test that covers its set. tests/compat/test_known_misses.py fails
when the committed page is not what this prints.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE = ROOT / "docs" / "verdicts" / "known-misses.md"
KINDS = ("false yes", "false no", "unknown", "other")


@dataclass(frozen=True)
class Miss:
    kind: str  # one of KINDS
    known: str | None  # the strict xfail's reason; None: in no strict xfail
    accepted: bool = False  # not an xfail: the test accepts this answer (`known` says why)


@dataclass(frozen=True)
class RowSet:
    family: str
    fixture: str
    test: str
    rows: int
    misses: tuple[Miss, ...]


def _kind(said: tuple[bool | None, ...], real: tuple[bool, ...]) -> str:
    """Compare our (loads, serves, same) with the truth's, in that order."""
    for ours, theirs in zip(said, real, strict=True):
        if ours is None:
            return "unknown"
        if ours != theirs:
            return "false yes" if ours else "false no"
    return "other"


def tensorflow() -> Iterator[RowSet]:
    from tests.compat.test_agreement import known_miss, mismatch
    from tests.truth import FIXTURE_SETS, predict, rows

    found = rows()
    for fixture in FIXTURE_SETS:
        misses = []
        picked = [r for r in found if r.fixture_set == fixture]
        for row in picked:
            if mismatch(row) is None:
                continue
            p = predict(row)
            misses.append(Miss(_kind((p.loads, p.serves), (row.ok, row.serves)), known_miss(row)))
        yield RowSet(
            "TensorFlow",
            str(fixture.relative_to(ROOT)),
            "tests/compat/test_agreement.py",
            len(picked),
            tuple(misses),
        )


def _keras_kind(row: dict[str, Any], verdict: Any) -> str:
    from worker.model.findings import Code

    loaded = bool(row.get("loaded", row["ok"]))
    kind = _kind((verdict.loads, verdict.serves), (loaded, bool(row["ok"])))
    if kind != "other" or not row["ok"]:
        return kind
    warned = any(f.code == Code.KERAS_INPUT_SHAPE for f in verdict.findings)
    same = row.get("matches_producer") is not False
    if not same and not warned:
        return "false yes"
    if same and warned and "loaded" in row:
        return "false no"
    return "other"


def keras() -> Iterator[RowSet]:
    from tests.compat import (
        test_keras_agreement as main,
    )
    from tests.compat import (
        test_keras_apps2_agreement as apps2,
    )
    from tests.compat import (
        test_keras_apps_agreement as apps,
    )
    from tests.compat import (
        test_keras_names2_agreement as names2,
    )
    from tests.compat import (
        test_keras_names_agreement as names,
    )
    from tests.compat import (
        test_keras_nested as nested,
    )
    from tests.compat import (
        test_keras_real_agreement as real,
    )
    from tests.compat import (
        test_keras_unbuilt as unbuilt,
    )
    from worker.catalog.catalog import load_catalog
    from worker.compat.check import check_artifact

    def matrix(
        fixture: str,
        test: str,
        found: list[dict[str, Any]],
        disagreement: Callable[[dict[str, Any]], str | None],
        artifact: Callable[[dict[str, Any]], Any],
        known: dict[tuple[str, str], str],
        kind: Callable[[dict[str, Any], Any], str],
    ) -> RowSet:
        misses = []
        for row in found:
            if disagreement(row) is None:
                continue
            verdict = check_artifact(
                artifact(row), main.consumer_of(row["consumer"]), load_catalog()
            )
            misses.append(Miss(kind(row, verdict), known.get((row["consumer"], row["model"]))))
        return RowSet("Keras", fixture, test, len(found), tuple(misses))

    def loads_only(row: dict[str, Any], verdict: Any) -> str:
        return _kind((verdict.loads,), (bool(row["ok"]),))

    yield matrix(
        "tests/fixtures/keras",
        "tests/compat/test_keras_agreement.py",
        main.rows(),
        main.disagreement,
        lambda r: main.artifact(r["model"]),
        main.KNOWN_MISSES,
        _keras_kind,
    )
    from tests.compat import test_keras_reduction as reduction

    yield matrix(
        "tests/fixtures/keras-reduction",
        "tests/compat/test_keras_reduction.py",
        reduction.rows(),
        reduction.disagreement,
        lambda r: reduction.artifact(r["model"]),
        {
            (r["consumer"], r["model"]): w
            for r in reduction.rows()
            if (w := reduction.known_miss(r))
        },
        _keras_kind,
    )
    yield matrix(
        "tests/fixtures/keras-real",
        "tests/compat/test_keras_real_agreement.py",
        real.rows(),
        real.real_disagreement,
        lambda r: real.artifact(r["model"]),
        real.KNOWN_MISSES,
        _keras_kind,
    )
    for module, root, known in (
        (apps, apps.APPS, apps.KNOWN_MISSES),
        (apps2, apps2.APPS, apps2.KNOWN_MISSES),
        (names, names.NAMES, {}),
        (names2, names2.NAMES_2, {}),
    ):
        yield matrix(
            str(root.relative_to(ROOT)),
            f"tests/compat/{Path(module.__file__ or '').name}",
            apps.rows_of(root),
            lambda r, root=root: apps.disagreement(root, r),  # type: ignore[misc]
            lambda r, root=root: apps.artifact_of(root, r["model"]),  # type: ignore[misc]
            known,
            loads_only,
        )
    misses = []
    record = nested.record()
    for row in record:
        if nested.disagreement(row) is None:
            continue
        loads, _ = nested.ours(row)
        misses.append(Miss(_kind((loads,), (bool(row["loads"]),)), nested.known(row)))
    yield RowSet(
        "Keras",
        "tests/fixtures/keras-nested",
        "tests/compat/test_keras_nested.py",
        len(record),
        tuple(misses),
    )
    misses = []
    found = unbuilt.rows()
    for row in found:
        if unbuilt.disagreement(row) is None:
            continue
        loads, _ = unbuilt.ours(row)
        misses.append(Miss(_kind((loads,), (bool(row["ok"]),)), unbuilt.known(row)))
    yield RowSet(
        "Keras",
        "tests/fixtures/keras-unbuilt",
        "tests/compat/test_keras_unbuilt.py",
        len(found),
        tuple(misses),
    )
    yield _keras_rename()


def _keras_rename() -> RowSet:
    from tests.compat import test_keras_rename as rename
    from tests.compat.test_keras_agreement import consumer_of
    from worker.catalog.catalog import load_catalog
    from worker.compat.check import check_artifact

    found = rename.keras3()
    misses = []
    for row in found:
        verdict = check_artifact(
            rename.renamed(row["writer"], row["model"]),
            consumer_of(row["consumer"]),
            load_catalog(),
        )
        if verdict.loads is not row["loads"]:
            allowed = verdict.loads is None and row["model"] in rename.UNMEASURED
            why = (
                "not an xfail: the test accepts `unknown` (keras.layer-unmeasured, never that "
                "it fails) where a layer setting was in no file the table measured in that minor"
            )
            kind = _kind((verdict.loads,), (bool(row["loads"]),))
            misses.append(Miss(kind, why if allowed else None, accepted=allowed))
    return RowSet(
        "Keras",
        "tests/fixtures/keras-rename",
        "tests/compat/test_keras_rename.py",
        len(found),
        tuple(misses),
    )


def tflite() -> Iterator[RowSet]:
    from tests.compat.test_tflite_agreement import KNOWN_MISSES
    from tests.tflite_truth import CONVERTED, FEATURES, REAL, outcome, predicted, rows

    found = rows()
    for fixture in (CONVERTED, REAL, FEATURES):
        picked = [r for r in found if r.fixture_set == fixture]
        misses = []
        for row in picked:
            ours, real = predicted(row), outcome(row)
            if ours == real:
                continue
            reason = next((why for why, test in KNOWN_MISSES if test(row)), None)
            kind = _kind(ours[:2], (bool(real[0]), bool(real[1])))
            misses.append(Miss(kind, reason))
        yield RowSet(
            "TFLite",
            str(fixture.relative_to(ROOT)),
            "tests/compat/test_tflite_agreement.py",
            len(picked),
            tuple(misses),
        )


@dataclass(frozen=True)
class CellSet:
    name: str
    cells: int
    answered: int
    differs: int
    false_yes: tuple[Miss, ...]
    false_warning: int


def same_answer() -> list[CellSet]:
    from tests.compat.test_same_answer_misses import SETS, known

    found = []
    for name, cells in SETS:
        found.append(
            CellSet(
                name,
                len(cells),
                sum(c.answered for c in cells),
                sum(c.differs for c in cells),
                tuple(Miss("false yes", known(c)) for c in cells if c.false_yes()),
                sum(1 for c in cells if c.false_warning()),
            )
        )
    return found


INTRO = """\
# Known misses

<!-- Written by tools/known_misses.py --write; tests/compat/test_known_misses.py fails
when this page is not what the tool prints. Do not edit by hand. -->

Every fixture set that holds what a real release did, against what the rules say
today, row by row or cell by cell. A **false "yes"** is a row where we say the model
loads, serves, or answers the same (or warn of nothing) and the real release failed the
load, failed the request, or answered otherwise beyond the stated tolerance; a **false
"no"** is the other way round; **unknown** is a row we leave undecided (`null`) where
the release decided; **other** is a row whose load and request agree and whose first
error's code (or a detail the test checks: compile-only, the Lambda's bytecode) does
not. Every false "yes" and every other miss of a row is a strict xfail
(`pytest.mark.xfail(strict=True)`) with its cause in the test that covers its set, so a
new miss fails that test and a miss that starts to agree fails until it is taken off the
list; the exceptions are counted apart below (the unknowns a test accepts, the kernel
cells' false warnings). Reproduce:
`.venv/bin/python tools/known_misses.py`.
"""

ROWS_TEXT = """\
## Loads, serves, first error: every row

One row per (release, model, loader): TensorFlow's matrices (`tests/truth.py`: loads
and serves on the fed input, then the first error's class), Keras's (loads, the request
of the declared shape, the producer's output: a `keras.input-shape` warning is what says
it differs), TFLite's (built and allocated, invoked with the reference's answer).
"""

CELLS_TEXT = """\
## Same answer: the kernel held-out cells

The kernel sets count a miss per cell (one model run by one release), not per row of a
matrix (`tests/same_answer_truth.py`). TensorFlow's (`attrs-heldout`, `kernels-heldout`
to `kernels-heldout-6`) are scored as `tools/attrs/precision.py` scores them and as
`tests/catalog/test_kernel_heldout.py` pins their figures: the reference answer (the
producer's, or 2.21.0's from `kernels-heldout-2` on), numbers within 1e-6 relative (4
ULPs of the dtype from `kernels-heldout-4` on) the same answer. A cell is a false "yes"
when it answered otherwise on the ordinary feed (the first; also the third, integers,
from `kernels-heldout-4` on) and is not `at-risk`, when it answered otherwise on any feed
with no warning at all (neither `at-risk` nor `kernel.results-extremes`), or when the
release refused a graph we say it imports; `attrs-heldout` has no ordinary feed, so only
the last two apply there. TFLite's (`tests/fixtures/tflite-kernels-heldout`, six rounds)
take each cell's recorded `answer` on the ordinary input classes under the default
whole-model tolerance of the file's depth (`tools/tflite/kernel_heldout.py`) and today's
verdict: a false "yes" is a cell that `differs` where the verdict is neither `at-risk`
(`kernel.changed`) nor unserved (`tflite.wrong-values`). A false warning (`at-risk`
where the release answered the same on the feeds it speaks for, or `incompatible` where
it answered) is a precision miss: the figure tests pin those counts, no xfail lists them.
"""

NOTES = """\
## Not counted

- The TensorFlow matrices' `outputs`: no test claims a row answers as the producer
  beyond `at-risk`'s precision (`tools/agreement.py`); compared with each producer's own
  row, every served row with outputs answers the same within 1e-6 but the
  `tests/fixtures/tf-shapes` meta graphs, whose loader runs a fresh
  `global_variables_initializer` (no checkpoint): random weights in every release.
- The TFLite kernel cells under the sensitivity tolerance (a candidate, not the
  default): there the 40 `dense_int16x8` cells are within rounding.
- Fixtures that are tables' sources or single cases, not truth a verdict is scored on:
  `tests/fixtures/tflite-features/types.jsonl` (the file-feature table's own source),
  `tests/fixtures/kernel-sweep/fixture_ops.json` (which ops the kernel table covers; its
  xfails are ops the sweep could not build, `tests/catalog/test_kernel_coverage.py`),
  `tests/fixtures/tflite-kernel-sweep` (one file the CLI's `same_answer: strict` test
  reads), `tests/fixtures/unsafe` (what the ops did when called: flagged by
  `tests/compat/test_unsafe.py`, not a load or a request the rules predict) and
  `tests/fixtures/tf-real/hazard_probes.jsonl` (evidence for at-risk cells,
  `tests/compat/test_at_risk_evidence.py`).
"""


def render() -> str:
    row_sets = [*tensorflow(), *keras(), *tflite()]
    cell_sets = same_answer()
    out = [INTRO, ROWS_TEXT]
    out.append(
        "| family | set | test | rows | false yes | false no | unknown | other | "
        "in strict xfails | accepted by the test | outside |"
    )
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in row_sets:
        count = Counter(m.kind for m in s.misses)
        known = sum(1 for m in s.misses if m.known and not m.accepted)
        accepted = sum(1 for m in s.misses if m.accepted)
        out.append(
            f"| {s.family} | `{s.fixture}` | `{s.test}` | {s.rows:,} | "
            + " | ".join(str(count[k]) for k in KINDS)
            + f" | {known} | {accepted} | {len(s.misses) - known - accepted} |"
        )
    out.append("")
    out.append(CELLS_TEXT)
    out.append(
        "| set | cells | answered | differs | false yes | in strict xfails | outside | "
        "false warnings |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for c in cell_sets:
        known = sum(1 for m in c.false_yes if m.known)
        out.append(
            f"| `{c.name}` | {c.cells:,} | {c.answered:,} | {c.differs:,} | {len(c.false_yes)} | "
            f"{known} | {len(c.false_yes) - known} | {c.false_warning} |"
        )
    out.append("")
    out.append(
        'The false "yes" cells are strict xfails in `tests/compat/test_same_answer_misses.py`.'
    )
    out.append("")
    out.append("## Every miss and its cause\n")
    out.append("| set | kind | rows or cells | cause (the strict xfail's reason) |")
    out.append("|---|---|---|---|")
    causes: Counter[tuple[str, str, str]] = Counter()
    for s in row_sets:
        for m in s.misses:
            causes[
                (s.fixture.removeprefix("tests/fixtures/"), m.kind, m.known or "**in no xfail**")
            ] += 1
    for c in cell_sets:
        for m in c.false_yes:
            causes[(c.name, m.kind, m.known or "**in no xfail**")] += 1
    for (where, kind, why), n in causes.items():
        out.append(f"| `{where}` | {kind} | {n} | {why} |")
    out.append("")
    rows_yes = [m for s in row_sets for m in s.misses if m.kind == "false yes"]
    cells_yes = [m for c in cell_sets for m in c.false_yes]
    every = rows_yes + cells_yes
    outside = sum(1 for m in every if not m.known)
    out.append("## Totals\n")
    out.append(
        f'False "yes": {len(rows_yes)} rows and {len(cells_yes)} cells, '
        f"{len(every) - outside} of them in strict xfails, **{outside} outside**. "
        f"Every miss of any kind: "
        f"{sum(len(s.misses) for s in row_sets)} rows and {len(cells_yes)} cells, "
        f"{sum(1 for s in row_sets for m in s.misses if not m.known)} rows outside an xfail "
        "and outside what a test accepts; "
        f"{sum(1 for s in row_sets for m in s.misses if m.accepted)} unknown rows a test "
        "accepts.\n"
    )
    out.append(NOTES)
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {PAGE.relative_to(ROOT)}")
    args = parser.parse_args()
    text = render()
    if args.write:
        PAGE.write_text(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
