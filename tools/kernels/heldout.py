"""Held-out models for `kernel.changed`: ops picked at random, made by a real release.

    python3 tools/kernels/heldout.py pick --table TABLE.json.gz --cache DIR --ops FILE
                                          [--seed 37] [--ordinary 0] [--differs 14]
                                          [--fixture 14] [--exclude EARLIER_SET_DIR ...]
                                          > PICKS.json
    <venv>/bin/python tools/kernels/heldout.py make --picks PICKS.json --out DIR [--integers]
                                          [--shape 2,3] [--feed-seed 4242]

`pick` (standard library) draws (op, dtype) pairs at random: some from the pairs
whose change the sweep met on ordinary inputs (`--ordinary`: what at-risk claims, so
its recall on an ordinary feed can be measured), some from the sweep's other
`differs` pairs, some from the ops the fixtures' real models use (FILE: a JSON list
of op names, or tests/fixtures/kernel-sweep/fixture_ops.json) that the sweep compared, each with a layout the newest release built
and ran (read from its cached probe lines). `make` (in a producer release's own
Python) writes per pick `DIR/<case>/frozen_graph.pb` (placeholders of unknown shape
for the swept inputs, constants 1 for the others, the op, an Identity per output)
and `case.json` (the feeds and fetches) in the layout tools/attrs/models.py `run`
and tools/attrs/outcomes.py read, so every release runs them and records whether it
answered what the producer answered. The feeds are not the sweep's inputs: values
drawn with another seed: one feed of ordinary values, one mixing edge values
(NaN, infinities, -0.0, denormals, large, tiny, halves, out-of-range integers), and
(`make --integers`, sets from kernels-heldout-4 on) a third of integer values from -10
to 100, the magnitudes and integer points of the sweep's `indices` class, which the
table counts among the ordinary classes (so at-risk's claim on it can be tested).
`--shape` and `--feed-seed` draw the feeds in another shape and from another seed
(defaults: the earlier sets' [2, 3] and 4242), so a pair an earlier set used can be
made again as a new model, fed values no earlier set fed it.

Runs under every Python a TensorFlow release came with (3.7).
"""

from __future__ import print_function

import argparse
import gzip
import json
import os
import random
import sys

FEED_SEED = 4242
SHAPE = (2, 3)
FLOAT_EDGES = [
    float("nan"),
    float("inf"),
    float("-inf"),
    -0.0,
    1e-40,
    3e38,
    -3e38,
    1e-30,
    2.5,
    -0.5,
    7.0,
    1.0,
]
HALF_EDGES = [
    float("nan"),
    float("inf"),
    float("-inf"),
    -0.0,
    1e-6,
    65000.0,
    -65000.0,
    1e-4,
    2.5,
    -0.5,
    7.0,
    1.0,
]
INT_EDGES = {
    "DT_INT32": [2147483647, -2147483648, -1, 0, 100, 7],
    "DT_INT64": [9223372036854775807, -9223372036854775808, -1, 0, 100, 7],
    "DT_UINT8": [255, 0, 128, 7, 1, 200],
}
# The dtypes a feed can carry in every release (bfloat16 through TensorFlow's own numpy
# type, from kernels-heldout-4 on; tools/attrs/models.py writes its outputs as floats).
SWEEP_LOAD = (
    "DT_FLOAT",
    "DT_HALF",
    "DT_DOUBLE",
    "DT_BFLOAT16",
    "DT_INT32",
    "DT_INT64",
    "DT_UINT8",
    "DT_BOOL",
)


def _values(dtype, rng, edgy, shape=SHAPE):
    size = shape[0] * shape[1]
    if dtype in ("DT_FLOAT", "DT_DOUBLE", "DT_HALF", "DT_BFLOAT16"):
        edges = HALF_EDGES if dtype == "DT_HALF" else FLOAT_EDGES
        if edgy:
            return [rng.choice(edges) for _ in range(size)]
        return [round(rng.gauss(0.0, 2.0), 4) for _ in range(size)]
    if dtype == "DT_BOOL":
        return [rng.random() < (0.2 if edgy else 0.5) for _ in range(size)]
    if dtype == "DT_STRING":
        return [rng.choice(["a", "1.5", "", "nan", "x y"]) for _ in range(size)]
    if edgy and dtype in INT_EDGES:
        return [rng.choice(INT_EDGES[dtype]) for _ in range(size)]
    low = 0 if dtype.startswith("DT_UINT") else -9
    return [rng.randint(low, 9) for _ in range(size)]


