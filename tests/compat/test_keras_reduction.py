"""Compiled Keras files whose losses carry a `reduction`, held out from the rule that a
Keras 2 loss object's reduction='auto' fails compiling in Keras 3 (keras.compile-argument,
worker/compat/keras_objects.py `KERAS2_ONLY_REDUCTIONS`): our verdict against what real
Keras did (tests/fixtures/keras-reduction).

Made by `tools/keras/reduction_models.py` after the rule (15f4347) was committed: tiny
Dense models compiled with loss objects of five classes at their default reduction and
at 'sum', 'none' and 'sum_over_batch_size', a loss by name, metric objects (a loss class
as a metric too) and two-output models with a dict or a list of losses, saved as H5 (and
.keras from Keras 2.12) by the tf.keras of TF 2.4.4, 2.8.4, 2.12.1, 2.15.1 and 2.17.1
(Keras 3), and loaded compiling, then with compile=False where that failed, by Keras 3
wheels and a Keras 2 control. Each row is compared as tests/compat/test_keras_agreement.py
compares its rows (`disagreement`): loads, the first error's code and compile-only.
Rows not yet explained are strict xfails with their cause.

First measured against the rules of 15f4347: 637 of 912 rows agreed (the Keras 3 producer's
files filed under keras3.15/, as build_matrix.py files Keras 3 files; 580 with them under
tf2.17/, where the shared error table reads an older Keras 3's refusal of their arguments
as arguments Keras 3 dropped). Then tuned on these rows: Keras 3.0's load_model compiles an
H5 file whatever compile= says (worker/compat/keras_checks.py KERAS_H5_COMPILES_ALWAYS, from
Keras 3.0.5's saving_api.py): 665 of 912. Then: Keras 3 reading H5 takes an optimizer class
it does not know ("Custom>Adam", Keras 2.11+) by its config's name, and Keras 2.13+ loss
objects' `fn` fails every Keras 3 first (keras_objects.py `_resolved_by_config_name`,
KERAS2_LOSS_FUNCTION_KEY): 793 of 912. Keras 2.13.1 and 2.14.1 were loaded after that, a
second round (SECOND_ROUND): 296 of 304 agreed first, with the rules of 742d056. Then, tuned
on both rounds (2.12 refuses `fn`, 2.13 and 2.14 take it): Keras 2 before 2.13 refuses a
loss's `fn` (KERAS2_TAKES_LOSS_FUNCTION_KEY): 809 of 912, 296 of 304; and Keras 2 refuses a
loss object used as a metric, with its reduction (`_metric_reduction`): 817 of 912, 304 of 304.
With main's rules of the same days merged in (Keras 3.0-3.2 compile H5 files anyway, and what
older Keras 3 refuse in a Keras 3.15 H5 file): 874 of 912, 304 of 304.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_keras_agreement import disagreement as agreement
from worker.formats.read import read_path
from worker.model.artifact import Artifact

REDUCTION = Path(__file__).resolve().parents[1] / "fixtures" / "keras-reduction"


def rows() -> list[dict[str, Any]]:
    with (REDUCTION / "matrix.jsonl").open() as f:
        return [json.loads(line) for line in f if line.strip()]


@functools.cache
def artifact(model: str) -> Artifact:
    (found,) = read_path(str(REDUCTION / "models" / model))
    return found


def disagreement(row: dict[str, Any]) -> str | None:
    """Why our verdict on the row's file differs from what Keras did (None: it agrees)."""
    return agreement(row, artifact(row["model"]))


# Why the product disagrees, each with the rows it covers (strict: a row that starts agreeing
# fails here until its cause is narrowed). As first measured against the rules of 15f4347,
# 38 rows of Keras 2.12 and 2.15 .keras archives loaded by the Keras 2 that wrote them were
# wrong (the archive's optimizer 'adam' taken for unknown; the loss-as-metric rule, read on
# H5 files, applied to archives): they agree since Keras's optimizer names are matched in
# any case (optimizers.deserialize lowercases them) and that rule is H5's only.
def known_miss(row: dict[str, Any]) -> str | None:
    """Why the product disagrees with the row, where that is known (None: it agrees)."""
    return None


def _marked(row: dict[str, Any]) -> Any:
    why = known_miss(row)
    marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
    return pytest.param(row, marks=marks, id=f"{row['consumer']}:{row['model']}")


def test_the_matrix_has_keras_3_and_a_keras_2_control() -> None:
    found = rows()
    consumers = {r["consumer"] for r in found}
    assert any(c.startswith("keras-3.") for c in consumers)
    assert any(not c.startswith("keras-") for c in consumers)
    assert all("compile_false_ok" in r for r in found if not r["ok"])


@pytest.mark.parametrize("row", [_marked(r) for r in rows()])
def test_verdict_agrees_with_real_keras_on_loss_reductions(row: dict[str, Any]) -> None:
    assert disagreement(row) is None


def test_a_loss_reduction_survives_the_json_round_trip() -> None:
    """Reports and the model index keep the artifact as JSON: the rule must see the same
    reductions there."""
    from worker.model.artifact import artifact_from_json

    found = artifact("tf2.8/two_list.h5")
    back = artifact_from_json(json.loads(json.dumps(found.to_json())))
    assert found.keras is not None and back.keras is not None
    assert [o.reduction for o in back.keras.objects if o.kind == "losses"] == ["sum", "auto"]
    assert back.keras.objects == found.keras.objects  # config names (Custom>Adam's) too


# Consumers loaded after 742d056 (a second round, not read to write the rules before it).
SECOND_ROUND = ("2.13.1", "2.14.1")


def family(row: dict[str, Any]) -> str:
    return "second-round" if row["consumer"] in SECOND_ROUND else "first-round"


def test_the_first_measured_figure_is_recorded() -> None:
    from tests.held_out import held_out_set

    found = held_out_set(REDUCTION, family="first-round")
    picked = [r for r in rows() if family(r) == "first-round"]
    assert found is not None and found.first_measured["against"] == "15f4347"
    assert found.first_measured["figures"]["rows"][1] == len(picked)
    agree = sum(1 for r in picked if disagreement(r) is None)
    assert found.after_tuning is not None
    assert found.after_tuning["figures"]["rows"][1] == len(picked)
    assert found.after_tuning["figures"]["rows"][0] <= agree  # later rules lost no row


def test_the_second_round_figure_is_recorded() -> None:
    from tests.held_out import held_out_set

    found = held_out_set(REDUCTION, family="second-round")
    picked = [r for r in rows() if family(r) == "second-round"]
    assert found is not None and found.first_measured["against"] == "742d056"
    assert found.first_measured["figures"]["rows"][1] == len(picked)
