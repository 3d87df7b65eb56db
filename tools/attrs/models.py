"""Frozen graphs that set attrs an older release ignores, made and run by real TensorFlow.

    <venv>/bin/python tools/attrs/models.py make --out DIR [--cases a,b]
    <venv>/bin/python tools/attrs/models.py run DIR/<case> [DIR/<case> ...]

`make` (a release that knows every attr used: 2.18 or newer) writes, per case,
`DIR/<case>/frozen_graph.pb` (a GraphDef of placeholders, constants and the ops
under test, attrs set through `tf.raw_ops`) and `DIR/<case>/case.json` (what it
sets, the feeds and the tensors to fetch). `run` imports that graph the way a
GraphDef consumer does (`tf.compat.v1.import_graph_def`) in the running release,
runs every feed and prints the outputs as JSON (or the import or run error), so a
host tool can compare releases on the same inputs.

Runs under every Python a TensorFlow release came with (3.7): no walrus, no newer
typing syntax; only TensorFlow, numpy and the standard library.
"""

from __future__ import print_function

import argparse
import base64
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
VERSION = getattr(getattr(tf, "version", None), "VERSION", None) or tf.__version__


def _ph(dtype, shape, name):
    return v1.placeholder(dtype, shape, name=name)


# --- cases: each builds its graph and returns (what, feeds, fetches) ------------------------


def ctc_blank_index():
    """CTCGreedyDecoder with blank_index=0: class 0 is the blank, not the last class."""
    logits = _ph(tf.float32, [None, None, 3], "logits")
    lengths = _ph(tf.int32, [None], "lengths")
    decoded = tf.raw_ops.CTCGreedyDecoder(
        inputs=logits, sequence_length=lengths, merge_repeated=True, blank_index=0
    )
    tf.identity(decoded.decoded_values, name="labels")
    tf.identity(decoded.decoded_indices, name="label_positions")
    feeds = [
        {
            "logits:0": [
                [[0.9, 0.05, 0.05]],
                [[0.1, 0.8, 0.1]],
                [[0.1, 0.1, 0.8]],
                [[0.7, 0.2, 0.1]],
            ],
            "lengths:0": [4],
        }
    ]
    what = {"op": "CTCGreedyDecoder", "attr": "blank_index", "value": {"i": "0"}}
    return [what], feeds, ["labels:0", "label_positions:0"]


# --- held-out models (precision and recall of at-risk; built after the table is frozen) ---


def _vector_feed(*values):
    return [{"x:0": list(v)} for v in values]


def gather_ignore():
    """GatherNd with bad_indices_policy=IGNORE (2.17+): an out-of-range row reads zeros."""
    params = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    indices = _ph(tf.int32, [None, 1], "x")
    out = tf.raw_ops.GatherNd(params=params, indices=indices, bad_indices_policy="IGNORE")
    tf.identity(out, name="y")
    what = [{"op": "GatherNd", "attr": "bad_indices_policy", "value": "IGNORE"}]
    return what, [{"x:0": [[0], [2]]}, {"x:0": [[1], [7]]}], ["y:0"]


def scatter_ignore():
    """TensorScatterUpdate with bad_indices_policy=IGNORE (2.18+)."""
    base = tf.constant([1.0, 2.0, 3.0, 4.0])
    indices = _ph(tf.int32, [None, 1], "x")
    updates = tf.ones_like(tf.cast(indices[:, 0], tf.float32)) * 9.0
    out = tf.raw_ops.TensorScatterUpdate(
        tensor=base, indices=indices, updates=updates, bad_indices_policy="IGNORE"
    )
    tf.identity(out, name="y")
    what = [{"op": "TensorScatterUpdate", "attr": "bad_indices_policy", "value": "IGNORE"}]
    return what, [{"x:0": [[0], [3]]}, {"x:0": [[1], [9]]}], ["y:0"]


def tridiagonal_perturb():
    """TridiagonalSolve with perturb_singular=True (2.6+) on a batch holding a singular system."""
    diagonals = _ph(tf.float32, [3, 3], "x")
    rhs = tf.constant([[1.0], [2.0], [3.0]])
    out = tf.raw_ops.TridiagonalSolve(
        diagonals=diagonals, rhs=rhs, partial_pivoting=True, perturb_singular=True
    )
    tf.identity(out, name="y")
    what = [{"op": "TridiagonalSolve", "attr": "perturb_singular", "value": True}]
    feeds = [
        {"x:0": [[1.0, 1.0, 0.0], [4.0, 4.0, 4.0], [0.0, 1.0, 1.0]]},
        {"x:0": [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.0]]},
    ]
    return what, feeds, ["y:0"]