def _integers(dtype, rng, shape=SHAPE):
    """Integer values from -10 to 100 (0 to 100 unsigned) in `dtype`: the sweep's
    `indices` class drawn again (poles, domain bounds, tails, magnitudes up to 100)."""
    size = shape[0] * shape[1]
    if dtype in ("DT_BOOL", "DT_STRING"):
        return _values(dtype, rng, False, shape)
    low = 0 if dtype.startswith("DT_UINT") else -10
    values = [rng.randint(low, 100) for _ in range(size)]
    if dtype in ("DT_FLOAT", "DT_DOUBLE", "DT_HALF", "DT_BFLOAT16"):
        return [float(v) for v in values]
    return values


def _feeds(dtypes, integers=False, shape=SHAPE, seed=FEED_SEED):
    """Two feeds (ordinary values, then edge values), with `integers` a third of integer
    values; `shape` per swept input. With the defaults the first two are drawn as the
    earlier sets drew them."""
    rng = random.Random(seed + len(dtypes))
    feeds = []
    kinds = ("ordinary", "edges", "integers") if integers else ("ordinary", "edges")
    for kind in kinds:
        feed = {}
        for i, dtype in enumerate(dtypes):
            if kind == "integers":
                values = _integers(dtype, rng, shape)
            else:
                values = _values(dtype, rng, kind == "edges", shape)
            feed["x%d:0" % i] = [values[r * shape[1] : (r + 1) * shape[1]] for r in range(shape[0])]
        feeds.append(feed)
    return feeds


