"""Run one op at several values of one attr, inside a real TensorFlow (its own Python).

    <venv>/bin/python tools/attrs/probe.py < cases.json > results.json

Reads `{"cases": [...]}` (written by tools/attrs/measure.py), builds each case's node
in a fresh graph with the op's own registration (`Graph.create_op`: TensorFlow
validates the NodeDef and fills defaults exactly as a graph import does), runs it
in a session on the CPU and writes, per case and per value tried, what a request
would see: every output (dtype, shape, values), the variables the node wrote, the
elements of a dataset it made, or the error it raised.

A case:
    {"id": str, "op": str, "attrs": {name: AttrValue JSON}, "attr": str,
     "values": [AttrValue JSON, ...], "inputs": [INPUT, ...], "read": [int, ...]}
INPUT: {"tensor": {"dtype": str, "value": nested list}} ({"fed": ...}: the same fed
through a placeholder of unknown shape), a list of those (a list
input), {"variable": tensor} (a resource variable holding it; read back after the
run), {"ref": tensor} (a reference variable, likewise), {"tensor_list": tensor}
(a TensorList of its rows), {"table": [key dtype, value dtype]} (an empty hash
table, exported after the run), {"file": [line, ...]} (a text file's name) or
{"dataset": DATASET}. "inputs_per_value" (parallel to "values", null entries
meaning "inputs") gives a value its own inputs: a type attr needs inputs of that
type. "{tmp}" in a string is a fresh directory. Output handling: "dataset_output"
([dtype, shape] per component) iterates a dataset the op makes, "list_output"
(element dtype) stacks a TensorList, "assign_read" (a tensor) assigns to and
reads the resource variable a handle op makes.
DATASET: {"range": n} | {"slices": tensor} | {"batch": [DATASET, n]} |
{"empty": true}. A func-valued attr names one of FUNCTIONS below.

Runs under every Python a TensorFlow release came with (3.7): no walrus, no newer
typing syntax; only TensorFlow, numpy and the standard library.
"""

from __future__ import print_function

import base64
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from tensorflow.core.framework import attr_value_pb2  # noqa: E402
from tensorflow.python.framework import function  # noqa: E402
from tensorflow.python.ops import (  # noqa: E402
    gen_dataset_ops,
    gen_lookup_ops,
    gen_resource_variable_ops,
    list_ops,
)

v1 = tf.compat.v1
VERSION = getattr(getattr(tf, "version", None), "VERSION", None) or tf.__version__
MAX_ELEMENTS = 64


def _functions(graph):
    """Small functions a func-valued attr can name, defined in `graph` on demand."""

    def double():
        @function.Defun(tf.int64)
        def double(x):
            return x * 2

        return double

    def is_even():
        @function.Defun(tf.int64)
        def is_even(x):
            return tf.equal(x % 2, 0)

        return is_even

    def below_five():
        @function.Defun(tf.int64)
        def below_five(x):
            return x < 5

        return below_five

    def add():
        @function.Defun(tf.int64, tf.int64)
        def add(a, b):
            return a + b

        return add

    def running_sum():
        @function.Defun(tf.int64, tf.int64)
        def running_sum(state, x):
            return state + x, state + x

        return running_sum

    def to_range():
        @function.Defun(tf.int64)
        def to_range(x):
            return tf.data.Dataset.range(x)._variant_tensor

        return to_range

    found = {}
    for name, make in (
        ("double", double),
        ("is_even", is_even),
        ("below_five", below_five),
        ("add", add),
        ("running_sum", running_sum),
        ("to_range", to_range),
    ):
        try:  # one a release cannot define (no tf.data variant in 1.13) is just absent
            f = make()
            f.add_to_graph(graph)
        except Exception:  # noqa: BLE001
            continue
        found[name] = f.name
    return found


TMP = {"dir": None}


def _tmp():
    if TMP["dir"] is None:
        TMP["dir"] = tempfile.mkdtemp(prefix="tfcompat-attrs-")
    return TMP["dir"]


def _tensor(spec):
    dtype = tf.as_dtype(spec["dtype"])
    value = spec["value"]
    if dtype == tf.string:
        shape = np.array(value).shape
        flat = [v.replace("{tmp}", _tmp()).encode() for v in np.array(value).ravel()]
        return tf.constant(np.array(flat, dtype=object).reshape(shape), dtype=dtype)
    return tf.constant(np.array(value, dtype=dtype.as_numpy_dtype), dtype=dtype)


