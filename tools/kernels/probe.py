"""Run every op this release can build generically on edge-case inputs (its own Python).

    <venv>/bin/python tools/kernels/probe.py [--skip OP,...] [--only OP,...] > RESULTS.jsonl

For each registered op whose node can be made from its OpDef alone (every attr
without a default is a type, or a count of a list input), and for each dtype the
op takes among SWEEP_DTYPES, one graph holds one node per input class and layout;
each node is fed by placeholders (so nothing is constant-folded) and run on the
CPU with one thread and Grappler off, so what is measured is the kernel. The nodes
of a graph run in one call, the group halved where some node raises. Every node runs
twice, the first answers kept alive so the second gets other buffers: one whose two
runs differ is nondeterministic (a seedless random op, a clock, output memory the
kernel never wrote: DynamicStitch in 2.12 to 2.15) and is marked so rather than
compared. Seed attrs are fixed.

Input classes (values in CLASS_VALUES, the same in every release): ordinary
(seeded uniform values), halves (rounding ties), special (NaN, +-inf, -0.0,
denormals), large (near the dtype's limits: overflow), tiny (near the smallest
normal), empty (a zero-sized tensor), scalar, indices (negative and out-of-range
integers). Layouts: "same" (every input the class's [2, 3] tensor of its own
dtype), "aux" (the inputs of the swept type the class's tensor, every other
input the scalar 1 of its dtype: an axis, a count, a flag) and "vector" (the same
with [1]: a shape, a size list); the last two only for ops with such inputs.

Output, one JSON line each, flushed as they come so a driver can restart past an op
that crashes or hangs the process: {"release", "classes": {dtype: {class: value}}}
(what each input class holds; "EMPTY" is a [2, 0] tensor), then per op {"start": op} before
it is built, then {"op", "type_attr", "runs": [...]} or {"op", "unbuildable":
reason}; a run is {"dtype", "class", "layout"} plus {"outputs": [{"dtype",
"shape", "values", "n", "sha"}]} | {"error": class} | {"build_error": class} and
"nondeterministic": true where the two runs differed, with the differing run under
"second" ({"outputs": [...]} or {"error": class}). Values: floats as repr
strings, integers and bools as numbers, strings as base64; at most MAX_VALUES of
them, "sha" covering all bytes.

Runs under every Python a TensorFlow release came with (3.7): standard library,
numpy and TensorFlow only.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

try:  # a node asking for a huge tensor fails its allocation instead of the machine
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (12 << 30, 12 << 30))
except Exception:
    pass

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2, op_def_pb2, types_pb2

v1 = tf.compat.v1
VERSION = getattr(getattr(tf, "version", None), "VERSION", None) or tf.__version__
SWEEP_DTYPES = (
    "DT_FLOAT",
    "DT_HALF",
    "DT_BFLOAT16",
    "DT_DOUBLE",
    "DT_INT32",
    "DT_INT64",
    "DT_UINT8",
    "DT_BOOL",
)
PREFERRED = ("DT_FLOAT", "DT_INT32", "DT_INT64", "DT_DOUBLE", "DT_BOOL", "DT_STRING")
CLASSES = ("ordinary", "halves", "special", "large", "tiny", "empty", "scalar", "indices")
LAYOUTS = ("same", "aux", "vector")
MAX_VALUES = 64
SEED = 20261204
# Ops whose run touches the world outside the graph (files, the process, clocks,
# queues, devices) or needs a runtime a lone node lacks: never run.
DENIED = re.compile(
    r"^(Abort|ImmutableConst|Print|PrintV2|Timestamp|ReadFile|WriteFile|MatchingFiles"
    r"|Save|SaveV2|SaveSlices|Restore|RestoreV2|RestoreSlice|MergeV2Checkpoints"
    r"|ShardedFilename|ShardedFilespec|DebugIdentity.*|DebugNumericSummary.*|DebugNanCount"
    r"|Copy|CopyHost|_.*)$"
    r"|File|Writer|Summary|Queue|Barrier|Iterator|Dataset|Reader|Checkpoint|Collective"
    r"|Send|Recv|Nccl|TPU|Tpu|Stage|Accumulator|Rpc|Bigtable|BigQuery|Gcs|Session"
    r"|Mutex|Profiler|Sleep|Xla|Mlir|Enqueue|Dequeue|Infeed|Outfeed"
)

NP_TYPES = {
    "DT_FLOAT": np.float32,
    "DT_DOUBLE": np.float64,
    "DT_HALF": np.float16,
    "DT_INT32": np.int32,
    "DT_INT64": np.int64,
    "DT_UINT8": np.uint8,
    "DT_INT8": np.int8,
    "DT_INT16": np.int16,
    "DT_UINT16": np.uint16,
    "DT_UINT32": np.uint32,
    "DT_UINT64": np.uint64,
    "DT_BOOL": np.bool_,
    "DT_COMPLEX64": np.complex64,
    "DT_COMPLEX128": np.complex128,
}
FLOAT_LIMITS = {
    # (largest finite, a denormal, smallest normal)
    "DT_FLOAT": (3.4028235e38, 1e-40, 1.1754944e-38),
    "DT_BFLOAT16": (3.3895314e38, 1e-40, 1.1754944e-38),
    "DT_HALF": (65504.0, 1e-6, 6.1035156e-05),
    "DT_DOUBLE": (1.7976931348623157e308, 1e-310, 2.2250738585072014e-308),
}


def _float_values(dtype, cls):
    big, denormal, normal = FLOAT_LIMITS.get(dtype, FLOAT_LIMITS["DT_FLOAT"])
    if cls == "ordinary":
        rng = np.random.RandomState(SEED)
        return np.round(rng.uniform(-3.0, 3.0, size=(2, 3)), 3).tolist()
    if cls == "halves":
        return [[-2.5, -1.5, -0.5], [0.5, 1.5, 2.5]]
    if cls == "special":
        return [[float("nan"), float("inf"), float("-inf")], [-0.0, denormal, -denormal]]
    if cls == "large":
        return [[big, -big, big / 3.0], [-big / 7.0, 88.75, -11.5]]
    if cls == "tiny":
        return [[normal, -normal, normal * 3.0], [normal * 1.5, -normal * 7.0, normal * 1000.0]]
    if cls == "indices":
        return [[-1.0, 0.0, 5.0], [100.0, 2.0, -7.0]]
    if cls == "scalar":
        return 0.7
    return None


def _int_values(dtype, cls):
    info = np.iinfo(NP_TYPES[dtype])
    lo, hi = int(info.min), int(info.max)
    if cls == "ordinary":
        rng = np.random.RandomState(SEED)
        low = 0 if lo == 0 else -5
        return rng.randint(low, 6, size=(2, 3)).tolist()
    if cls == "special":
        return [[0, hi, 1], [lo, hi - 1, lo + 1]]
    if cls == "large":
        return [[hi, hi // 2 + 1, hi - 3], [lo, lo // 2 - 1 if lo else 200, hi // 3]]
    if cls == "indices":
        return [[lo and -1, 0, 5], [100, 2, lo and -7]]
    if cls == "scalar":
        return 3
    return None


def class_value(dtype, cls):
    """The class's value for an input of `dtype`, or None where the class means nothing
    for that dtype (halves of an integer): the run is left out, in every release."""
    if cls == "empty":
        return "EMPTY"
    if dtype in FLOAT_LIMITS or dtype in ("DT_COMPLEX64", "DT_COMPLEX128"):
        return _float_values(dtype, cls)
    if dtype in NP_TYPES and dtype != "DT_BOOL":
        return _int_values(dtype, cls)
    if dtype == "DT_BOOL":
        return {"ordinary": [[True, False, True], [False, False, True]], "scalar": True}.get(cls)
    if dtype == "DT_STRING":
        return {
            "ordinary": [["a", "bc", ""], ["1.5", "x y", "\u00ff"]],
            "special": [["nan", "inf", "-0"], ["1e40", "  3", "0x1F"]],
            "scalar": "a",
        }.get(cls)
    return None


def aux_value(dtype, layout):
    """An input not of the swept type: an axis, a count, a size, a flag."""
    value = True if dtype == "DT_BOOL" else "a" if dtype == "DT_STRING" else 1
    return [value] if layout == "vector" else value


def _array(dtype, value):
    if dtype == "DT_STRING":
        if value == "EMPTY":
            return np.zeros((2, 0), dtype=object)
        flat = np.array(value, dtype=object)
        return np.vectorize(lambda s: s.encode("utf-8"), otypes=[object])(flat)
    numpy_type = tf.as_dtype(types_pb2.DataType.Value(dtype)).as_numpy_dtype
    if value == "EMPTY":
        return np.zeros((2, 0), dtype=numpy_type)
    if dtype == "DT_BFLOAT16":
        return _to_bfloat16(np.array(value, dtype=np.float32)).view(numpy_type)
    with np.errstate(all="ignore"):
        return np.array(
            np.array(value, dtype=np.float64 if dtype in FLOAT_LIMITS else None)
        ).astype(numpy_type)


def _to_bfloat16(array):
    """float32 -> bfloat16 bits, rounded to nearest even, by integer arithmetic: the
    releases' numpy bfloat16 types disagree on denormals, the bits do not."""
    bits = array.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(array)
    return np.where(nan, (bits >> 16) | 0x40, rounded).astype(np.uint16)


