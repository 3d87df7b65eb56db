"""Large models read from a real S3 endpoint (moto's server): one pass over the bytes,
the same artifact as from a local file, tensor bytes skipped when the store holds
the object's SHA-256."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.services import s3
from worker.formats.read import read_path
from worker.proto import tensorflow_subset_pb2 as pb
from worker.settings import Settings
from worker.sinks.s3 import read_s3_artifacts

pytestmark = pytest.mark.services
TENSOR_MB = 5  # each past the reader's whole-message size and the reader's skip threshold


def frozen_graph(tensors: int) -> bytes:
    """Placeholder -> MatMul chain over Consts of TENSOR_MB each, as frozen weights are."""
    graph = pb.GraphDef(versions=pb.VersionDef(producer=1395))
    graph.node.add(name="x", op="Placeholder").attr["dtype"].type = pb.DT_FLOAT
    previous = "x"
    for i in range(tensors):
        const = graph.node.add(name=f"w{i}", op="Const")
        const.attr["dtype"].type = pb.DT_FLOAT
        tensor = const.attr["value"].tensor
        tensor.dtype = pb.DT_FLOAT
        tensor.tensor_shape.dim.add(size=TENSOR_MB << 18)
        tensor.tensor_content = bytes([i + 1]) * (TENSOR_MB << 20)
        matmul = graph.node.add(name=f"mm{i}", op="MatMul", input=[previous, f"w{i}"])
        matmul.attr["T"].type = pb.DT_FLOAT
        previous = f"mm{i}"
    return graph.SerializeToString()


def read(endpoint: str, url: str) -> tuple[Any, int]:
    received = [0]

    def count(size: int) -> None:
        received[0] += size

    settings = Settings(s3_endpoint_url=endpoint)
    (artifact,) = read_s3_artifacts(url, settings, client=s3(endpoint), on_read=count)
    return artifact, received[0]


@pytest.fixture(scope="module")
def large(endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    data = frozen_graph(4)
    path = tmp_path_factory.mktemp("large") / "frozen.pb"
    path.write_bytes(data)
    client = s3(endpoint)
    client.create_bucket(Bucket="large")
    client.put_object(Bucket="large", Key="crc/frozen.pb", Body=data)
    client.put_object(Bucket="large", Key="sha/frozen.pb", Body=data, ChecksumAlgorithm="SHA256")
    return data, path


def test_a_large_object_costs_its_bytes_once(endpoint: str, large: tuple[bytes, Path]) -> None:
    data, path = large
    artifact, received = read(endpoint, "s3://large/crc/frozen.pb")
    (local,) = read_path(str(path))
    assert artifact.sha256 == hashlib.sha256(data).hexdigest() == local.sha256
    assert artifact.graph == local.graph
    assert len(data) <= received <= len(data) * 1.05


def test_a_sha256_the_store_holds_lets_tensor_bytes_be_skipped(
    endpoint: str, large: tuple[bytes, Path]
) -> None:
    data, path = large
    artifact, received = read(endpoint, "s3://large/sha/frozen.pb")
    (local,) = read_path(str(path))
    assert artifact.sha256 == local.sha256 and artifact.graph == local.graph
    assert received < len(data) / 2
