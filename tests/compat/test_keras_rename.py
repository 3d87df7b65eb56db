"""The `rename_layers` fix followed as its text says, end to end (tests/fixtures/keras-rename).

Made by `tools/keras/rename_check.py`: each '/' model of tests/fixtures/keras-names and
keras-names-2 written with weights by the Keras 2 of TF 2.6.5, 2.11.0 and 2.15.1, renamed
there as the fix says (the names replaced in `model.to_json()`, `model_from_json`,
`load_weights(original)`, `save("renamed.h5")`, and a nested model's calls renumbered),
then loaded by Keras 3 wheels on the TensorFlow backend and run on the input the original
ran on. The record keeps every load; the renamed files keep the root attributes the
worker reads. Here: the fix makes every file whose only Keras 3 failure was its names
load, with the original's outputs, and the product says so (or, where a layer
setting is unmeasured in that minor, unknown: never that it fails).
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.compat.test_keras_agreement import consumer_of
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.hdf5 import root_string_attributes
from worker.formats.read import read_path
from worker.formats.source import FileSource
from worker.model.artifact import Artifact

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RENAME = FIXTURES / "keras-rename"
# the renamed models whose only Keras 3 failure is a name (the others also hold a layer
# config, class entry or object Keras 3 refuses, which the product names apart)
NAME_ONLY = {"slash_layer", "slash_input", "slash_model", "slash_in_nested", "slash_nested_model",
             "slash_sequential", "towers", "backbone", "model_name_only"}  # fmt: skip
NESTED = {"slash_in_nested", "slash_nested_model", "backbone"}
# renamed models the product says "unknown" for in some Keras 3 minors (never "fails"):
# Conv2D with padding='same' was in no file the layer-config table measured in those minors
UNMEASURED = {"towers": "keras.layer-unmeasured"}
SAME = 1e-5  # the largest output difference taken as the same weights


def record() -> list[dict[str, Any]]:
    with (RENAME / "record.jsonl").open() as f:
        return [json.loads(line) for line in f if line.strip()]


def keras3(step: str = "fix") -> list[dict[str, Any]]:
    return [r for r in record() if r["consumer"] != "writer" and r["step"] == step]


@functools.cache
def renamed(writer: str, model: str) -> Artifact:
    (found,) = read_path(str(RENAME / "models" / writer / f"{model}.h5"))
    return found


def test_the_record_has_three_writers_every_keras_3_minor_and_every_model() -> None:
    rows = keras3()
    assert {r["writer"] for r in rows} == {"tf2.6.5", "tf2.11.0", "tf2.15.1"}
    assert len({r["consumer"] for r in rows}) == 16
    assert {r["model"] for r in rows} >= NAME_ONLY
    assert {r["backend"] for r in rows} == {"tensorflow"}


def test_the_writer_reads_its_renamed_file_back_with_the_same_weights() -> None:
    made = [r for r in record() if r["consumer"] == "writer"]
    assert made and all(r["loads"] and r["max_diff"] <= SAME for r in made)
    assert {r["model"] for r in made if r["renumbered"]} == NESTED


def _id(row: dict[str, Any]) -> str:
    return f"{row['consumer']}:{row['writer']}/{row['model']}"


@pytest.mark.parametrize("row", keras3(), ids=_id)
def test_the_original_fails_and_the_product_agrees_with_keras_3_on_the_renamed_file(
    row: dict[str, Any],
) -> None:
    assert row["original_loads"] is False
    verdict = check_artifact(renamed(row["writer"], row["model"]), consumer_of(row["consumer"]),
                             load_catalog())  # fmt: skip
    if verdict.loads is None and row["model"] in UNMEASURED:
        codes = {str(f.code) for f in verdict.findings}
        assert UNMEASURED[row["model"]] in codes and row["loads"]
    else:
        assert verdict.loads is row["loads"], row.get("error")
    assert not [f for f in verdict.findings if f.code == "keras.layer-name"]
    if row["model"] in NAME_ONLY:
        assert row["loads"] and row["max_diff"] <= SAME


def test_renamed_only_a_nested_model_still_fails_in_every_keras_3() -> None:
    rows = keras3("renamed-only")
    nested = [r for r in rows if r["model"] in NESTED]
    assert nested and not any(r["loads"] for r in nested)
    others = [r for r in rows if r["model"] in NAME_ONLY - NESTED]
    assert others and all(r["loads"] and r["max_diff"] <= SAME for r in others)


def _config(path: Path) -> str:
    source = FileSource(path)
    try:
        return root_string_attributes(source)["model_config"]
    finally:
        source.close()


def _renamed_config(config: str) -> dict[str, Any]:
    """The fix's edit, without TensorFlow: '/' out of every quoted name that holds one."""
    names = set(re.findall(r'"name": "([^"]*/[^"]*)"', config))
    for name in sorted(names, key=len, reverse=True):
        config = config.replace(json.dumps(name), json.dumps(name.replace("/", "_")))
    found: dict[str, Any] = json.loads(config)
    layers = found["config"]["layers"]
    nested = {layer["config"]["name"] for layer in layers if layer["class_name"] in
              ("Functional", "Model", "Sequential")}  # fmt: skip
    for layer in layers:
        for node in layer.get("inbound_nodes", []):
            for ref in node:
                if isinstance(ref, list) and ref and ref[0] in nested and ref[1] > 0:
                    ref[1] -= 1
    return found


@pytest.mark.parametrize("row", [r for r in record() if r["consumer"] == "writer"],
                         ids=lambda r: f"{r['writer']}/{r['model']}")  # fmt: skip
def test_the_renamed_file_is_the_committed_fixture_renamed(row: dict[str, Any]) -> None:
    writer, model = row["writer"], row["model"]
    folder = "keras-names" if model.startswith("slash_") else "keras-names-2"
    source = FIXTURES / folder / "models" / writer / f"{model}.h5"
    if not source.exists():
        pytest.skip(f"{folder} has no {writer} file")
    got = json.loads(_config(RENAME / "models" / writer / f"{model}.h5"))
    assert got == _renamed_config(_config(source))
