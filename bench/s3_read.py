"""Bench: what reading a model from S3 costs, beside one plain GET of the same object.

Writes a frozen graph shaped like Keras' ResNet50 (its 25.6 M float weights as
Const nodes: about 103 MB), uploads it to a local S3 endpoint (moto's server)
twice: as boto3 uploads by default (the store keeps a CRC32), and with
`ChecksumAlgorithm=SHA256` (the store keeps the object's SHA-256). Then, in the
same run, measures
  - one GET of the whole object (the reference: 1.00x its bytes, 1 request), and
  - `read_s3_artifacts` (what `tfcompat check s3://...` and the worker read),
as body bytes received / object size, requests sent, and wall time / the GET's.
Both reads must give the same artifact with the file's sha256.

Run: .venv/bin/python bench/s3_read.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.local_s3 import AWS_ENV, client, moto_s3, table  # noqa: E402
from bench.rows import row  # noqa: E402
from worker.proto import tensorflow_subset_pb2 as pb  # noqa: E402

# (stage blocks, bottleneck filters) of ResNet50; conv1 is 7x7x3x64, the head 2048x1000.
STAGES = [(3, (64, 64, 256)), (4, (128, 128, 512)), (6, (256, 256, 1024)), (3, (512, 512, 2048))]


def _const(graph: pb.GraphDef, name: str, shape: tuple[int, ...], rng: random.Random) -> str:
    node = graph.node.add(name=name, op="Const")
    node.attr["dtype"].type = pb.DT_FLOAT
    tensor = node.attr["value"].tensor
    tensor.dtype = pb.DT_FLOAT
    count = 1
    for size in shape:
        tensor.tensor_shape.dim.add(size=size)
        count *= size
    tensor.tensor_content = rng.randbytes(4 * count)
    return name


def _op(graph: pb.GraphDef, name: str, op: str, inputs: list[str], **attrs: Any) -> str:
    node = graph.node.add(name=name, op=op, input=inputs)
    node.attr["T"].type = pb.DT_FLOAT
    for key, value in attrs.items():
        if isinstance(value, bool):
            node.attr[key].b = value
        elif isinstance(value, float):
            node.attr[key].f = value
        elif isinstance(value, str):
            node.attr[key].s = value.encode()
        elif isinstance(value, list):
            node.attr[key].list.i.extend(value)
        else:
            node.attr[key].type = value
    return name


def _conv_bn(graph: pb.GraphDef, x: str, name: str, k: int, c_in: int, c_out: int, rng: Any) -> str:
    w = _const(graph, f"{name}/kernel", (k, k, c_in, c_out), rng)
    y = _op(
        graph, f"{name}/Conv2D", "Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME",
        data_format="NHWC", dilations=[1, 1, 1, 1], use_cudnn_on_gpu=True,
    )  # fmt: skip
    y = _op(graph, f"{name}/BiasAdd", "BiasAdd", [y, _const(graph, f"{name}/bias", (c_out,), rng)])
    params = [_const(graph, f"{name}/bn/{p}", (c_out,), rng) for p in ("g", "b", "m", "v")]
    return _op(
        graph, f"{name}/bn/FusedBatchNormV3", "FusedBatchNormV3", [y, *params],
        U=pb.DT_FLOAT, epsilon=1.001e-5, data_format="NHWC", is_training=False,
    )  # fmt: skip


def resnet50_graph(seed: int = 50) -> bytes:
    rng = random.Random(seed)
    graph = pb.GraphDef()
    graph.versions.producer = 1395
    x = graph.node.add(name="input", op="Placeholder")
    x.attr["dtype"].type = pb.DT_FLOAT
    y = _op(graph, "conv1/Relu", "Relu", [_conv_bn(graph, "input", "conv1", 7, 3, 64, rng)])
    channels = 64
    for stage, (blocks, (f1, f2, f3)) in enumerate(STAGES, start=2):
        for block in range(1, blocks + 1):
            name = f"conv{stage}_block{block}"
            shortcut = y
            if block == 1:
                shortcut = _conv_bn(graph, y, f"{name}_0", 1, channels, f3, rng)
            z = _op(
                graph,
                f"{name}_1/Relu",
                "Relu",
                [_conv_bn(graph, y, f"{name}_1", 1, channels, f1, rng)],
            )
            z = _op(
                graph, f"{name}_2/Relu", "Relu", [_conv_bn(graph, z, f"{name}_2", 3, f1, f2, rng)]
            )
            z = _conv_bn(graph, z, f"{name}_3", 1, f2, f3, rng)
            y = _op(
                graph, f"{name}_out", "Relu", [_op(graph, f"{name}_add", "AddV2", [shortcut, z])]
            )
            channels = f3
    axes = graph.node.add(name="pool/axes", op="Const")
    axes.attr["dtype"].type = pb.DT_INT32
    axes.attr["value"].tensor.dtype = pb.DT_INT32
    axes.attr["value"].tensor.int_val.extend([1, 2])
    y = _op(graph, "pool", "Mean", [y, "pool/axes"], Tidx=pb.DT_INT32, keep_dims=False)
    y = _op(graph, "fc/MatMul", "MatMul", [y, _const(graph, "fc/kernel", (2048, 1000), rng)],
            transpose_a=False, transpose_b=False)  # fmt: skip
    y = _op(graph, "fc/BiasAdd", "BiasAdd", [y, _const(graph, "fc/bias", (1000,), rng)])
    _op(graph, "predictions", "Softmax", [y])
    return graph.SerializeToString()


class Counter:
    """Requests a client sends (retries included), from botocore's own events."""

    def __init__(self, s3: Any) -> None:
        self.requests = 0
        s3.meta.events.register("before-send.s3.*", self._sent)

    def _sent(self, **_: Any) -> None:
        self.requests += 1


