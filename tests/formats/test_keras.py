"""Keras files from real Keras releases are read; hostile bytes give our own error.

Fixtures: tests/fixtures/keras/models (written by TF 1.15.5 to 2.21.0's Keras, see its
README) and tests/fixtures/foreign (Keras 3 without TensorFlow)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.errors import InvalidArtifact
from worker.formats.read import read_path, read_source
from worker.formats.source import BytesSource, FileSource
from worker.model.artifact import Artifact, artifact_from_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MODELS = FIXTURES / "keras" / "models"
DESCRIBED = json.loads((FIXTURES / "keras" / "models.json").read_text())
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def keras_files() -> list[Path]:
    found = sorted(p for p in MODELS.rglob("*") if p.suffix in (".h5", ".keras"))
    assert len(found) >= 33
    return found


# Every fixture: the writer's Keras version as models.json records it, and its layers.
@pytest.mark.parametrize("path", keras_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_real_keras_file_is_read_with_its_writers_version(path: Path) -> None:
    (artifact,) = read_path(str(path))
    model = artifact.keras
    assert model is not None
    assert artifact.format == ("keras" if path.suffix == ".keras" else "keras-h5")
    assert model.keras_version == DESCRIBED[f"{path.parent.name}/{path.name}"]["keras"]
    assert model.model_class in ("Sequential", "Functional", "Model")
    assert model.layers and all(layer.class_name for layer in model.layers)
    if path.suffix == ".h5":  # the Keras 3 wheels (keras3.X/) were run on jax
        assert model.backend == ("jax" if path.parent.name.startswith("keras") else "tensorflow")


def test_keras_3_and_keras_2_configs_are_told_apart() -> None:
    (new,) = read_path(str(MODELS / "tf2.21" / "lstm.keras"))
    (old,) = read_path(str(MODELS / "tf2.15" / "lstm.keras"))
    assert new.keras is not None and old.keras is not None
    assert "batch_shape" in new.keras.layers[0].config_keys
    assert "time_major" in old.keras.layers[-1].config_keys
    (tf1,) = read_path(str(MODELS / "tf1.15" / "dense.h5"))
    assert tf1.keras is not None and tf1.keras.layers[0].typed_objects


def test_the_declared_input_shape_is_kept_where_each_keras_writes_it() -> None:
    # TF 1.15: on the Sequential's first layer; TF 2.4: on an InputLayer; Keras 3: batch_shape
    expected = {"tf1.15": "Dense", "tf2.4": "InputLayer", "tf2.21": "InputLayer"}
    for folder, first in expected.items():
        (artifact,) = read_path(str(MODELS / folder / "dense.h5"))
        assert artifact.keras is not None
        layer = artifact.keras.layers[0]
        assert (layer.class_name, layer.batch_input_shape, layer.depth) == (first, (None, 4), 1)


def test_keras_metadata_round_trips_through_json() -> None:
    for path in keras_files():
        (artifact,) = read_path(str(path))
        assert artifact_from_json(json.loads(json.dumps(artifact.to_json()))) == artifact


def test_the_model_and_nested_names_are_kept_as_written() -> None:
    names = FIXTURES / "keras-names" / "models" / "tf2.15.1"
    (own,) = read_path(str(names / "slash_model.h5"))
    assert own.keras is not None and own.keras.model_name == "net/v1"
    (nested,) = read_path(str(names / "slash_in_nested.h5"))
    assert nested.keras is not None
    assert [(x.name, x.depth) for x in nested.keras.layers if "/" in x.name] == [("inner/dense", 2)]
    assert artifact_from_json(nested.to_json()).keras == nested.keras


def test_a_keras_3_file_written_without_tensorflow_is_read() -> None:
    (h5,) = read_path(str(FIXTURES / "foreign" / "model.h5"))
    (zipped,) = read_path(str(FIXTURES / "foreign" / "model.keras"))
    assert h5.keras is not None and h5.keras.backend == "numpy"
    assert zipped.keras is not None and zipped.keras.keras_version.startswith("3.")


def _keras_zip(config: bytes, metadata: bytes = b'{"keras_version": "3.5.0"}') -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("metadata.json", metadata)
        archive.writestr("config.json", config)
        archive.writestr("model.weights.h5", b"")
    return buffer.getvalue()


# Hostile configs: our own error, never a crash.
@pytest.mark.parametrize(
    "config",
    [
        b"[" * 100_000 + b"]" * 100_000,  # nesting deeper than the JSON parser's stack
        b"not json",
        b'{"config": {}}',  # no class_name
        b"\xff\xfe",
    ],
)
def test_a_hostile_keras_config_is_invalid(config: bytes) -> None:
    with pytest.raises(InvalidArtifact):
        read_source(BytesSource("m.keras", _keras_zip(config)), "m.keras")


def test_deeply_nested_layers_are_refused() -> None:
    layer: dict[str, object] = {"class_name": "Dense", "config": {"name": "d"}}
    for _ in range(100):
        layer = {"class_name": "Sequential", "config": {"layers": [layer]}}
    with pytest.raises(InvalidArtifact, match="nested"):
        read_source(BytesSource("m.keras", _keras_zip(json.dumps(layer).encode())), "m.keras")


def _read(name: str, data: bytes) -> Artifact | None:
    with contextlib.suppress(InvalidArtifact):
        return read_source(BytesSource(name, data), name)[0]
    return None


REAL = [
    MODELS / "tf2.21" / "lambda.h5",
    MODELS / "tf1.15" / "lstm.h5",
    MODELS / "tf2.15" / "lambda.keras",
]


@FAST
@given(st.sampled_from(REAL), st.data())
def test_truncated_keras_files_give_metadata_or_invalid_artifact(
    path: Path, data: st.DataObject
) -> None:
    blob = path.read_bytes()
    _read(path.name, blob[: data.draw(st.integers(0, len(blob) - 1))])


@FAST
@given(st.sampled_from(REAL), st.data())
def test_corrupted_keras_files_give_metadata_or_invalid_artifact(
    path: Path, data: st.DataObject
) -> None:
    blob = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 16))):
        # the HDF5 structures sit in the first few KB; aim most flips there
        at = data.draw(st.integers(0, min(len(blob), 4096) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    _read(path.name, bytes(blob))


@FAST
@given(st.binary(max_size=512))
def test_any_lambda_code_string_is_read_or_refused(data: bytes) -> None:
    config = {
        "class_name": "Sequential",
        "config": {
            "layers": [
                {
                    "class_name": "Lambda",
                    "config": {"function": [base64.b64encode(data).decode(), None, None]},
                }
            ]
        },
    }
    _read("m.keras", _keras_zip(json.dumps(config).encode()))


def test_a_local_file_source_and_bytes_read_alike() -> None:
    path = MODELS / "tf2.18" / "lstm.h5"
    (a,) = read_source(FileSource(path), "x.h5")
    (b,) = read_source(BytesSource("x.h5", path.read_bytes()), "x.h5")
    assert a == b
