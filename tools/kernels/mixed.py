"""Run the ops with two or more inputs of their swept type on operands of different classes.

    <venv>/bin/python tools/kernels/mixed.py [--skip OP,...] [--only OP,...] > RESULTS.jsonl

tools/kernels/probe.py feeds every swept input the same class, so a binary op never
meets NaN against a number (Minimum, Maximum, DynamicStitch) nor INT_MIN / -1 (an
integer division that overflows). Here, for every op the probe can plan (the same
OpDef plan, attrs and dtypes) with at least two inputs of its swept type, the first
such input and the others take different values, the remaining inputs the scalar 1:
- `mixed`: the first ordinary, the others special (NaN, +-inf, -0.0, denormals; for
  integers 0, the extremes);
- `mixed_swapped`: the first special, the others ordinary;
- `int_min_by_minus_one` (signed integers): the first INT_MIN (and a few ordinary
  values), the others -1 (and 1, 2);
- `ordinary_pair`: the first ordinary, the others another draw of ordinary values
  (none of them 0): the probe's "same" layout feeds x against x (Div gives 1,
  TruncateDiv float then hides that 1.13 to 2.3 divide without truncating), so a
  binary op's answer on two different ordinary operands is measured only here. An
  ordinary class (tools/kernels/sweep.py ORDINARY_CLASSES).
Its own process and cache file (tools/kernels/runs.py). `int_min_by_minus_one` runs
after the other classes, as a second line of the op ({"start": "OP:int_min_by_minus_one"}
before it): an integer division that traps kills the process there (Div, FloorDiv,
TruncateDiv, FloorMod, Mod, TruncateMod in the releases before 2.5) and loses that
class only, not the op's other classes in every dtype. Same
output lines as probe.py, layouts prefixed `m:`, so tools/kernels/sweep.py merges
them; the first line's `classes` holds each class's operands per dtype.

Runs under every Python a TensorFlow release came with (3.7).
"""

from __future__ import print_function

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import probe  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import attr_value_pb2, types_pb2  # noqa: E402

v1 = tf.compat.v1
TRAPPING = "int_min_by_minus_one"
CLASSES = ("mixed", "mixed_swapped", "ordinary_pair", TRAPPING)
SIGNED = ("DT_INT32", "DT_INT64")
OTHER_SEED = 20261205  # the second ordinary operand's draw (probe.SEED draws the first)


def other_ordinary(dtype):
    """Ordinary values of `dtype` drawn apart from the probe's, none of them 0 (a
    divisor): floats from +-0.25 to +-3, integers from +-1 to +-5 (1 to 5 unsigned),
    booleans the other pattern; None where the class means nothing."""
    rng = np.random.RandomState(OTHER_SEED)
    if dtype == "DT_BOOL":
        return [[False, True, True], [True, False, False]]
    if dtype in probe.FLOAT_LIMITS or dtype in ("DT_COMPLEX64", "DT_COMPLEX128"):
        signs = rng.choice([-1.0, 1.0], size=(2, 3))
        return np.round(signs * rng.uniform(0.25, 3.0, size=(2, 3)), 3).tolist()
    if dtype in probe.NP_TYPES:
        unsigned = int(np.iinfo(probe.NP_TYPES[dtype]).min) == 0
        values = rng.randint(1, 6, size=(2, 3))
        if not unsigned:
            values = values * rng.choice([-1, 1], size=(2, 3))
        return values.tolist()
    return None


def operands(dtype, cls):
    """(the first swept input's value, the others') for the class, or None."""
    if cls == "int_min_by_minus_one":
        if dtype not in SIGNED:
            return None
        lo = int(np.iinfo(probe.NP_TYPES[dtype]).min)
        return [[lo, lo, 7], [-7, lo, 5]], [[-1, 1, -1], [2, -1, -1]]
    ordinary = probe.class_value(dtype, "ordinary")
    if cls == "ordinary_pair":
        other = other_ordinary(dtype)
        return None if ordinary is None or other is None else (ordinary, other)
    special = probe.class_value(dtype, "special")
    if ordinary is None or special is None:
        return None
    return (ordinary, special) if cls == "mixed" else (special, ordinary)


def sweep_op(op_def, classes=CLASSES):
    planned = probe.plan(op_def)
    if isinstance(planned, str):
        return {"op": op_def.name, "unbuildable": planned}
    primary, dtypes, fixed, specs, others = planned
    swept = sum(count for type_attr, _, count in specs if primary and type_attr == primary)
    if swept < 2:
        return None
    layout = "m:same" if all(s[0] == primary for s in specs) else "m:aux"
    runs = []
    for dtype in dtypes:
        graph = tf.Graph()
        nodes = []
        with graph.as_default():
            create = getattr(graph, "_create_op_internal", None) or graph.create_op
            for cls in classes:
                pair = operands(dtype, cls)
                if pair is None:
                    continue
                run = {"dtype": dtype, "class": cls, "layout": layout}
                feeds, inputs, nth = {}, [], 0
                try:
                    for type_attr, fixed_dtype, count in specs:
                        its = dtype if type_attr == primary else None
                        its = its or fixed_dtype or others.get(type_attr)
                        for _ in range(count):
                            if type_attr == primary:
                                value = pair[0] if nth == 0 else pair[1]
                                nth += 1
                            else:
                                value = probe.aux_value(its, "aux")
                            array = probe._array(its, value)
                            holder = v1.placeholder(
                                tf.as_dtype(types_pb2.DataType.Value(its)), shape=array.shape
                            )
                            feeds[holder] = array
                            inputs.append(holder)
                    attrs = dict(fixed)
                    attrs[primary] = attr_value_pb2.AttrValue(type=types_pb2.DataType.Value(dtype))
                    op = create(op_def.name, inputs, None, name="m_%s" % cls, attrs=attrs)
                    outs = [o for o in op.outputs if o.dtype not in (tf.resource, tf.variant)]
                    nodes.append((run, op, outs, feeds))
                except Exception as exc:  # noqa: BLE001
                    run["build_error"] = type(exc).__name__
                runs.append(run)
        if nodes:
            with v1.Session(graph=graph, config=probe._config()) as sess:
                probe._run_nodes(sess, nodes, 2)
    return {"op": op_def.name, "type_attr": primary, "runs": runs}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip", default="")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    classes = {}
    for dtype in probe.SWEEP_DTYPES:
        for cls in CLASSES:
            pair = operands(dtype, cls)
            if pair is not None:
                classes.setdefault(dtype, {})[cls] = list(pair)
    probe.emit({"release": probe.VERSION, "mixed": True, "classes": classes})
    for op_def in sorted(probe._op_list(), key=lambda o: o.name):
        name = op_def.name
        if name in skip or (only and name not in only) or probe.DENIED.search(name):
            continue
        probe.emit({"start": name})
        safe = tuple(c for c in CLASSES if c != TRAPPING)
        line = sweep_op(op_def, safe)
        probe.emit(line if line is not None else {"op": name, "not_binary": True})
        if line is None or "runs" not in line:
            continue
        probe.emit({"start": "%s:%s" % (name, TRAPPING)})  # may kill the process
        trapping = sweep_op(op_def, (TRAPPING,))
        if trapping is not None and trapping.get("runs"):
            probe.emit(trapping)
    probe.emit({"done": True})


if __name__ == "__main__":
    main()
