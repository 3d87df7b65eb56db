"""HDF5 root attributes read without libhdf5, on real Keras H5 files and hostile bytes."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.errors import InvalidArtifact, UnsupportedArtifact
from worker.formats.hdf5 import root_string_attributes
from worker.formats.read import read_source
from worker.formats.source import BytesSource

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "models"
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read(name: str, data: bytes) -> None:
    with contextlib.suppress(InvalidArtifact):
        read_source(BytesSource(name, data), name)


def test_an_hdf5_file_after_a_user_block_is_read() -> None:
    data = bytes(512) + (MODELS / "tf2.15" / "dense.h5").read_bytes()
    attributes = root_string_attributes(BytesSource("dense.h5", data))
    assert attributes["keras_version"] == "2.15.0"


def test_a_weights_only_h5_is_named_not_misread(tmp_path: Path) -> None:
    data = (MODELS / "tf2.15" / "dense.h5").read_bytes()
    # the same file with the model_config attribute renamed: what save_weights leaves
    blob = data.replace(b"model_config", b"model_xonfig")
    with pytest.raises(UnsupportedArtifact, match="Keras weights"):
        read_source(BytesSource("weights.h5", blob), "weights.h5")


@FAST
@given(st.binary(max_size=2048))
def test_random_bytes_after_the_hdf5_signature_give_invalid_artifact(rest: bytes) -> None:
    _read("m.h5", b"\x89HDF\r\n\x1a\n" + rest)
