"""Ask one TensorFlow release what its shape functions infer (run with its own Python).

    <venv>/bin/python tools/shapes/probe.py --cases CASES.json > RESULTS.jsonl
    <venv>/bin/python tools/shapes/probe.py --sweep [--skip OP,...] > RESULTS.jsonl

A graph import runs each node's shape function (`ShapeRefiner::AddNode`) and, for
a node carrying `_output_shapes`, merges what the producer recorded into what this
release infers (`GraphConstructor::ValidateShape`); the import fails where the two
disagree. This probe asks the first half of that question: for a node of a given op
and attrs whose inputs have given shapes, what does this release infer for each
output? Nodes are created in a fresh graph (`Graph.create_op`, which runs the same
shape function an import runs, at this release's own GraphDef version) fed by
placeholders of the given shapes.

Input shapes are written with symbols, so one case is asked three times and the
answers can be compared: "A" binds every symbol to its own small prime, "B" to
other primes, "U" leaves every dimension unknown. A case:
    {"id": str, "op": str, "attrs": {name: AttrValue JSON},
     "inputs": [{"dtype": "DT_FLOAT", "dims": ["N", "H", "W", "C"] | null}, ...]}
(`dims` null: unknown rank). `--sweep` makes cases itself for every registered op it
can build generically: every input one tensor of a type the op's type attrs pick
(float where allowed), every other attr defaulted, all inputs of one shape of rank
0, 1, 2 and 4 (symbols d0..d3).

One JSON line per op before it is probed ({"start": op}) and one with its results
({"op", "cases": [{"id", "attrs", "inputs", "probes": {"A": ..., "B": ..., "U": ...}}]}),
flushed as they come, so a driver can restart past an op that crashes the process.
A probe's answer is a list of output shapes (a list of dims, null for an unknown
dim; null for an unknown rank) or {"error": message}.

Runs under every Python a TensorFlow release came with (3.7): standard library,
TensorFlow and protobuf only.
"""

from __future__ import print_function

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from tensorflow.core.framework import attr_value_pb2, op_def_pb2, types_pb2  # noqa: E402

v1 = tf.compat.v1
VERSION = getattr(getattr(tf, "version", None), "VERSION", None) or tf.__version__
PRIMES = {"A": [2, 3, 5, 7, 11], "B": [13, 17, 19, 23, 29]}
SWEEP_RANKS = (0, 1, 2, 4)
PREFERRED = ("DT_FLOAT", "DT_INT32", "DT_INT64", "DT_DOUBLE", "DT_BOOL", "DT_STRING")


def _op_list():
    try:
        from tensorflow.python.client import pywrap_tf_session as c_api
    except ImportError:
        from tensorflow.python import pywrap_tensorflow as c_api
    buf = c_api.TF_GetAllOpList()
    try:
        data = c_api.TF_GetBuffer(buf)
    finally:
        c_api.TF_DeleteBuffer(buf)
    ops = op_def_pb2.OpList()
    ops.ParseFromString(data)
    return ops.op


def _bind(dims, variant, symbols):
    if dims is None:
        return None
    if variant == "U":
        return [None for _ in dims]
    return [d if isinstance(d, int) else PRIMES[variant][symbols.index(d)] for d in dims]


def _shape(tensor_shape):
    if tensor_shape.ndims is None:
        return None
    return [d if d is None else int(d) for d in tensor_shape.as_list()]


def _error(exc):
    text = " ".join(str(exc).split())
    return {"error": "%s: %s" % (type(exc).__name__, text[:300])}


def probe(case, variant):
    symbols = []
    for spec in case["inputs"]:
        for d in spec.get("dims") or []:
            if not isinstance(d, int) and d not in symbols:
                symbols.append(d)
    graph = tf.Graph()
    try:
        with graph.as_default():
            inputs = [
                v1.placeholder(
                    tf.as_dtype(types_pb2.DataType.Value(spec["dtype"])),
                    shape=_bind(spec.get("dims"), variant, symbols),
                )
                for spec in case["inputs"]
            ]
            attrs = {
                k: json_format.ParseDict(v, attr_value_pb2.AttrValue())
                for k, v in case.get("attrs", {}).items()
            }
            create = getattr(graph, "_create_op_internal", None) or graph.create_op
            op = create(case["op"], inputs, None, name="probe", attrs=attrs)
            return [_shape(out.shape) for out in op.outputs]
    except Exception as exc:  # a shape function refusing the inputs is an answer too
        return _error(exc)


def run_case(case):
    found = dict(case)
    found["probes"] = {variant: probe(case, variant) for variant in ("A", "B", "U")}
    return found


def _pick_type(attr):
    allowed = list(attr.allowed_values.list.type) if attr.HasField("allowed_values") else []
    names = [types_pb2.DataType.Name(t) for t in allowed]
    if not names:
        return "DT_FLOAT"
    for name in PREFERRED:
        if name in names:
            return name
    return names[0]


def sweep_cases(op_def):
    """Generic cases of one op, or [] when it cannot be built generically."""
    attrs = {}
    types = {}
    for attr in op_def.attr:
        if attr.HasField("default_value"):
            if attr.type == "type":
                types[attr.name] = types_pb2.DataType.Name(attr.default_value.type)
            continue
        if attr.type != "type":
            return []
        types[attr.name] = _pick_type(attr)
        attrs[attr.name] = {"type": types[attr.name]}
    dtypes = []
    for arg in op_def.input_arg:
        if arg.number_attr or arg.type_list_attr or arg.is_ref:
            return []
        if arg.type_attr:
            dtypes.append(types[arg.type_attr])
        else:
            dtypes.append(types_pb2.DataType.Name(arg.type))
    if not dtypes or any(d in ("DT_RESOURCE", "DT_VARIANT") for d in dtypes):
        return []
    cases = []
    for rank in SWEEP_RANKS:
        dims = ["d%d" % i for i in range(rank)]
        cases.append(
            {
                "id": "%s/rank%d" % (op_def.name, rank),
                "op": op_def.name,
                "attrs": attrs,
                "inputs": [{"dtype": d, "dims": dims} for d in dtypes],
            }
        )
    return cases


def emit(line):
    sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
    sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--skip", default="")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    emit({"release": VERSION})
    if args.cases:
        with open(args.cases) as f:
            cases = json.load(f)["cases"]
        by_op = {}
        for case in cases:
            by_op.setdefault(case["op"], []).append(case)
        registered = set(o.name for o in _op_list())
        for op, group in sorted(by_op.items()):
            if op in skip:
                continue
            emit({"start": op})
            if op not in registered:
                emit({"op": op, "registered": False, "cases": []})
                continue
            emit({"op": op, "registered": True, "cases": [run_case(c) for c in group]})
    if args.sweep:
        for op_def in sorted(_op_list(), key=lambda o: o.name):
            if op_def.name in skip or op_def.name.startswith("_"):
                continue
            cases = sweep_cases(op_def)
            if not cases:
                continue
            emit({"start": op_def.name})
            emit({"op": op_def.name, "registered": True, "cases": [run_case(c) for c in cases]})
    emit({"done": True})


if __name__ == "__main__":
    main()