def pick(args):
    raw = open(args.table, "rb").read()
    table = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    newest = table["newest"]
    cached = [
        f for f in os.listdir(args.cache) if f.startswith(newest + "-") and f.endswith(".jsonl")
    ]
    runs = {}
    for name in cached:
        for text in open(os.path.join(args.cache, name)):
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if "runs" in line:  # the probe's, the structured builders' and mixed runs
                runs.setdefault(line["op"], []).extend(line["runs"])
    used = json.load(open(args.ops))
    fixture_ops = set(used["ops"] if isinstance(used, dict) else used)

    def layout(op, dtype):
        """A layout whose ordinary node the newest release built and ran."""
        for run in runs.get(op, []):
            generic = not run["layout"].startswith("s:")  # structured.py's shapes: not here
            if (
                generic
                and run["dtype"] == dtype
                and run["class"] == "ordinary"
                and "outputs" in run
            ):
                return run["layout"]
        return None

    ordinary, differs, fixture = [], [], []
    for op, entry in sorted(table["ops"].items()):
        for dtype, pair in sorted(entry["dtypes"].items()):
            if dtype not in SWEEP_LOAD or layout(op, dtype) is None:
                continue
            item = {
                "op": op,
                "dtype": dtype,
                "layout": layout(op, dtype),
                "type_attr": entry["type_attr"],
            }
            changes = [g for g in pair.get("changes", []) if g["verdict"] == "differs"]
            if any(g.get("met_on", "ordinary") == "ordinary" for g in changes):
                ordinary.append(item)
            elif changes:
                differs.append(item)
            if op in fixture_ops:
                fixture.append(item)
    done = set()  # the (op, dtype) pairs of earlier sets: fresh picks only
    for earlier in args.exclude:
        for c in os.listdir(earlier):
            path = os.path.join(earlier, c, "case.json")
            if os.path.exists(path):
                picked = json.load(open(path))["picked"]
                done.add((picked["op"], picked["dtype"]))
    ordinary = [d for d in ordinary if (d["op"], d["dtype"]) not in done]
    differs = [d for d in differs if (d["op"], d["dtype"]) not in done]
    fixture = [f for f in fixture if (f["op"], f["dtype"]) not in done]
    rng = random.Random(args.seed)
    chosen = rng.sample(ordinary, min(args.ordinary, len(ordinary)))
    chosen += rng.sample(differs, min(args.differs, len(differs)))
    rest = [f for f in fixture if f not in chosen]
    chosen += rng.sample(rest, min(args.fixture, len(rest)))
    for item in chosen:
        item["from"] = (
            "ordinary" if item in ordinary else "differs" if item in differs else "fixture-ops"
        )
    json.dump({"seed": args.seed, "table_newest": newest, "picks": chosen}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


def make(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import probe
    import tensorflow as tf
    from tensorflow.core.framework import attr_value_pb2, types_pb2

    v1 = tf.compat.v1
    picks = json.load(open(args.picks))["picks"]
    shape = tuple(int(n) for n in args.shape.split(","))
    ops = dict((o.name, o) for o in probe._op_list())
    for item in picks:
        op_def = ops.get(item["op"])
        if op_def is None:
            continue
        planned = probe.plan(op_def)
        if isinstance(planned, str):
            continue
        primary, _, fixed, specs, others = planned
        graph = tf.Graph()
        swept = []
        with graph.as_default():
            inputs = []
            for type_attr, fixed_dtype, count in specs:
                its = (
                    item["dtype"]
                    if primary and type_attr == primary
                    else (fixed_dtype or others.get(type_attr))
                )
                for _ in range(count):
                    tf_type = tf.as_dtype(types_pb2.DataType.Value(its))
                    if item["layout"] == "same" or (primary and type_attr == primary):
                        inputs.append(v1.placeholder(tf_type, shape=None, name="x%d" % len(swept)))
                        swept.append(its)
                    else:
                        value = probe.aux_value(its, item["layout"])
                        inputs.append(tf.constant(probe._array(its, value)))
            attrs = dict(fixed)
            if primary:
                attrs[primary] = attr_value_pb2.AttrValue(
                    type=types_pb2.DataType.Value(item["dtype"])
                )
            create = getattr(graph, "_create_op_internal", None) or graph.create_op
            try:
                op = create(item["op"], inputs, None, name="op", attrs=attrs)
            except Exception as exc:  # noqa: BLE001
                sys.stderr.write("%s: %s\n" % (item["op"], exc))
                continue
            fetches = []
            for n, out in enumerate(op.outputs):
                if out.dtype in (tf.resource, tf.variant):
                    continue
                fetches.append(tf.identity(out, name="y%d" % n).name)
        if not fetches or not swept:
            continue
        case = "%s_%s" % (item["op"], item["dtype"][3:].lower())
        folder = os.path.join(args.out, case)
        if not os.path.isdir(folder):
            os.makedirs(folder)
        with open(os.path.join(folder, "frozen_graph.pb"), "wb") as handle:
            handle.write(graph.as_graph_def().SerializeToString())
        doc = {
            "case": case,
            "feeds": _feeds(swept, args.integers, shape, args.feed_seed),
            "feed_kinds": ["ordinary", "edges", "integers"][: 3 if args.integers else 2],
            "fetches": fetches,
            "made_by": "tools/kernels/heldout.py make (Graph.create_op in a tf.compat.v1 graph, Graph.as_graph_def())",
            "producer": probe.VERSION,
            "sets": [],
            "picked": item,
        }
        with open(os.path.join(folder, "case.json"), "w") as handle:
            json.dump(doc, handle, indent=1, sort_keys=True)
            handle.write("\n")
        print(case)
    return 0


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    picked = sub.add_parser("pick")
    picked.add_argument("--table", required=True)
    picked.add_argument("--cache", required=True)
    picked.add_argument("--ops", required=True)
    picked.add_argument("--seed", type=int, default=37)
    picked.add_argument("--ordinary", type=int, default=0)
    picked.add_argument("--differs", type=int, default=14)
    picked.add_argument("--fixture", type=int, default=14)
    picked.add_argument(
        "--exclude", action="append", default=[], help="a set's folder: leave its pairs out"
    )
    made = sub.add_parser("make")
    made.add_argument("--picks", required=True)
    made.add_argument("--out", required=True)
    made.add_argument(
        "--integers",
        action="store_true",
        help="a third feed of integer values -10..100 (the sweep's indices class drawn again)",
    )
    made.add_argument("--shape", default="2,3", help="rows,columns of every feed")
    made.add_argument("--feed-seed", type=int, default=FEED_SEED)
    args = parser.parse_args()
    return pick(args) if args.command == "pick" else make(args)


if __name__ == "__main__":
    sys.exit(main())
