"""A model used as a layer whose call Keras 3's H5 loader never resolves
(keras.nested-call): read from the file's config (`formats.keras.unreached_calls`) and
judged per consumer. Real Keras 3 on such files: tests/fixtures/keras-rename's record
(the renamed-only rows fail in every minor measured; renumbered, they load)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_keras import DENSE, INPUT2, first_error
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.keras import read_keras_h5, unreached_calls
from worker.formats.source import FileSource
from worker.model.artifact import Artifact
from worker.model.findings import Code, FixKind
from worker.model.keras import KerasModel
from worker.notify.fixes import fix_text, plain

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORD = FIXTURES / "keras-rename" / "record.jsonl"
NESTED_MODELS = ("slash_in_nested", "slash_nested_model", "backbone")


def layer(cls: str, name: str, *refs: list[Any], config: Any = None) -> dict[str, Any]:
    return {
        "class_name": cls,
        "config": config or {"name": name},
        "inbound_nodes": [[list(r) for r in refs]] if refs else [],
    }


def functional(name: str, *layers: dict[str, Any]) -> dict[str, Any]:
    return {"class_name": "Functional", "config": {"name": name, "layers": list(layers)}}


INNER = functional("inner", layer("InputLayer", "i1"), layer("Dense", "d", ["i1", 0, 0, {}]))


def nested(index: int) -> dict[str, Any]:
    """A Keras 2 config: `inner` called once on `input_2`, read by `dense` at `index`."""
    inner = {**INNER, "inbound_nodes": [[["input_2", 0, 0, {}]]]}
    return functional(
        "model",
        layer("InputLayer", "input_2"),
        {**inner, "config": {**INNER["config"]}},
        layer("Dense", "dense", ["inner", index, 0, {}]),
    )


def test_a_nested_models_call_read_as_node_1_is_unreached() -> None:
    assert unreached_calls(nested(1)) == ("inner",)
    assert unreached_calls(nested(0)) == ()  # renumbered, or a Sequential built on call


def test_a_shared_layers_second_call_is_not_unreached() -> None:
    config = functional(
        "model",
        layer("InputLayer", "a"),
        layer("InputLayer", "b"),
        {**layer("Dense", "shared"), "inbound_nodes": [[["a", 0, 0, {}]], [["b", 0, 0, {}]]]},
        layer("Add", "add", ["shared", 0, 0, {}], ["shared", 1, 0, {}]),
    )
    assert unreached_calls(config) == ()


def test_a_nested_model_inside_a_nested_model_is_read_too() -> None:
    outer = nested(1)
    wrapper = {**outer, "inbound_nodes": [[["x", 0, 0, {}]]]}
    config = functional(
        "top", layer("InputLayer", "x"), wrapper, layer("Dense", "y", ["model", 0, 0, {}])
    )
    assert unreached_calls(config) == ("inner",)


@pytest.mark.parametrize("writer", ["tf2.6.5", "tf2.11.0", "tf2.15.1"])
def test_real_files_as_keras_2_writes_them_and_renumbered(writer: str) -> None:
    written = FIXTURES / "keras-names" / "models" / writer
    renamed = FIXTURES / "keras-rename" / "models" / writer
    for name, inner in (("slash_nested_model", "tower/a"), ("slash_in_nested", "inner")):
        if (written / f"{name}.h5").exists():
            assert read_keras_h5(FileSource(written / f"{name}.h5")).unreached_calls == (inner,)
        if (renamed / f"{name}.h5").exists():
            assert read_keras_h5(FileSource(renamed / f"{name}.h5")).unreached_calls == ()


def test_the_record_says_keras_3_fails_every_renamed_only_nested_model() -> None:
    """The renamed-only files (names fixed, calls not renumbered) of the three models
    with a nested Functional fail in every Keras 3 minor measured."""
    rows = [json.loads(line) for line in RECORD.read_text().splitlines() if line.strip()]
    renamed_only = [r for r in rows if r.get("step") == "renamed-only"]
    nested = [r for r in renamed_only if r["model"] in NESTED_MODELS]
    assert {r["model"] for r in nested} == set(NESTED_MODELS)
    assert len(nested) >= 36 and not any(r["loads"] for r in nested)


def artifact(calls: tuple[str, ...], version: str = "2.15.0") -> Artifact:
    keras = KerasModel(
        "hdf5", version, model_class="Functional", layers=(INPUT2, DENSE), unreached_calls=calls
    )
    return Artifact("m", "keras-h5", 1, "0" * 64, keras=keras)


@pytest.mark.parametrize(
    ("calls", "release", "code"),
    [
        (("inner",), "2.16", Code.KERAS_NESTED_CALL),
        (("inner",), "2.21", Code.KERAS_NESTED_CALL),
        (("inner",), "2.15", None),  # Keras 2 reads its own numbering
        ((), "2.21", None),
    ],
)
def test_keras_3_fails_the_load_keras_2_does_not(
    calls: tuple[str, ...], release: str, code: Code | None
) -> None:
    assert first_error(artifact(calls), release) == code


def test_the_finding_names_the_model_and_the_fix_renumbers_its_calls() -> None:
    consumer = replace(load_catalog().consumer("2.21.0"), keras="3.15")
    verdict = check_artifact(artifact(("inner", "tower")), consumer, load_catalog())
    (found,) = [f for f in verdict.findings if f.code == Code.KERAS_NESTED_CALL]
    assert "'inner'" in found.message and "1 more" in found.message
    assert found.fix is not None and found.fix.kind == FixKind.RENUMBER_NESTED_CALLS
    text = fix_text(found.fix.to_json(), "svc", plain)
    assert "['inner', 1, 0, {}]" in text and "['inner', 0, 0, {}]" in text
