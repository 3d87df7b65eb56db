"""A foreign model in the object store is named from its first bytes, as a local file is;
a Keras file there is read as a local one is."""

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
    body = (FOREIGN / "model.onnx").read_bytes() + bytes(24 << 20)  # 24 MB, three blocks
    client.put_object(Bucket="sniffed-big", Key="big.onnx", Body=body)
    fetched: list[int] = []
    with pytest.raises(UnsupportedArtifact, match="an ONNX model"):
        read_s3_artifacts(
            "s3://sniffed-big/big.onnx",
            Settings(s3_endpoint_url=endpoint),
            client,
            on_read=fetched.append,
        )
    assert len(fetched) == 1 and HEAD_BYTES <= fetched[0] < len(body)


KERAS = Path(__file__).resolve().parents[1] / "fixtures" / "keras" / "models"


@pytest.mark.parametrize("name", ["tf2.21/lambda.keras", "tf2.15/lstm.h5", "tf1.15/dense.h5"])
def test_a_keras_file_in_the_object_store_reads_as_the_local_file(endpoint: str, name: str) -> None:
    from dataclasses import replace

    from worker.formats.read import read_path

    client = s3(endpoint)
    client.create_bucket(Bucket="keras-read")
    client.put_object(Bucket="keras-read", Key=f"m/{name}", Body=(KERAS / name).read_bytes())
    (remote,) = read_s3_artifacts(
        f"s3://keras-read/m/{name}", Settings(s3_endpoint_url=endpoint), client
    )
    (local,) = read_path(str(KERAS / name))
    assert remote.keras is not None and remote == replace(local, path=remote.path)