def tensor_list_resize():
    """TensorListSetItem with resize_if_index_out_of_bounds=True (2.13+)."""
    index = _ph(tf.int32, [], "x")
    handle = tf.raw_ops.TensorListReserve(
        element_shape=[2], num_elements=2, element_dtype=tf.float32
    )
    handle = tf.raw_ops.TensorListSetItem(
        input_handle=handle,
        index=index,
        item=tf.constant([7.0, 8.0]),
        resize_if_index_out_of_bounds=True,
    )
    out = tf.raw_ops.TensorListStack(
        input_handle=handle, element_shape=[2], element_dtype=tf.float32
    )
    tf.identity(out, name="y")
    what = [{"op": "TensorListSetItem", "attr": "resize_if_index_out_of_bounds", "value": True}]
    return what, [{"x:0": 1}, {"x:0": 3}], ["y:0"]


def topk_int64():
    """TopKV2 with index_type=int64 (2.13+): older releases answer int32 indices."""
    x = _ph(tf.float32, [None], "x")
    out = tf.raw_ops.TopKV2(input=x, k=2, index_type=tf.int64)
    tf.identity(out.indices, name="y")
    what = [{"op": "TopKV2", "attr": "index_type", "value": "DT_INT64"}]
    return what, _vector_feed([3.0, 1.0, 2.0]), ["y:0"]


def several_changed():
    """CTC with blank_index=1, GatherNd IGNORE and a MatMul grad_a hint in one graph."""
    logits = _ph(tf.float32, [None, None, 3], "x")
    lengths = tf.fill(tf.shape(logits)[1:2], tf.shape(logits)[0])
    decoded = tf.raw_ops.CTCGreedyDecoder(
        inputs=logits, sequence_length=lengths, merge_repeated=True, blank_index=1
    )
    table = tf.constant([[10.0], [20.0], [30.0]])
    picked = tf.raw_ops.GatherNd(
        params=table,
        indices=tf.reshape(tf.cast(decoded.decoded_values, tf.int32), [-1, 1]),
        bad_indices_policy="IGNORE",
    )
    weights = tf.constant([[2.0]])
    out = tf.raw_ops.MatMul(a=tf.reshape(picked, [-1, 1]), b=weights, grad_a=True)
    tf.identity(out, name="y")
    what = [
        {"op": "CTCGreedyDecoder", "attr": "blank_index", "value": 1},
        {"op": "GatherNd", "attr": "bad_indices_policy", "value": "IGNORE"},
        {"op": "MatMul", "attr": "grad_a", "value": True},
    ]
    feeds = [
        {"x:0": [[[0.1, 0.8, 0.1]], [[0.7, 0.2, 0.1]], [[0.1, 0.1, 0.8]], [[0.2, 0.7, 0.1]]]},
    ]
    return what, feeds, ["y:0"]


def max_with_nan():
    """ReduceMax over a row holding NaN: a kernel the table measures as changed."""
    x = _ph(tf.float32, [None, 3], "x")
    tf.identity(tf.raw_ops.Max(input=x, axis=[1]), name="y")
    return [], [{"x:0": [[1.0, 2.0, 3.0]]}, {"x:0": [[1.0, float("nan"), 3.0]]}], ["y:0"]


def hints_matmul():
    """MatMul grad_a/grad_b and BatchMatMulV2 grad_x: gradient hints (2.16+)."""
    x = _ph(tf.float32, [None, 2], "x")
    a = tf.raw_ops.MatMul(a=x, b=tf.constant([[1.0, -1.0], [0.5, 2.0]]), grad_a=True, grad_b=True)
    b = tf.raw_ops.BatchMatMulV2(
        x=tf.expand_dims(a, 0), y=tf.constant([[[1.0], [3.0]]]), grad_x=True
    )
    tf.identity(b, name="y")
    what = [
        {"op": "MatMul", "attr": "grad_a", "value": True},
        {"op": "MatMul", "attr": "grad_b", "value": True},
        {"op": "BatchMatMulV2", "attr": "grad_x", "value": True},
    ]
    return what, _vector_feed([[1.0, 2.0]], [[-3.0, 0.0], [1e6, 1e-6]]), ["y:0"]


def hints_sparse_segment():
    """SparseSegmentSum/Mean with sparse_gradient=True (2.15+)."""
    x = _ph(tf.float32, [None, 2], "x")
    total = tf.raw_ops.SparseSegmentSum(
        data=x, indices=[0, 1, 2], segment_ids=[0, 0, 1], sparse_gradient=True
    )
    mean = tf.raw_ops.SparseSegmentMean(
        data=x, indices=[0, 2], segment_ids=[0, 1], sparse_gradient=True
    )
    tf.identity(total + mean, name="y")
    what = [
        {"op": "SparseSegmentSum", "attr": "sparse_gradient", "value": True},
        {"op": "SparseSegmentMean", "attr": "sparse_gradient", "value": True},
    ]
    return what, [{"x:0": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]}], ["y:0"]