def _from_bfloat16(array):
    """bfloat16 -> float32 by its bits (exact)."""
    bits = np.asarray(array).view(np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32)


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


def _allowed(attr):
    if not attr.HasField("allowed_values"):
        return None
    return [types_pb2.DataType.Name(t) for t in attr.allowed_values.list.type]


def _pick(attr):
    names = _allowed(attr)
    if not names:
        return "DT_FLOAT"
    for name in PREFERRED:
        if name in names:
            return name
    return names[0]


def plan(op_def):
    """(primary type attr or None, [dtype, ...], fixed attrs, input specs) or a reason the op
    cannot be built generically. An input spec is (type attr or None, fixed dtype, count)."""
    attrs_by_name = dict((a.name, a) for a in op_def.attr)
    fixed = {}
    for attr in op_def.attr:
        if attr.name in ("seed", "seed2") and attr.type == "int":
            fixed[attr.name] = attr_value_pb2.AttrValue(i=1 if attr.name == "seed" else 2)
    number_attrs = set(a.number_attr for a in op_def.input_arg if a.number_attr)
    for attr in op_def.attr:
        if attr.HasField("default_value") or attr.type == "type":
            continue
        if attr.name in number_attrs and attr.type == "int":
            fixed[attr.name] = attr_value_pb2.AttrValue(i=2)
            continue
        return "attr %s (%s) has no default" % (attr.name, attr.type)
    specs = []
    for arg in op_def.input_arg:
        if arg.type_list_attr:
            return "input %s is a list of types" % arg.name
        if arg.is_ref:
            return "input %s is a reference" % arg.name
        count = 2 if arg.number_attr else 1
        if arg.type_attr:
            specs.append((arg.type_attr, None, count))
        else:
            name = types_pb2.DataType.Name(arg.type)
            if name in ("DT_RESOURCE", "DT_VARIANT"):
                return "input %s is a %s" % (arg.name, name)
            specs.append((None, name, count))
    if not specs:
        return "no inputs"
    typed = [s[0] for s in specs if s[0]]
    primary = "T" if "T" in typed else (typed[0] if typed else None)
    others = {}
    for attr in op_def.attr:
        if attr.type != "type" or attr.name == primary:
            continue
        if attr.HasField("default_value"):
            others[attr.name] = types_pb2.DataType.Name(attr.default_value.type)
        else:
            others[attr.name] = _pick(attr)
            fixed[attr.name] = attr_value_pb2.AttrValue(
                type=types_pb2.DataType.Value(others[attr.name])
            )
    for type_attr, _fixed, _ in specs:
        if (
            type_attr
            and type_attr != primary
            and others.get(type_attr) in ("DT_RESOURCE", "DT_VARIANT")
        ):
            return "input of type %s" % others[type_attr]
    if primary is None:
        dtypes = [specs[0][1]]
    else:
        allowed = _allowed(attrs_by_name[primary])
        dtypes = [d for d in SWEEP_DTYPES if allowed is None or d in allowed]
        if not dtypes:
            return "none of the swept dtypes is allowed for %s" % primary
    return primary, dtypes, fixed, specs, others


