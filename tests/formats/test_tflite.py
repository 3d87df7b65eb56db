"""The TFLite reader against files real converters wrote, and against hostile bytes.

The truth is tests/fixtures/tflite/models.json `tensorflow_reads`: each file as
TensorFlow's own generated FlatBuffers code reads it (tools/tflite/describe_models.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.errors import InvalidArtifact, LimitExceeded
from worker.formats import tflite, tflite_schema
from worker.formats.read import read_path, read_source
from worker.formats.source import BytesSource, FileSource
from worker.formats.tflite import read_tflite
from worker.model.artifact import artifact_from_json
from worker.model.tflite import TfliteModel

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite"
FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"
MODELS = {
    name: entry
    for name, entry in json.loads((FIXTURES / "models.json").read_text()).items()
    if "path" in entry
}
REAL = sorted(FIXTURES / entry["path"] for entry in MODELS.values())
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def model(name: str) -> TfliteModel:
    return read_tflite(FileSource(FIXTURES / MODELS[name]["path"]))


def test_every_converter_and_case_is_a_fixture() -> None:
    assert len(MODELS) == 51


# What TensorFlow's own reader says of each file, field by field.
@pytest.mark.parametrize("name", sorted(MODELS))
def test_reading_agrees_with_tensorflow(name: str) -> None:
    truth: dict[str, Any] = MODELS[name]["tensorflow_reads"]
    read = model(name)
    assert read.schema_version == truth["schema_version"]
    assert read.subgraphs == truth["subgraphs"]
    assert read.min_runtime_version == truth["min_runtime_version"]
    assert [
        {
            "builtin_code": c.builtin_code,
            "custom_code": c.custom_code,
            "deprecated_builtin_code": c.deprecated_builtin_code,
            "version": c.version,
        }
        for c in read.operator_codes
    ] == truth["operator_codes"]
    uses = [0] * len(read.operator_codes)
    for kind in read.operator_kinds:
        uses[kind.opcode_index] += kind.count
    assert uses == truth["operators"]


# The builtin code, as TensorFlow's GetBuiltinCode reads it: the larger of the two fields.
@pytest.mark.parametrize(
    ("name", "code", "deprecated", "op"),
    [
        ("tf2.12/cumsum", 128, 127, "CUMSUM"),  # past the byte field: written as 127 + 128
        ("tf2.12/gelu", 150, 127, "GELU"),
        ("tf1.15/dense", 9, 9, "FULLY_CONNECTED"),  # a v3 writer: only the byte field
    ],
)
def test_builtin_code_is_the_larger_field(name: str, code: int, deprecated: int, op: str) -> None:
    opcode = model(name).operator_codes[0]
    assert (opcode.code, opcode.deprecated_builtin_code, opcode.name) == (code, deprecated, op)


def test_select_tf_ops_are_custom_ops_named_flex() -> None:
    codes = model("tf2.12/flex_det").operator_codes
    assert [(c.name, c.is_custom, c.is_flex) for c in codes] == [
        ("RESHAPE", False, False),
        ("FlexMatrixDeterminant", True, True),
    ]


def test_a_custom_op_is_named_by_its_custom_code() -> None:
    custom = model("tf2.12/custom_det").operator_codes[1]
    assert (custom.name, custom.is_custom, custom.is_flex) == ("MatrixDeterminant", True, False)


def fully_connected_weights(name: str) -> Any:
    read = model(name)
    (kind,) = [
        k
        for k in read.operator_kinds
        if read.operator_codes[k.opcode_index].name == "FULLY_CONNECTED"
    ]
    return kind


# Per-channel weights: the 2.18 converter's, not the 2.15 converter's (same op version 4).
@pytest.mark.parametrize(("name", "scales"), [("tf2.15/dense_int8", 1), ("tf2.18/dense_int8", 4)])
def test_weights_quantization_scales_are_counted(name: str, scales: int) -> None:
    kind = fully_connected_weights(name)
    weights = kind.inputs[1]
    assert weights is not None and (weights.type, weights.scales) == ("INT8", scales)


def test_16x8_activations_are_int16() -> None:
    kind = fully_connected_weights("tf2.4/dense_int16x8")
    assert [s.type for s in kind.inputs if s is not None] == ["INT16", "INT8", "INT64"]


def test_tensor_rank_is_read() -> None:
    read = model("tf1.15/transpose_6d")
    (transpose,) = [
        k for k in read.operator_kinds if read.operator_codes[k.opcode_index].name == "TRANSPOSE"
    ]
    data = transpose.inputs[0]
    assert data is not None and data.rank == 6
    assert read.operator_codes[transpose.opcode_index].version == 1  # the 1.15 converter's


def test_operators_of_one_kind_collapse_with_a_count() -> None:
    read = model("tf1.15/transpose_6d")  # two RESHAPEs, of different shapes: two kinds
    reshapes = [k for k in read.operator_kinds if k.opcode_index == 0]
    assert [k.count for k in reshapes] == [1, 1] and reshapes[0].inputs != reshapes[1].inputs


def test_a_tflite_path_is_one_artifact_with_its_sha256() -> None:
    path = FIXTURES / MODELS["tf2.21/dense_int8"]["path"]
    (artifact,) = read_path(str(path))
    assert artifact.format == "tflite" and artifact.tflite is not None
    assert artifact.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert artifact.size == path.stat().st_size


def test_the_identifier_wins_over_the_name(tmp_path: Path) -> None:
    renamed = tmp_path / "model.pb"
    shutil.copy(FIXTURES / MODELS["tf2.12/gelu"]["path"], renamed)
    (artifact,) = read_path(str(renamed))
    assert artifact.format == "tflite"


def test_a_tflite_name_without_the_identifier_is_invalid(tmp_path: Path) -> None:
    fake = tmp_path / "model.tflite"
    fake.write_bytes(b"\x0a\x03abc" * 10)
    with pytest.raises(InvalidArtifact, match="no TFL3 identifier"):
        read_path(str(fake))


def test_the_schema_builders_file_is_read() -> None:
    (artifact,) = read_path(str(FOREIGN / "model.tflite"))
    assert artifact.format == "tflite" and artifact.tflite is not None


def test_a_folder_of_tflite_files_reports_each(tmp_path: Path) -> None:
    for name in ("a", "b"):
        shutil.copy(FIXTURES / MODELS["tf2.12/dense"]["path"], tmp_path / f"{name}.tflite")
    assert [a.path.rsplit("/", 1)[1] for a in read_path(str(tmp_path))] == ["a.tflite", "b.tflite"]


def test_metadata_round_trips_through_json() -> None:
    (artifact,) = read_path(str(FIXTURES / MODELS["tf2.18/dense_int16x8"]["path"]))
    assert artifact_from_json(json.loads(json.dumps(artifact.to_json()))) == artifact


class Counting(BytesSource):
    def __init__(self, name: str, data: bytes) -> None:
        super().__init__(name, data)
        self.read_bytes = 0

    def read_at(self, offset: int, length: int) -> bytes:
        self.read_bytes += length
        return super().read_at(offset, length)


def test_bytes_after_the_flatbuffer_are_never_read() -> None:
    # TFLite files may carry data after the flatbuffer (metadata zips, schema 3c buffers).
    blob = (FIXTURES / MODELS["tf2.21/dense_int8"]["path"]).read_bytes()
    source = Counting("big.tflite", blob + bytes(64 << 20))
    read_tflite(source)
    assert source.read_bytes <= 2 * tflite.PAGE


def test_a_cap_is_our_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tflite, "MAX_OPERATOR_CODES", 2)
    with pytest.raises(LimitExceeded, match="more than 2 operator codes"):
        model("tf2.12/dense_int8")


# --- hostile bytes: a model or our own error, never another exception -----------------------


def _read(name: str, data: bytes) -> None:
    with contextlib.suppress(InvalidArtifact):
        read_source(BytesSource(name, data), name)


@FAST
@given(st.binary(max_size=2048))
def test_random_bytes_give_a_model_or_invalid_artifact(data: bytes) -> None:
    _read("model.tflite", data)


@FAST
@given(st.binary(max_size=2048))
def test_random_bytes_after_the_identifier_give_a_model_or_invalid_artifact(data: bytes) -> None:
    _read("model.tflite", b"\x10\0\0\0TFL3" + data)


@FAST
@given(st.sampled_from(REAL), st.data())
def test_truncated_real_files_give_a_model_or_invalid_artifact(
    path: Path, data: st.DataObject
) -> None:
    blob = path.read_bytes()
    _read("model.tflite", blob[: data.draw(st.integers(0, len(blob) - 1))])


@FAST
@given(st.sampled_from(REAL), st.data())
def test_real_files_with_flipped_bytes_give_a_model_or_invalid_artifact(
    path: Path, data: st.DataObject
) -> None:
    blob = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    _read("model.tflite", bytes(blob))


# Offsets, lengths and vtable entries replaced by extreme values: what a hostile file uses
# to ask for huge allocations or reads far outside the file.
@FAST
@given(st.sampled_from(REAL), st.data())
def test_real_files_with_extreme_words_give_a_model_or_invalid_artifact(
    path: Path, data: st.DataObject
) -> None:
    blob = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(blob) // 4 - 1)) * 4
        word = data.draw(st.sampled_from([0, 1, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 20]))
        blob[at : at + 4] = struct.pack("<I", word)
    _read("model.tflite", bytes(blob))


def test_every_field_the_reader_uses_is_within_the_vtable_slots_read() -> None:
    slots = [v for k, v in vars(tflite_schema).items() if k.isupper() and isinstance(v, int)]
    assert max(slots) < tflite.SLOTS_READ