def one_get(s3: Any, bucket: str, key: str) -> tuple[int, int, float]:
    counter = Counter(s3)
    start = time.perf_counter()
    size = len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    return size, counter.requests, time.perf_counter() - start


def tfcompat_read(endpoint: str, bucket: str, key: str) -> tuple[int, int, float, Any]:
    from worker.settings import Settings
    from worker.sinks.s3 import read_s3_artifacts

    s3 = client(endpoint)
    counter = Counter(s3)
    received = [0]

    def count(size: int) -> None:
        received[0] += size

    start = time.perf_counter()
    (artifact,) = read_s3_artifacts(
        f"s3://{bucket}/{key}", Settings(s3_endpoint_url=endpoint), client=s3, on_read=count
    )
    return received[0], counter.requests, time.perf_counter() - start, artifact


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each read; medians shown")
    args = parser.parse_args()
    import os

    os.environ.update(AWS_ENV)
    data = resnet50_graph()
    sha256 = hashlib.sha256(data).hexdigest()
    rows = [("read", "bytes / object", "requests", "wall / one GET", "sha256 ok")]
    with tempfile.TemporaryDirectory(prefix="tfcompat-bench-"), moto_s3() as endpoint:
        s3 = client(endpoint)
        s3.create_bucket(Bucket="bench")
        s3.put_object(Bucket="bench", Key="resnet50/frozen.pb", Body=data)
        s3.put_object(
            Bucket="bench", Key="resnet50-sha/frozen.pb", Body=data, ChecksumAlgorithm="SHA256"
        )
        print(f"object: ResNet50-shaped frozen graph, {len(data) / 1e6:.1f} MB", file=sys.stderr)
        for key, label in [
            ("resnet50/frozen.pb", "CRC32 upload (boto3 default)"),
            ("resnet50-sha/frozen.pb", "SHA-256 upload"),
        ]:
            gets, reads = [], []
            for _ in range(args.repeat):
                gets.append(one_get(s3, "bench", key))
                reads.append(tfcompat_read(endpoint, "bench", key))
            get_wall = statistics.median(g[2] for g in gets)
            read_wall = statistics.median(r[2] for r in reads)
            rows.append((f"one GET [reference], {label}", "1.00x", str(gets[0][1]), "1.00x", "-"))
            received, requests, _, artifact = reads[-1]
            row(
                f"`check s3://...` 103 MB frozen graph, {label}",
                f"{received / len(data):.2f}x the object's bytes, {requests} requests, "
                f"{read_wall / get_wall:.2f}x one GET's wall",
                f"one GET: 1.00x, {gets[0][1]} request",
                "<= 1.05x the bytes",
                received / len(data) <= 1.05 and artifact.sha256 == sha256,
            )
            rows.append(
                (
                    f"tfcompat read, {label}",
                    f"{received / len(data):.2f}x",
                    str(requests),
                    f"{read_wall / get_wall:.2f}x",
                    "yes" if artifact.sha256 == sha256 else "NO",
                )
            )
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