def _file(lines):
    path = os.path.join(_tmp(), "lines-%d.txt" % len(os.listdir(_tmp())))
    with open(path, "w") as handle:
        handle.write("".join(line + "\n" for line in lines))
    return tf.constant(path)


def _dataset(spec):
    if "range" in spec:
        return tf.data.Dataset.range(spec["range"])
    if "slices" in spec:
        return tf.data.Dataset.from_tensor_slices(_tensor(spec["slices"]))
    if "batch" in spec:
        inner, size = spec["batch"]
        return _dataset(inner).batch(size)
    if "empty" in spec:
        return tf.data.Dataset.range(0)
    raise ValueError("unknown dataset %r" % (spec,))


def _attr_value(raw, functions):
    if "func" in raw and raw["func"].get("name") in functions:
        raw = {"func": {"name": functions[raw["func"]["name"]]}}
    return json_format.ParseDict(raw, attr_value_pb2.AttrValue())


def _encode(value):
    """A fetched value as JSON: dtype, shape and values (bytes as base64, NaN as a string)."""
    array = np.asarray(value)
    if array.dtype.kind == "V" or str(array.dtype) in ("bfloat16", "float16"):
        array = array.astype(np.float32)  # bfloat16 (a numpy extension type) as its values
    if array.dtype == object or array.dtype.kind in "SU":
        flat = [
            base64.b64encode(v).decode() if isinstance(v, bytes) else str(v) for v in array.ravel()
        ]
    elif array.dtype.kind == "f" or array.dtype.kind == "c":
        flat = [repr(v) for v in array.ravel().tolist()]
    else:
        flat = array.ravel().tolist()
    dtype = "string" if array.dtype == object or array.dtype.kind in "SU" else str(array.dtype)
    return {"dtype": dtype, "shape": list(array.shape), "values": flat}


def _error(exc):
    """The error's class and its core line: 2.8+ put where the node was defined first,
    then `Node: '<name>'`, then the kernel's own message."""
    text = getattr(exc, "message", None) or str(exc)
    lines = [line.strip() for line in text.strip().splitlines()]
    marks = [n for n, line in enumerate(lines) if line.startswith("Node:")]
    after = [line for line in lines[marks[-1] + 1 :] if line] if marks else []
    message = (after or lines or [""])[0]
    return {"error": type(exc).__name__, "message": message[:300]}