def _encode(value):
    array = np.asarray(value)
    raw = (
        array.tobytes()
        if array.dtype != object
        else b"".join(v if isinstance(v, bytes) else str(v).encode() for v in array.ravel())
    )
    if str(array.dtype) == "bfloat16":
        array = _from_bfloat16(array)
    elif array.dtype.kind == "V" or str(array.dtype) == "float16":
        array = array.astype(np.float32)
    flat = array.ravel()[:MAX_VALUES]
    if array.dtype == object or array.dtype.kind in "SU":
        values = [base64.b64encode(v).decode() if isinstance(v, bytes) else str(v) for v in flat]
        dtype = "string"
    elif array.dtype.kind in "fc":
        values = [repr(v) for v in flat.tolist()]
        dtype = str(np.asarray(value).dtype)
        dtype = "bfloat16" if "bfloat16" in dtype else dtype
    else:
        values = flat.tolist()
        dtype = str(array.dtype)
    return {
        "dtype": dtype,
        "shape": list(array.shape),
        "n": int(array.size),
        "values": values,
        "sha": hashlib.sha256(raw).hexdigest()[:16],
    }


def _config():
    config = v1.ConfigProto(
        device_count={"GPU": 0}, intra_op_parallelism_threads=1, inter_op_parallelism_threads=1
    )
    try:
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    except Exception:
        pass
    config.graph_options.optimizer_options.opt_level = -1  # L0: no constant folding
    return config


