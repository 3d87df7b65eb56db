"""A foreign model in the object store is named from its first bytes, as a local file is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.services import s3
from worker.errors import UnsupportedArtifact
from worker.formats.sniff import HEAD_BYTES
from worker.settings import Settings
from worker.sinks.s3 import read_s3_artifacts

pytestmark = pytest.mark.services

FOREIGN = Path(__file__).resolve().parents[1] / "fixtures" / "foreign"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("model.onnx", "an ONNX model"),
        ("model.keras", "a Keras 3 model archive"),
    ],
)
def test_object_store_model_is_named(endpoint: str, name: str, said: str) -> None:
    client = s3(endpoint)
    client.create_bucket(Bucket="sniffed")
    client.put_object(Bucket="sniffed", Key=f"m/{name}", Body=(FOREIGN / name).read_bytes())
    with pytest.raises(UnsupportedArtifact, match=f"^s3://sniffed/m/{name}: {said}"):
        read_s3_artifacts(f"s3://sniffed/m/{name}", Settings(s3_endpoint_url=endpoint), client)


def test_only_the_first_block_of_a_large_object_is_fetched(endpoint: str) -> None:
    client = s3(endpoint)
    client.create_bucket(Bucket="sniffed-big")
    body = (FOREIGN / "model.h5").read_bytes() + bytes(24 << 20)  # 24 MB, three blocks
    client.put_object(Bucket="sniffed-big", Key="big.h5", Body=body)
    fetched: list[int] = []
    with pytest.raises(UnsupportedArtifact, match="an HDF5 file"):
        read_s3_artifacts(
            "s3://sniffed-big/big.h5",
            Settings(s3_endpoint_url=endpoint),
            client,
            on_read=fetched.append,
        )
    assert len(fetched) == 1 and HEAD_BYTES <= fetched[0] < len(body)
