"""Run the ops a generic node cannot reach, with inputs shaped as each op needs (own Python).

    <venv>/bin/python tools/kernels/structured.py [--skip OP,...] > RESULTS.jsonl

tools/kernels/probe.py builds nodes from the OpDef alone: every input one [2, 3]
tensor, other attrs at their defaults. Matrix products, convolutions, pools, batch
norms, transposes, tiles, seeded random ops, CTC decoding and the like need inputs
of related shapes or attrs without defaults; BUILDERS gives each such op (picked by
how often the fixtures' models use it: tools/kernels/fixture_ops.py) its shapes and
attrs. The swept input takes each input class's values (probe.CLASS_VALUES, cycled to
the shape; `empty` gives it a zero-sized first dimension), the other inputs fixed
values; every variant (an attr set, a layout) is a layout of its own. Same output
lines as probe.py (layout names prefixed `s:`), so tools/kernels/sweep.py merges them.

Runs under every Python a TensorFlow release came with (3.7).
"""

from __future__ import print_function

import argparse
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import probe  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from tensorflow.core.framework import attr_value_pb2, types_pb2  # noqa: E402

v1 = tf.compat.v1
FLOATS = ("DT_FLOAT", "DT_HALF", "DT_BFLOAT16", "DT_DOUBLE")
NUMBERS = FLOATS + ("DT_INT32", "DT_INT64")
CLASSES = ("ordinary", "halves", "special", "large", "tiny", "empty", "indices")


def D(*shape):
    """The swept input: the class's values of the swept dtype, cycled to `shape`."""
    return ("data", shape)


def S(*shape):
    """An input of the swept dtype holding the ordinary class's values."""
    return ("same", shape)


def F(dtype, value):
    """A fixed input."""
    return ("fixed", dtype, value)


def ints(*values):
    return {"list": {"i": [str(v) for v in values]}}


def s(text):
    return {"s": base64.b64encode(text.encode()).decode()}


NHWC = {"strides": ints(1, 1, 1, 1), "padding": s("SAME")}
VALID = {"strides": ints(1, 1, 1, 1), "padding": s("VALID")}
POOL = {"ksize": ints(1, 2, 2, 1), "strides": ints(1, 1, 1, 1), "padding": s("SAME")}
SEEDS = {"seed": {"i": "1"}, "seed2": {"i": "2"}}
SHAPE23 = F("DT_INT32", [2, 3])