def hints_plain():
    """A small convolutional net with no new attr at all (a control)."""
    x = _ph(tf.float32, [None, 4, 4, 1], "x")
    w = tf.constant([[[[0.5]], [[-0.25]]], [[[1.0]], [[0.75]]]])
    h = tf.nn.relu(tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME"))
    tf.identity(tf.nn.softmax(tf.reshape(h, [-1, 16])), name="y")
    feed = [[[[float(i * 4 + j)] for j in range(4)] for i in range(4)]]
    return [], [{"x:0": feed}], ["y:0"]


CASES = {
    "ctc_blank_index": ctc_blank_index,
}

HELD_OUT = {
    "gather_ignore": gather_ignore,
    "scatter_ignore": scatter_ignore,
    "tridiagonal_perturb": tridiagonal_perturb,
    "tensor_list_resize": tensor_list_resize,
    "topk_int64": topk_int64,
    "several_changed": several_changed,
    "max_with_nan": max_with_nan,
    "hints_matmul": hints_matmul,
    "hints_sparse_segment": hints_sparse_segment,
    "hints_plain": hints_plain,
}
CASES.update(HELD_OUT)


def make(out, names):
    for name in names:
        graph = tf.Graph()
        with graph.as_default():
            what, feeds, fetches = CASES[name]()
        target = os.path.join(out, name)
        if not os.path.isdir(target):
            os.makedirs(target)
        with open(os.path.join(target, "frozen_graph.pb"), "wb") as handle:
            handle.write(graph.as_graph_def().SerializeToString())
        doc = {
            "case": name,
            "producer": VERSION,
            "sets": what,
            "feeds": feeds,
            "fetches": fetches,
            "made_by": "tools/attrs/models.py make (tf.raw_ops in a tf.compat.v1 graph, "
            "Graph.as_graph_def())",
        }
        with open(os.path.join(target, "case.json"), "w") as handle:
            json.dump(doc, handle, indent=1, sort_keys=True)
            handle.write("\n")
        sys.stderr.write("%s: wrote %s\n" % (VERSION, target))


def _encode(value):
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind in "SU":
        flat = [
            base64.b64encode(v).decode() if isinstance(v, bytes) else str(v) for v in array.ravel()
        ]
    elif array.dtype.kind in "fc":
        flat = [repr(v) for v in array.ravel().tolist()]
    elif str(array.dtype) == "bfloat16":  # numpy knows it only as TensorFlow's own type
        flat = [repr(v) for v in array.astype(np.float32).ravel().tolist()]
    else:
        flat = array.ravel().tolist()
    dtype = "string" if array.dtype == object or array.dtype.kind in "SU" else str(array.dtype)
    return {"dtype": dtype, "shape": list(array.shape), "values": flat}


def _first_line(exc):
    text = str(exc).strip()
    return type(exc).__name__ + ": " + (text.splitlines()[0][:300] if text else "")


def run(path):
    with open(os.path.join(path, "case.json")) as handle:
        doc = json.load(handle)
    graph_def = v1.GraphDef()
    with open(os.path.join(path, "frozen_graph.pb"), "rb") as handle:
        graph_def.ParseFromString(handle.read())
    result = {"tensorflow": VERSION, "case": doc["case"]}
    graph = tf.Graph()
    try:
        with graph.as_default():
            v1.import_graph_def(graph_def, name="")
    except Exception as exc:  # noqa: BLE001 - the release's own refusal is the result
        result.update(loads=False, error=_first_line(exc))
        return result
    result["loads"] = True
    outputs = []
    with v1.Session(graph=graph) as sess:
        for feed in doc["feeds"]:
            try:
                got = sess.run(doc["fetches"], feed_dict=feed)
                outputs.append([_encode(g) for g in got])
            except Exception as exc:  # noqa: BLE001
                outputs.append({"error": _first_line(exc)})
    result["outputs"] = outputs
    return result


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    made = sub.add_parser("make")
    made.add_argument("--out", required=True)
    made.add_argument("--cases", default="")
    ran = sub.add_parser("run")
    ran.add_argument("paths", nargs="+")
    args = parser.parse_args()
    if args.command == "make":
        make(args.out, [c for c in args.cases.split(",") if c] or sorted(CASES))
        return 0
    for path in args.paths:  # one line per model, in order
        json.dump(run(path), sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
