"""Synthetic frozen GraphDefs for the read benchmarks, written with our own proto classes.

Each file is written node by node (serialized `GraphDef(node=[...])` pieces
concatenate into one GraphDef, as protobuf merges repeated fields), so a 1 GB
graph never sits in this process's memory.

- `write_resnet50`: the shape of a frozen ResNet50 (53 convolutions and the
  classifier, each a Const kernel, Conv2D/MatMul, Const bias, BiasAdd, Relu;
  ~320 nodes, ~100 MB of float32 weights in `tensor_content`). `width`
  scales every channel count, so width 3.2 gives the same ~320 nodes around
  ~1 GB of weights: the metadata stays, the tensor bytes grow.
- `write_many_nodes`: a chain of 400 convolution layers (Const kernel, Conv2D, Const
  bias, BiasAdd, Relu: 2,000 nodes) of 80 channels, ~92 MB of weights: the same bytes
  as ResNet50 spread over six times the nodes.
- `write_empty_nodes`: N empty NodeDefs, two bytes each (the hostile case
  where per-node cost, not bytes, dominates).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from worker.proto import tensorflow_subset_pb2 as pb

PRODUCER = 2474
# (blocks, bottleneck channels, output channels) of ResNet50's four stages.
STAGES = ((3, 64, 256), (4, 128, 512), (6, 256, 1024), (3, 512, 2048))


def _float_attr(node: pb.NodeDef, name: str = "T") -> None:
    node.attr[name].type = pb.DT_FLOAT


def _const(name: str, shape: tuple[int, ...]) -> pb.NodeDef:
    node = pb.NodeDef(name=name, op="Const")
    _float_attr(node, "dtype")
    tensor = node.attr["value"].tensor
    tensor.dtype = pb.DT_FLOAT
    count = 1
    for size in shape:
        tensor.tensor_shape.dim.add(size=size)
        count *= size
    tensor.tensor_content = bytes(4 * count)
    return node


def _conv_layer(
    name: str, source: str, kernel: int, cin: int, cout: int, stride: int
) -> Iterator[pb.NodeDef]:
    yield _const(f"{name}/kernel", (kernel, kernel, cin, cout))
    conv = pb.NodeDef(name=f"{name}/Conv2D", op="Conv2D", input=[source, f"{name}/kernel"])
    _float_attr(conv)
    conv.attr["strides"].list.i.extend([1, stride, stride, 1])
    conv.attr["padding"].s = b"SAME"
    conv.attr["data_format"].s = b"NHWC"
    conv.attr["dilations"].list.i.extend([1, 1, 1, 1])
    conv.attr["use_cudnn_on_gpu"].b = True
    conv.attr["explicit_paddings"].list.SetInParent()
    yield conv
    yield _const(f"{name}/bias", (cout,))
    add = pb.NodeDef(name=f"{name}/BiasAdd", op="BiasAdd", input=[conv.name, f"{name}/bias"])
    _float_attr(add)
    add.attr["data_format"].s = b"NHWC"
    yield add


def _relu(name: str, source: str) -> pb.NodeDef:
    node = pb.NodeDef(name=name, op="Relu", input=[source])
    _float_attr(node)
    return node


def resnet50_nodes(width: float = 1.0) -> Iterator[pb.NodeDef]:
    """ResNet50's layers in graph order; `width` multiplies every channel count."""

    def w(channels: int) -> int:
        return max(1, round(channels * width))

    image = pb.NodeDef(name="input", op="Placeholder")
    _float_attr(image, "dtype")
    yield image
    yield from _conv_layer("conv1", "input", 7, 3, w(64), 2)
    yield (last := _relu("conv1/Relu", "conv1/BiasAdd"))
    cin = w(64)
    for stage, (blocks, mid, out) in enumerate(STAGES, start=2):
        for block in range(1, blocks + 1):
            prefix = f"conv{stage}_block{block}"
            stride = 2 if block == 1 and stage > 2 else 1
            shortcut = last.name
            if block == 1:
                yield from _conv_layer(f"{prefix}_0", last.name, 1, cin, w(out), stride)
                shortcut = f"{prefix}_0/BiasAdd"
            source = last.name
            for i, (kernel, channels) in enumerate(((1, mid), (3, mid), (1, out)), start=1):
                yield from _conv_layer(
                    f"{prefix}_{i}",
                    source,
                    kernel,
                    cin if i == 1 else w(mid),
                    w(channels),
                    stride if i == 1 else 1,
                )
                source = f"{prefix}_{i}/BiasAdd"
                if i < 3:
                    yield (relu := _relu(f"{prefix}_{i}/Relu", source))
                    source = relu.name
            add = pb.NodeDef(name=f"{prefix}_add", op="AddV2", input=[shortcut, source])
            _float_attr(add)
            yield add
            yield (last := _relu(f"{prefix}_out", add.name))
            cin = w(out)
    pool = pb.NodeDef(name="avg_pool", op="Mean", input=[last.name, "avg_pool/axes"])
    _float_attr(pool)
    pool.attr["keep_dims"].b = False
    pool.attr["Tidx"].type = pb.DT_INT32
    axes = pb.NodeDef(name="avg_pool/axes", op="Const")
    axes.attr["dtype"].type = pb.DT_INT32
    axes.attr["value"].tensor.dtype = pb.DT_INT32
    axes.attr["value"].tensor.tensor_shape.dim.add(size=2)
    axes.attr["value"].tensor.int_val.extend([1, 2])
    yield axes
    yield pool
    yield _const("predictions/kernel", (cin, 1000))
    matmul = pb.NodeDef(
        name="predictions/MatMul", op="MatMul", input=[pool.name, "predictions/kernel"]
    )
    _float_attr(matmul)
    matmul.attr["transpose_a"].b = False
    matmul.attr["transpose_b"].b = False
    yield matmul
    softmax = pb.NodeDef(name="predictions/Softmax", op="Softmax", input=[matmul.name])
    _float_attr(softmax)
    yield softmax