# op -> (type attr, dtypes, {variant: (attrs, inputs)})
BUILDERS = {
    "MatMul": (
        "T",
        NUMBERS,
        {
            "plain": ({}, [D(2, 3), S(3, 2)]),
            "transpose_b": ({"transpose_b": {"b": True}}, [D(2, 3), S(2, 3)]),
        },
    ),
    "BatchMatMulV2": ("T", NUMBERS, {"plain": ({}, [D(1, 2, 3), S(1, 3, 2)])}),
    "BatchMatMulV3": (
        "Ta",
        NUMBERS,
        {"plain": ({"Tb": {"type": "$"}, "Tout": {"type": "$"}}, [D(1, 2, 3), S(1, 3, 2)])},
    ),
    "BatchMatMul": ("T", NUMBERS, {"plain": ({}, [D(1, 2, 3), S(1, 3, 2)])}),
    "BiasAdd": ("T", NUMBERS, {"nhwc": ({}, [D(2, 3), S(3)])}),
    "Conv2D": (
        "T",
        FLOATS + ("DT_INT32",),
        {
            "same": (NHWC, [D(1, 2, 3, 1), S(2, 2, 1, 1)]),
            "valid": (VALID, [D(1, 2, 3, 1), S(2, 2, 1, 1)]),
        },
    ),
    "DepthwiseConv2dNative": ("T", FLOATS, {"same": (NHWC, [D(1, 2, 3, 1), S(2, 2, 1, 1)])}),
    "Conv2DBackpropInput": (
        "T",
        FLOATS + ("DT_INT32",),
        {"same": (NHWC, [F("DT_INT32", [1, 2, 3, 1]), S(2, 2, 1, 1), D(1, 2, 3, 1)])},
    ),
    "Conv2DBackpropFilter": (
        "T",
        FLOATS,
        {"same": (NHWC, [D(1, 2, 3, 1), F("DT_INT32", [2, 2, 1, 1]), S(1, 2, 3, 1)])},
    ),
    "MaxPool": ("T", NUMBERS, {"same": (POOL, [D(1, 2, 3, 1)])}),
    "AvgPool": ("T", FLOATS, {"same": (POOL, [D(1, 2, 3, 1)])}),
    "FusedBatchNormV3": (
        "T",
        ("DT_FLOAT", "DT_HALF", "DT_BFLOAT16"),
        {
            "inference": (
                {"U": {"type": "DT_FLOAT"}, "is_training": {"b": False}},
                [
                    D(1, 2, 1, 3),
                    F("DT_FLOAT", [1.0, 2.0, 0.5]),
                    F("DT_FLOAT", [0.0, -1.0, 0.25]),
                    F("DT_FLOAT", [0.5, 0.0, -1.0]),
                    F("DT_FLOAT", [1.0, 4.0, 0.01]),
                ],
            )
        },
    ),
    "FusedBatchNorm": (
        "T",
        ("DT_FLOAT",),
        {
            "inference": (
                {"is_training": {"b": False}},
                [
                    D(1, 2, 1, 3),
                    F("DT_FLOAT", [1.0, 2.0, 0.5]),
                    F("DT_FLOAT", [0.0, -1.0, 0.25]),
                    F("DT_FLOAT", [0.5, 0.0, -1.0]),
                    F("DT_FLOAT", [1.0, 4.0, 0.01]),
                ],
            )
        },
    ),
    "Transpose": (
        "T",
        NUMBERS + ("DT_BOOL", "DT_UINT8"),
        {"perm": ({}, [D(2, 3), F("DT_INT32", [1, 0])])},
    ),
    "Tile": (
        "T",
        NUMBERS + ("DT_BOOL", "DT_UINT8"),
        {"multiples": ({}, [D(2, 3), F("DT_INT32", [2, 1])])},
    ),
    "Reshape": ("T", NUMBERS + ("DT_BOOL",), {"shape": ({}, [D(2, 3), F("DT_INT32", [3, -1])])}),
    "Split": ("T", NUMBERS, {"axis0": ({"num_split": {"i": "2"}}, [F("DT_INT32", 0), D(2, 3)])}),
    "TensorScatterUpdate": (
        "T",
        NUMBERS,
        {"rows": ({}, [D(2, 3), F("DT_INT32", [[1], [0]]), S(2, 3)])},
    ),
    "BatchMatrixDeterminant": ("T", ("DT_FLOAT", "DT_DOUBLE"), {"square": ({}, [D(1, 2, 2)])}),
    "MatrixDeterminant": (
        "T",
        ("DT_FLOAT", "DT_HALF", "DT_DOUBLE"),
        {"square": ({}, [D(1, 2, 2)])},
    ),
    "MatrixInverse": ("T", ("DT_FLOAT", "DT_HALF", "DT_DOUBLE"), {"square": ({}, [D(1, 2, 2)])}),
    "CTCGreedyDecoder": (
        "T",
        ("DT_FLOAT", "DT_DOUBLE"),
        {"merge": ({}, [D(2, 1, 3), F("DT_INT32", [2])])},
    ),
    "RandomUniform": (
        "T",
        ("DT_INT32",),
        {"float": (dict(SEEDS, dtype={"type": "DT_FLOAT"}), [SHAPE23])},
    ),
    "RandomStandardNormal": (
        "T",
        ("DT_INT32",),
        {"float": (dict(SEEDS, dtype={"type": "DT_FLOAT"}), [SHAPE23])},
    ),
    "TruncatedNormal": (
        "T",
        ("DT_INT32",),
        {"float": (dict(SEEDS, dtype={"type": "DT_FLOAT"}), [SHAPE23])},
    ),
    "StatelessRandomUniformV2": (
        "Tshape",
        ("DT_INT32",),
        {
            "philox": (
                {"dtype": {"type": "DT_FLOAT"}},
                [SHAPE23, F("DT_UINT64", [7]), F("DT_UINT64", [0, 3]), F("DT_INT32", 1)],
            )
        },
    ),
    "StatelessRandomNormalV2": (
        "Tshape",
        ("DT_INT32",),
        {
            "philox": (
                {"dtype": {"type": "DT_FLOAT"}},
                [SHAPE23, F("DT_UINT64", [7]), F("DT_UINT64", [0, 3]), F("DT_INT32", 1)],
            )
        },
    ),
    "StatelessRandomUniform": (
        "T",
        ("DT_INT32",),
        {"seeded": ({"dtype": {"type": "DT_FLOAT"}}, [SHAPE23, F("DT_INT64", [1, 2])])},
    ),
    "StatelessRandomNormal": (
        "T",
        ("DT_INT32",),
        {"seeded": ({"dtype": {"type": "DT_FLOAT"}}, [SHAPE23, F("DT_INT64", [1, 2])])},
    ),
    "StatelessRandomGetKeyCounter": (
        "Tseed",
        ("DT_INT64",),
        {"seed": ({}, [F("DT_INT64", [1, 2])])},
    ),
    "StaticRegexFullMatch": (
        None,
        ("DT_STRING",),
        {"digits": ({"pattern": s("[0-9.]+")}, [D(2, 3)])},
    ),
    "StaticRegexReplace": (
        None,
        ("DT_STRING",),
        {"digits": ({"pattern": s("[0-9]"), "rewrite": s("#")}, [D(2, 3)])},
    ),
    "EnsureShape": (
        "T",
        NUMBERS,
        {"2x3": ({"shape": {"shape": {"dim": [{"size": "2"}, {"size": "3"}]}}}, [D(2, 3)])},
    ),
    "ResizeBilinear": (
        "T",
        NUMBERS,
        {
            "plain": ({}, [D(1, 2, 3, 1), F("DT_INT32", [3, 5])]),
            "half_pixel": (
                {"half_pixel_centers": {"b": True}},
                [D(1, 2, 3, 1), F("DT_INT32", [3, 5])],
            ),
        },
    ),
    "ResizeNearestNeighbor": (
        "T",
        NUMBERS,
        {
            "plain": ({}, [D(1, 2, 3, 1), F("DT_INT32", [3, 5])]),
            "half_pixel": (
                {"half_pixel_centers": {"b": True}},
                [D(1, 2, 3, 1), F("DT_INT32", [3, 5])],
            ),
        },
    ),
    "Softmax": ("T", FLOATS, {"rows": ({}, [D(2, 3)])}),
    "Mean": ("T", NUMBERS, {"axis1": ({}, [D(2, 3), F("DT_INT32", 1)])}),
}