def run_value(case, value, given):
    """One value's outcome, in a fresh graph and a fresh temporary directory."""
    if TMP["dir"] is not None:
        shutil.rmtree(TMP["dir"], ignore_errors=True)
        TMP["dir"] = None
    graph = tf.Graph()
    with graph.as_default():
        functions = _functions(graph)
        inputs, readbacks, variables, tables = [], [], [], []
        feeds = {}

        def build(item):
            if isinstance(item, list):
                return [build(part) for part in item]
            if "tensor" in item:
                return _tensor(item["tensor"])
            if "fed" in item:
                # A placeholder of unknown shape: graph construction cannot check the
                # shapes, so the kernel itself meets the value.
                value = _tensor(item["fed"])
                holder = v1.placeholder(value.dtype, shape=None)
                feeds[holder] = item["fed"]["value"]
                return holder
            if "variable" in item or "ref" in item:
                var = v1.Variable(
                    _tensor(item.get("variable") or item["ref"]), use_resource="variable" in item
                )
                variables.append(var)
                readbacks.append(var)
                return var.handle if "variable" in item else var._ref()
            if "dataset" in item:
                return _dataset(item["dataset"])._variant_tensor
            if "tensor_list" in item:
                rows = _tensor(item["tensor_list"])
                return list_ops.tensor_list_from_tensor(rows, element_shape=rows.shape[1:])
            if "table" in item:
                key, val = (tf.as_dtype(d) for d in item["table"])
                handle = gen_lookup_ops.hash_table_v2(key_dtype=key, value_dtype=val)
                tables.append((handle, key, val))
                return handle
            if "file" in item:
                return _file(item["file"])
            if "tfrecord_file" in item:
                path = os.path.join(_tmp(), "records.tfrecord")
                with tf.io.TFRecordWriter(path) as writer:
                    for record in item["tfrecord_file"]:
                        writer.write(record.encode())
                return tf.constant(path)
            if "ref_table" in item:
                key, val = (tf.as_dtype(d) for d in item["ref_table"])
                handle = gen_lookup_ops.hash_table(key_dtype=key, value_dtype=val)
                tables.append((handle, key, val))
                return handle
            raise ValueError("unknown input %r" % (item,))

        inputs = [build(item) for item in given]
        attrs = {k: _attr_value(v, functions) for k, v in case.get("attrs", {}).items()}
        if value is not None:
            attrs[case["attr"]] = _attr_value(value, functions)
        flat = []
        for item in inputs:
            flat.extend(item if isinstance(item, list) else [item])
        create = getattr(graph, "_create_op_internal", None) or graph.create_op
        op = create(case["op"], flat, None, name="probe", attrs=attrs)  # dtypes: from the OpDef
        fetches, kinds = [], []
        for out in op.outputs:
            if out.dtype == tf.variant and case.get("list_output") is not None:
                fetches.append(list_ops.tensor_list_stack(out, tf.as_dtype(case["list_output"])))
                kinds.append("tensor")
            elif out.dtype == tf.resource and case.get("assign_read") is not None:
                with tf.control_dependencies(
                    [
                        gen_resource_variable_ops.assign_variable_op(
                            out, _tensor(case["assign_read"])
                        )
                    ]
                ):
                    fetches.append(
                        gen_resource_variable_ops.read_variable_op(
                            out, tf.as_dtype(case["assign_read"]["dtype"])
                        )
                    )
                kinds.append("tensor")
            elif out.dtype == tf.variant and case.get("dataset_output") is not None:
                spec = case["dataset_output"]
                types = [tf.as_dtype(dtype) for dtype, _ in spec]
                shapes = [tf.TensorShape(shape) for _, shape in spec]
                # Raw iterator ops, not tf.data's Python wrappers: those rewrite the
                # pipeline first (serializing it), which a V1 dataset op cannot survive.
                handle = gen_dataset_ops.iterator_v2(
                    shared_name="", container="", output_types=types, output_shapes=shapes
                )
                fetches.append(
                    (
                        gen_dataset_ops.make_iterator(out, handle),
                        gen_dataset_ops.iterator_get_next(
                            handle, output_types=types, output_shapes=shapes
                        ),
                    )
                )
                kinds.append("dataset")
            elif out.dtype in (tf.resource, tf.variant):
                continue
            else:
                fetches.append(out)
                kinds.append("tensor")
        exports = [
            gen_lookup_ops.lookup_table_export_v2(h, k, v, name="export")
            if h.dtype == tf.resource
            else gen_lookup_ops.lookup_table_export(h, k, v, name="export")
            for h, k, v in tables
        ]
        init = v1.global_variables_initializer()
        with v1.Session(graph=graph, config=v1.ConfigProto(device_count={"GPU": 0})) as sess:
            sess.run(init)
            outputs = []
            tensors = [f for f, k in zip(fetches, kinds) if k == "tensor"]
            try:
                if tensors or not fetches:
                    got = sess.run(tensors or [op], feed_dict=feeds)
                    got = got if tensors else []
                else:
                    got = []
            except Exception as exc:  # noqa: BLE001 - TensorFlow's own error is the result
                return _error(exc)
            got = list(got)
            for fetch, kind in zip(fetches, kinds):
                if kind == "tensor":
                    outputs.append(_encode(got.pop(0)))
                    continue
                elements = []
                try:
                    initializer, nxt = fetch
                    sess.run(initializer)
                    while len(elements) < MAX_ELEMENTS:
                        try:
                            element = sess.run(nxt)
                        except tf.errors.OutOfRangeError:
                            break
                        parts = element if isinstance(element, (tuple, list)) else (element,)
                        elements.append([_encode(p) for p in parts])
                except Exception as exc:  # noqa: BLE001
                    return _error(exc)
                outputs.append({"elements": elements})
            written = [_encode(sess.run(v.read_value())) for v in readbacks]
            for keys, values in sess.run(exports):
                order = np.argsort(keys, kind="stable")
                written.append(_encode(keys[order]))
                written.append(_encode(values[order]))
    return {"outputs": outputs, "variables": written}


def main():
    doc = json.load(sys.stdin)
    results = []
    for case in doc["cases"]:
        runs = []
        per_value = case.get("inputs_per_value") or [None] * len(case["values"])
        for value, given in zip(case["values"], per_value):
            try:
                runs.append(run_value(case, value, case["inputs"] if given is None else given))
            except Exception as exc:  # noqa: BLE001 - a case that cannot be built
                runs.append({"build_error": type(exc).__name__, "message": str(exc)[:300]})
        results.append({"id": case["id"], "runs": runs})
    if TMP["dir"] is not None:
        shutil.rmtree(TMP["dir"], ignore_errors=True)
    json.dump({"tensorflow": VERSION, "results": results}, sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
