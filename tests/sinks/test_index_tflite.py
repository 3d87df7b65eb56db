"""A .tflite artifact round-trips through the model index exactly (fleet changes re-check
it from the stored metadata)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.formats.read import read_path
from worker.model.index import IndexedModel
from worker.sinks.index_codec import Decoder, Encoder

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "tflite" / "models"
PATHS = sorted(MODELS.glob("*/*.tflite"))


@pytest.mark.parametrize("path", PATHS, ids=[f"{p.parent.name}/{p.stem}" for p in PATHS])
def test_tflite_entries_round_trip_exactly(path: Path) -> None:
    artifacts = tuple(read_path(str(path)))
    model = IndexedModel(
        "b", "k", "v1", "r", "rk", "compatible", artifacts, {}, {}, ("2.12.1",), ()
    )
    encoder = Encoder()
    decoded = Decoder(dict(encoder.parts), lambda ref: None).entry(encoder.entry(model))
    assert decoded == model
    assert decoded.artifacts[0].tflite == artifacts[0].tflite is not None