def _write_nodes(out: BinaryIO, nodes: Iterator[pb.NodeDef]) -> int:
    count = 0
    for node in nodes:
        out.write(pb.GraphDef(node=[node]).SerializeToString())
        count += 1
    out.write(pb.GraphDef(versions=pb.VersionDef(producer=PRODUCER)).SerializeToString())
    return count


def write_resnet50(path: Path, width: float = 1.0) -> int:
    """Write the graph; returns its node count."""
    with path.open("wb") as out:
        return _write_nodes(out, resnet50_nodes(width))


def many_nodes(layers: int = 400, channels: int = 80) -> Iterator[pb.NodeDef]:
    image = pb.NodeDef(name="input", op="Placeholder")
    _float_attr(image, "dtype")
    yield image
    source = "input"
    for layer in range(layers):
        cin = 3 if layer == 0 else channels
        yield from _conv_layer(f"conv{layer}", source, 3, cin, channels, 1)
        yield (relu := _relu(f"conv{layer}/Relu", f"conv{layer}/BiasAdd"))
        source = relu.name


def write_many_nodes(path: Path) -> int:
    with path.open("wb") as out:
        return _write_nodes(out, many_nodes())


def write_empty_nodes(path: Path, count: int) -> int:
    with path.open("wb") as out:
        out.write(b"\x0a\x00" * count)
        out.write(pb.GraphDef(versions=pb.VersionDef(producer=PRODUCER)).SerializeToString())
    return count


WRITERS = {
    "resnet50": write_resnet50,
    "1gb": lambda path: write_resnet50(path, width=3.2),
    "many-nodes": write_many_nodes,
    "empty-nodes": lambda path: write_empty_nodes(path, 1_500_000),
}


if __name__ == "__main__":
    # python bench/_graphs.py KIND PATH: writes one input and prints its node count, in a
    # process of its own so that the benchmark's own memory stays small.
    import sys

    print(WRITERS[sys.argv[1]](Path(sys.argv[2])))
