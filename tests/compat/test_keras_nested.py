"""Keras 2 models used as layers in Keras 3, held out from `keras.nested-call`: our
verdict against what real Keras 3 did (tests/fixtures/keras-nested).

Made by `tools/keras/nested_models.py` after the rule (580293d) was committed: a nested
Functional called twice, one whose call is the outer model's output, two levels of
nesting, one of two inputs and two outputs, a nested Sequential built with and without an
input shape, a subclassed model used as a layer, and a control without nesting, saved
whole as H5 by the Keras 2 of TF 2.8.4, 2.10.1 and 2.13.1 and loaded by seven Keras 3
minors (TensorFlow backend; a load still running after 10 s is a failure).
tests/fixtures/held_out.json has the figure as first measured; the known disagreements
are strict xfails with their cause.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_keras_agreement import consumer_of, error_class
from tests.held_out import held_out_set
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.artifact import Artifact
from worker.model.findings import Code, Severity

NESTED = Path(__file__).resolve().parents[1] / "fixtures" / "keras-nested"
# Keras 3 errors this record holds that the shared table does not name: the loader's own
# words once no node can be processed (3.12+), and a load that never returns
NESTED_ERRORS = (("Invalid Functional model configuration", Code.KERAS_NESTED_CALL),
                 ("Hang: ", Code.KERAS_NESTED_CALL),
                 # 3.0-3.2 looking up output_layers' node as written
                 ("IndexError: list index out of range", Code.KERAS_NESTED_CALL))  # fmt: skip


def record() -> list[dict[str, Any]]:
    with (NESTED / "record.jsonl").open() as f:
        return [json.loads(line) for line in f if line.strip()]


@functools.cache
def artifact(writer: str, model: str) -> Artifact:
    (found,) = read_path(str(NESTED / "models" / writer / f"{model}.h5"))
    return found


def keras_code(row: dict[str, Any]) -> Code | None:
    """The code that names Keras 3's error (None: none does)."""
    for pattern, code in NESTED_ERRORS:
        if pattern in row["error"]:
            return code
    return error_class(row["consumer"], row["error"])


def ours(row: dict[str, Any]) -> tuple[bool | None, list[Code]]:
    """Our verdict on the row's file for its consumer: loads, and the error codes."""
    verdict = check_artifact(artifact(row["writer"], row["model"]), consumer_of(row["consumer"]),
                             load_catalog())  # fmt: skip
    return verdict.loads, [f.code for f in verdict.findings if f.severity == Severity.ERROR]


def disagreement(row: dict[str, Any]) -> str | None:
    """Why our verdict differs from what Keras 3 did: `loads`, then the first error's code
    where both fail (None: it agrees)."""
    loads, errors = ours(row)
    if loads is not row["loads"]:
        return f"loads {loads} {[str(c) for c in errors]}, Keras: {row.get('error', 'ok')}"
    if not row["loads"] and errors[:1] != [keras_code(row)]:
        return f"first error {[str(c) for c in errors[:1]]}, Keras: {row['error']}"
    return None


def figures(rows: list[dict[str, Any]]) -> dict[str, list[int]]:
    """[agree, total]: `loads` over every row, `code` (the first error's) over the rows
    where both Keras 3 and the product say the load fails."""
    loads, code = [0, 0], [0, 0]
    for row in rows:
        said, errors = ours(row)
        loads[0] += said is row["loads"]
        loads[1] += 1
        if said is False and not row["loads"]:
            code[0] += errors[:1] == [keras_code(row)]
            code[1] += 1
    return {"loads": loads, "code": code}


# (model, minors or None for every one) -> why the product disagrees. First measured
# against the rule of 580293d: the nested Sequentials (42 rows) too, since judged
# (MEASURED_NESTED takes Sequential: tuned on this set, so those rows are in-sample now).
KNOWN: dict[tuple[str, tuple[str, ...] | None], str] = {}


def known(row: dict[str, Any]) -> str | None:
    for (model, minors), why in KNOWN.items():
        if model == row["model"] and (minors is None or row["consumer"] in minors):
            return why
    return None


def _param(row: dict[str, Any]) -> Any:
    why = known(row)
    marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
    return pytest.param(row, marks=marks, id=f"{row['consumer']}:{row['writer']}/{row['model']}")


def test_the_record_has_three_writers_seven_keras_3_minors_and_every_model() -> None:
    rows = record()
    assert {r["writer"] for r in rows} == {"tf2.8.4", "tf2.10.1", "tf2.13.1"}
    assert len({r["consumer"] for r in rows}) == 7
    assert {r["backend"] for r in rows} == {"tensorflow"}
    assert len(rows) == 7 * 23  # TF 2.8.4 could not save the subclassed model as H5


def test_the_control_loads_and_runs_everywhere() -> None:
    control = [r for r in record() if r["model"] == "control"]
    assert control and all(r["loads"] and r["runs"] for r in control)


@pytest.mark.parametrize("row", [_param(r) for r in record()])
def test_verdict_agrees_with_keras_3_on_held_out_nested_models(row: dict[str, Any]) -> None:
    assert disagreement(row) is None


def test_the_first_measured_figure_is_recorded() -> None:
    found = held_out_set(NESTED)
    assert found is not None and found.first_measured["against"] == "580293d"
    assert found.first_measured["figures"]["loads"][1] == len(record())