def _input(spec, dtype, cls):
    kind = spec[0]
    if kind == "fixed":
        return spec[1], probe._array(spec[1], spec[2])
    value = probe.class_value(dtype, cls if kind == "data" else "ordinary")
    if value is None:
        return dtype, None
    shape = spec[1]
    if value == "EMPTY":
        return dtype, probe._array(dtype, "EMPTY").reshape((0,) + tuple(shape[1:]))
    flat = np.array(value, dtype=object).ravel().tolist()
    size = int(np.prod(shape)) if shape else 1
    cycled = [flat[i % len(flat)] for i in range(size)]
    array = probe._array(dtype, cycled)
    return dtype, array.reshape(shape)


def build_op(op_def, type_attr, dtypes, variants):
    allowed = None
    for attr in op_def.attr:
        if attr.name == type_attr and attr.HasField("allowed_values"):
            allowed = [types_pb2.DataType.Name(t) for t in attr.allowed_values.list.type]
    runs = []
    for dtype in dtypes:
        if allowed is not None and dtype not in allowed:
            continue
        graph = tf.Graph()
        nodes = []
        with graph.as_default():
            create = getattr(graph, "_create_op_internal", None) or graph.create_op
            for variant, (attrs, specs) in sorted(variants.items()):
                for cls in CLASSES:
                    run = {"dtype": dtype, "class": cls, "layout": "s:" + variant}
                    feeds, inputs = {}, []
                    for spec in specs:
                        its, array = _input(spec, dtype, cls)
                        if array is None:
                            inputs = None
                            break
                        holder = v1.placeholder(
                            tf.as_dtype(types_pb2.DataType.Value(its)), shape=array.shape
                        )
                        feeds[holder] = array
                        inputs.append(holder)
                    if inputs is None:
                        continue
                    values = {}
                    for name, raw in attrs.items():
                        raw = {"type": dtype} if raw == {"type": "$"} else raw  # the swept dtype
                        values[name] = json_format.ParseDict(raw, attr_value_pb2.AttrValue())
                    if type_attr:
                        values[type_attr] = attr_value_pb2.AttrValue(
                            type=types_pb2.DataType.Value(dtype)
                        )
                    try:
                        op = create(
                            op_def.name, inputs, None, name="n_%s_%s" % (variant, cls), attrs=values
                        )
                        outs = [o for o in op.outputs if o.dtype not in (tf.resource, tf.variant)]
                        nodes.append((run, op, outs, feeds))
                    except Exception as exc:  # noqa: BLE001
                        run["build_error"] = type(exc).__name__
                    runs.append(run)
        if nodes:
            with v1.Session(graph=graph, config=probe._config()) as sess:
                # A seeded stateful op moves on at each run: its first run is the answer.
                # Every other node runs twice: two answers that differ are not a kernel's.
                seeded = any(a in variants_attrs(variants) for a in ("seed", "seed2"))
                probe._run_nodes(sess, nodes, 1 if op_def.is_stateful and seeded else 2)
    return {"op": op_def.name, "type_attr": type_attr, "runs": runs}


def variants_attrs(variants):
    return set(name for attrs, _ in variants.values() for name in attrs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip", default="")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    probe.emit({"release": probe.VERSION, "structured": True})
    registered = dict((o.name, o) for o in probe._op_list())
    for name in sorted(BUILDERS):
        if name in skip or (only and name not in only):
            continue
        if name not in registered:
            probe.emit({"op": name, "unbuildable": "not registered"})
            continue
        probe.emit({"start": name})
        type_attr, dtypes, variants = BUILDERS[name]
        probe.emit(build_op(registered[name], type_attr, dtypes, variants))
    probe.emit({"done": True})


if __name__ == "__main__":
    main()