def sweep_op(op_def):
    planned = plan(op_def)
    if isinstance(planned, str):
        return {"op": op_def.name, "unbuildable": planned}
    primary, dtypes, fixed, specs, others = planned
    runs = []
    for dtype in dtypes:
        graph = tf.Graph()
        nodes = []
        with graph.as_default():
            create = getattr(graph, "_create_op_internal", None) or graph.create_op
            for cls in CLASSES:
                for layout in LAYOUTS:
                    if layout != "same" and all(s[0] == primary and primary for s in specs):
                        continue
                    run = {"dtype": dtype, "class": cls, "layout": layout}
                    feeds = {}
                    inputs = []
                    skip = False
                    for type_attr, fixed_dtype, count in specs:
                        its = dtype if type_attr == primary and primary else None
                        its = its or fixed_dtype or others.get(type_attr)
                        for _ in range(count):
                            if layout == "same" or (primary and type_attr == primary):
                                value = class_value(its, cls)
                            else:
                                value = aux_value(its, layout)
                            if value is None:
                                skip = True
                                break
                            try:
                                array = _array(its, value)
                                holder = v1.placeholder(
                                    tf.as_dtype(types_pb2.DataType.Value(its)), shape=array.shape
                                )
                            except Exception as exc:
                                run["build_error"] = "input: %s" % type(exc).__name__
                                skip = True
                                break
                            feeds[holder] = array
                            inputs.append(holder)
                        if skip:
                            break
                    if skip and "build_error" not in run:
                        continue
                    if "build_error" not in run:
                        attrs = dict(fixed)
                        if primary:
                            attrs[primary] = attr_value_pb2.AttrValue(
                                type=types_pb2.DataType.Value(dtype)
                            )
                        try:
                            op = create(
                                op_def.name,
                                inputs,
                                None,
                                name="n_%s_%s" % (cls, layout),
                                attrs=attrs,
                            )
                            fetches = [
                                o for o in op.outputs if o.dtype not in (tf.resource, tf.variant)
                            ]
                            nodes.append((run, op, fetches, feeds))
                        except Exception as exc:
                            run["build_error"] = type(exc).__name__
                    runs.append(run)
        if not nodes:
            continue
        with v1.Session(graph=graph, config=_config()) as sess:
            _run_nodes(sess, nodes, 2)
    return {"op": op_def.name, "type_attr": primary, "runs": runs}


def _answers(sess, nodes, times):
    """Each node's answers (`times` runs of all nodes in one call), or None when some node
    raised: one error must not be charged to the others."""
    fetches, feeds = [], {}
    for _, op, outs, node_feeds in nodes:
        fetches.append(outs or [op])
        feeds.update(node_feeds)
    try:
        got = [sess.run(fetches, feed_dict=feeds) for _ in range(times)]
    except Exception:
        return None
    found = []
    for n, (_, _, outs, _) in enumerate(nodes):
        found.append([[_encode(g) for g in run[n]] if outs else [] for run in got])
    return found


def _run_nodes(sess, nodes, times):
    """Run every node `times` times (twice but for a seeded stateful op: two answers that
    differ mark it nondeterministic); together first, halving the group where some node
    raises."""
    together = _answers(sess, nodes, times)
    if together is None and len(nodes) > 1:
        half = len(nodes) // 2
        _run_nodes(sess, nodes[:half], times)
        _run_nodes(sess, nodes[half:], times)
        return
    for n, (run, op, fetches, feeds) in enumerate(nodes):
        if together is not None:
            answers = together[n]
        else:
            answers = []
            for _ in range(times):
                try:
                    got = sess.run(fetches or [op], feed_dict=feeds)
                    answers.append([_encode(g) for g in got] if fetches else [])
                except Exception as exc:
                    answers.append({"error": type(exc).__name__})
        if isinstance(answers[0], dict):
            run.update(answers[0])
        else:
            run["outputs"] = answers[0]
        other = next((a for a in answers[1:] if a != answers[0]), None)
        if other is not None:
            run["nondeterministic"] = True
            if isinstance(other, dict):
                run["second"] = other
            else:
                run["second"] = {"outputs": other}


def emit(line):
    sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
    sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip", default="")
    parser.add_argument("--only", default="")
    args = parser.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    only = set(filter(None, args.only.split(",")))
    classes = {}
    for dtype in SWEEP_DTYPES + ("DT_STRING",):
        for cls in CLASSES:
            value = class_value(dtype, cls)
            if value is not None:
                classes.setdefault(dtype, {})[cls] = value
    emit({"release": VERSION, "classes": classes})
    for op_def in sorted(_op_list(), key=lambda o: o.name):
        name = op_def.name
        if name in skip or (only and name not in only):
            continue
        if DENIED.search(name):
            emit({"op": name, "unbuildable": "denied: touches files, clocks, queues or devices"})
            continue
        emit({"start": name})
        emit(sweep_op(op_def))
    emit({"done": True})


if __name__ == "__main__":
    main()
