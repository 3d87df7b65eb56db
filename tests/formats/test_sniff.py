"""Files tfcompat does not read are named in one line; TensorFlow's own never are.

The foreign fixtures were written by the formats' own libraries where they
install without TensorFlow or torch (tools/fixtures/foreign_formats.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.truth import SHARED
from worker.errors import UnsupportedArtifact
from worker.formats.read import is_model_file, read_path
from worker.formats.sniff import HEAD_BYTES, READ_FORMATS, keras_container, sniff, sniff_source
from worker.formats.source import BytesSource, FileSource

FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"
OWN = Path(__file__).resolve().parents[1] / "fixtures" / "tf-real" / "artifacts"


# Each fixture and the format it is named as.
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("model.onnx", "onnx"),  # onnx.helper + onnx.save
        ("model.safetensors", "safetensors"),
        ("model.gguf", "gguf"),
        ("model.pt", "pytorch"),  # torch.save's zip layout
        ("legacy_p2.pth", "pickle"),
        ("legacy_p5.pth", "pickle"),
        ("tfjs/model.json", "tfjs"),
        ("keras_architecture.json", "keras-json"),  # model.to_json()
    ],
)
def test_foreign_fixture_is_named(name: str, expected: str) -> None:
    found = sniff_source(FileSource(FOREIGN / name))
    assert found is not None and found.format == expected


# Keras files are read now (worker.formats.keras): never named foreign, told apart by content.
@pytest.mark.parametrize(
    ("name", "container"), [("model.h5", "hdf5"), ("model.keras", "keras-zip")]
)
def test_keras_files_are_not_foreign(name: str, container: str) -> None:
    assert sniff_source(FileSource(FOREIGN / name)) is None
    assert keras_container((FOREIGN / name).read_bytes()[:HEAD_BYTES]) == container


def tensorflow_files() -> list[Path]:
    """Every file a reader opens in both fixture sets: graphs, SavedModels, .meta,
    checkpoint indexes, archives."""
    archives = (".tar", ".tar.gz", ".tgz", ".zip")
    files = [
        path
        for root in (SHARED / "artifacts", OWN)
        if root.is_dir()
        for path in root.rglob("*")
        if path.is_file() and (is_model_file(path.name) or path.name.endswith(archives))
    ]
    assert len(files) > 100
    return files


def test_no_tensorflow_fixture_is_taken_for_a_foreign_format() -> None:
    misnamed = {
        str(path): found.format
        for path in tensorflow_files()
        if (found := sniff_source(FileSource(path))) is not None
    }
    assert misnamed == {}


# What must stay unplaced: TensorFlow protobufs built by hand at the edges of the ONNX
# rule, text, archives of TensorFlow models.
@pytest.mark.parametrize(
    "data",
    [
        b"\x08\x01\x12\x05hello",  # SavedModel: schema version 1, then meta_graphs only
        b"\x08\x01\x12\x02ab\x12\x02cd",  # SavedModel with two MetaGraphs
        b"\x0a\x03abc\x3a\x00",  # GraphDef / MetaGraphDef: field 1 length-delimited
        b"\x08\x00\x3a\x00",  # ir_version 0 is no ONNX version
        b"\x08\x01\x18\x01\x3a\x00",  # field 3 as a varint: not ModelProto
        b"node {\n  name: 'x'\n  op: 'Const'\n}\n",  # text GraphDef
        b"\x0a\x02\x0a\x00TFL3",  # GraphDef whose node name would put TFL3 at offset 4
        b"\x80\x01",  # pickle protocol 1 is not written by torch
        b"GGUF\x00\x00\x00\x00",  # GGUF version 0
        b'\x20\x00\x00\x00\x00\x00\x00\x00{"',  # safetensors header longer than the file
        b"",
    ],
)
def test_tensorflow_and_unknown_bytes_are_not_placed(data: bytes) -> None:
    assert sniff(data) is None


def test_zip_of_a_tensorflow_model_is_left_to_the_archive_reader(tmp_path: Path) -> None:
    path = tmp_path / "model.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata.json", "{}")
        archive.writestr("config.json", "{}")
        archive.writestr("1/saved_model.pb", b"\x08\x01")
    assert sniff_source(FileSource(path)) is None


def test_hdf5_after_a_user_block_is_a_keras_container() -> None:
    data = bytes(512) + (FOREIGN / "model.h5").read_bytes()
    assert sniff(data) is None and keras_container(data) == "hdf5"


def test_only_the_first_bytes_are_read() -> None:
    class Counting(BytesSource):
        asked: list[tuple[int, int]] = []

        def read_at(self, offset: int, length: int) -> bytes:
            self.asked.append((offset, length))
            return super().read_at(offset, length)

    source = Counting("big.onnx", (FOREIGN / "model.onnx").read_bytes() + bytes(4 * HEAD_BYTES))
    assert sniff_source(source) is not None
    assert source.asked == [(0, HEAD_BYTES)]


def test_reading_a_foreign_file_says_what_it_is_in_one_line() -> None:
    with pytest.raises(UnsupportedArtifact) as caught:
        read_path(str(FOREIGN / "model.onnx"))
    message = str(caught.value)
    assert message.startswith(f"{FOREIGN / 'model.onnx'}: an ONNX model")
    assert READ_FORMATS in message and "Keras models (.keras, .h5)" in message
    assert "TFLite flatbuffers (.tflite)" in message
    assert "\n" not in message and "wire type" not in message


def test_a_tflite_flatbuffer_is_left_to_the_tflite_reader() -> None:
    converted = FOREIGN.parent / "tflite" / "models" / "tf2.21" / "dense.tflite"
    for path in (FOREIGN / "model.tflite", converted):  # TFLite schema builders; a converter
        assert sniff_source(FileSource(path)) is None


def test_the_unknown_format_line_names_tflite_among_the_formats_read() -> None:
    assert "TFLite flatbuffers (.tflite)" in READ_FORMATS


def test_a_folder_without_a_model_names_the_foreign_files_in_it() -> None:
    with pytest.raises(UnsupportedArtifact) as caught:
        read_path(str(FOREIGN / "tfjs"))
    assert "no TensorFlow model found, only model.json: a TensorFlow.js model" in str(caught.value)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=4096), st.one_of(st.none(), st.integers(0, 1 << 40)))
def test_sniffing_any_bytes_never_raises(data: bytes, size: int | None) -> None:
    sniff(data, size)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(
        [
            b"PK\x03\x04",
            b"\x08",
            b"{",
            b"\x89HDF\r\n\x1a\n",
            b"GGUF",
            b"\x80\x04",
            b"\x18\0\0\0TFL3",
        ]
    ),
    st.binary(max_size=512),
)
def test_sniffing_bytes_that_start_like_a_format_never_raises(magic: bytes, rest: bytes) -> None:
    sniff(magic + rest)
