"""The file features the TFLite reader finds, against what TensorFlow's own code finds.

The truth is tests/fixtures/tflite-features/models.json `tensorflow_reads`: each file
as TensorFlow's generated FlatBuffers code reads it (tools/tflite/describe_features.py),
for files converters wrote with one feature each (tools/tflite/build_features.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker.formats import tflite
from worker.formats.source import BytesSource, FileSource
from worker.formats.tflite import read_tflite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tflite-features"
MODELS: dict[str, Any] = {
    name: entry
    for name, entry in json.loads((FIXTURES / "models.json").read_text()).items()
    if "path" in entry
}


def features(name: str) -> tuple[str, ...]:
    return read_tflite(FileSource(FIXTURES / MODELS[name]["path"])).features


@pytest.mark.parametrize("name", sorted(MODELS))
def test_features_agree_with_tensorflow(name: str) -> None:
    assert list(features(name)) == MODELS[name]["tensorflow_reads"]["features"]


# One feature each, beside the plain file it was made from.
@pytest.mark.parametrize(
    ("name", "feature"),
    [
        ("tf2.21/buffer_offset", tflite.BUFFER_OFFSET),
        ("tf2.21/signatures", tflite.SIGNATURE_DEFS),
        ("tf2.21/shape_signature", tflite.SHAPE_SIGNATURE),
        ("tf2.21/sparse", tflite.SPARSE_TENSOR),
    ],
)
def test_each_case_shows_its_feature_and_the_bare_file_none(name: str, feature: str) -> None:
    assert feature in features(name)
    assert feature not in features("tf2.21/bare")


def test_the_bare_file_has_only_its_tensor_type() -> None:
    assert features("tf2.21/bare") == ("tensor-type-FLOAT32",)


class Counting(BytesSource):
    def __init__(self, name: str, data: bytes) -> None:
        super().__init__(name, data)
        self.read_bytes = 0

    def read_at(self, offset: int, length: int) -> bytes:
        self.read_bytes += length
        return super().read_at(offset, length)


def test_buffers_after_the_flatbuffer_are_found_without_reading_them() -> None:
    # the converter's buffer-offset file, with 64 MB more after it: only tables are read
    blob = (FIXTURES / MODELS["tf2.21/buffer_offset"]["path"]).read_bytes()
    source = Counting("big.tflite", blob + bytes(64 << 20))
    assert tflite.BUFFER_OFFSET in read_tflite(source).features
    assert source.read_bytes <= 2 * tflite.PAGE
