"""Frozen graphs that set attrs an older release ignores, made and run by real TensorFlow.

    <venv>/bin/python tools/attrs/models.py make --out DIR [--cases a,b]
    <venv>/bin/python tools/attrs/models.py run DIR/<case>

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


CASES = {
    "ctc_blank_index": ctc_blank_index,
}


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
    ran.add_argument("path")
    args = parser.parse_args()
    if args.command == "make":
        make(args.out, [c for c in args.cases.split(",") if c] or sorted(CASES))
        return 0
    json.dump(run(args.path), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
