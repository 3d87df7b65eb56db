"""Measure what one TensorFlow release's XlaCallModule accepts (run under that release).

    $TFENVS/2.15.1/bin/python tools/xla/measure.py --modules DIR > ROWS.json

DIR is what `modules.py` wrote. In graph mode, on the CPU, as a Session (TF Serving's
way) runs it: every case builds one XlaCallModule node (`build`: the op's
registration and attrs, what a graph import checks) and runs it once (`run`: the
kernel is built, the module deserialized and its version and platforms checked, and
XLA compiles it: what the first request does). Cases:
- `version`: every `version` from 1 to 12, the oldest StableHLO module (as MLIR
  text when the release reads no bytecode), platforms ['CPU'];
- `platforms`: at the newest version the release accepts (and at 5), platform lists
  with and without 'CPU', lowercase, empty, several (module with a platform index
  argument), and 'CUDA' only with disabled_checks=['platform'];
- `stablehlo`: bisects the stamped StableHLO versions for the newest one the release
  deserializes (`add` modules), and `rich` likewise for modules of jax's usual math
  ops, whose encodings changed;
- `order`: two of version, platform and module wrong at once: which check fails first.
Prints one JSON document: {"tensorflow", "op_attrs", "cases": [...]}, each case with
its attrs and {"ok", "step", "error"}. Standard library, numpy and TensorFlow only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np
import tensorflow as tf


def op_attrs() -> list:
    from tensorflow.python.framework import op_def_registry

    op = op_def_registry.get("XlaCallModule")
    return [] if op is None else [a.name for a in op.attr]


ATTRS = op_attrs()


def call_module(**kwargs):
    """The op's generated wrapper (not in tf.raw_ops: its module is tf2xla's)."""
    from tensorflow.compiler.tf2xla.ops import gen_xla_ops

    return gen_xla_ops.xla_call_module(**kwargs)


def short(exc: BaseException) -> str:
    """The release's own words: past the traceback of where the node was defined."""
    text = getattr(exc, "message", None) or str(exc)
    if "\nNode: '" in text:
        text = text.rsplit("\nNode: '", 1)[1].split("\n", 1)[-1]
    text = text.split("\n\nStack trace")[0].split("\n\t [[")[0].split("\n\n\t")[0]
    return " ".join(text.split())[:600]


def attempt(module: bytes, version: int, platforms: list, disabled_checks: list = ()) -> dict:
    wanted = {
        "version": version,
        "module": module,
        "Sout": [tf.TensorShape([2])],
        "Tout": [tf.float32],
        "dim_args_spec": [],
        "platforms": list(platforms),
        "disabled_checks": list(disabled_checks),
    }
    if "version" not in ATTRS:  # 2.10-2.11's op has no version: whatever it was is ignored
        del wanted["version"]
    kwargs = {}
    for name, value in wanted.items():
        if name in ATTRS:
            kwargs[name] = value
        elif value not in ([], ()):
            return {"ok": False, "step": "build", "error": f"the OpDef has no attr {name!r}"}
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        try:
            (y,) = call_module(args=[x], **kwargs)
        except Exception as exc:  # what the release says is the measurement
            return {"ok": False, "step": "build", "error": short(exc)}
    with tf.compat.v1.Session(graph=graph) as sess:
        try:
            got = sess.run(y, {x: np.array([1.0, 2.0], np.float32)})
        except Exception as exc:
            return {"ok": False, "step": "run", "error": short(exc)}
    if not np.allclose(got, [2.0, 4.0]):
        return {"ok": False, "step": "run", "error": f"wrong result {got.tolist()}"}
    return {"ok": True, "step": None, "error": None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", required=True)
    args = parser.parse_args()
    root = args.modules
    with open(os.path.join(root, "index.json")) as f:
        index = {m["name"]: m for m in json.load(f)}
    with open(os.path.join(root, "versions.json")) as f:
        targets = json.load(f)["targets"]

    def module(name: str) -> bytes:
        with open(os.path.join(root, index[name]["file"]), "rb") as f:
            return f.read()

    oldest = module(f"add_{targets[0]}")
    several = module(f"add_{targets[0]}_platform_arg")
    cases = []

    def record(
        kind: str, version: int, platforms: list, disabled=(), target=None, data=None
    ) -> dict:
        outcome = attempt(oldest if data is None else data, version, platforms, disabled)
        row = {
            "kind": kind,
            "version": version,
            "platforms": list(platforms),
            "disabled_checks": list(disabled),
            "stablehlo": target or targets[0],
            **outcome,
        }
        cases.append(row)
        return row

    if not ATTRS:
        print(json.dumps({"tensorflow": tf.__version__, "op_attrs": [], "cases": []}))
        return 0
    cpu = ["CPU"] if "platforms" in ATTRS else []  # 2.12's op has no platforms attr
    text = module("add_text")
    accepted = []
    for v in range(1, 13):
        row = record("version", v, cpu)
        if not row["ok"] and "deserialize" in (row["error"] or ""):
            cases.pop()  # the bytecode was not read: try the module as MLIR text
            row = record("version", v, cpu, target="text", data=text)
        if row["ok"]:
            accepted.append(v)
    newest = max(accepted) if accepted else 5
    for version in sorted({newest, 5}) if cpu else ():
        for platforms, disabled, data in (
            (["CPU"], (), None),
            (["CUDA"], (), None),
            (["TPU"], (), None),
            (["ROCM"], (), None),
            (["cpu"], (), None),
            ([], (), None),
            (["CPU", "CUDA"], (), several),
            (["CUDA", "CPU"], (), several),
            (["CUDA"], ("platform",), None),
        ):
            record("platforms", version, platforms, disabled, data=data)
    # The newest stamped StableHLO version it reads back: bisect (reading is monotonic).
    low, high = 0, len(targets) - 1
    if record("stablehlo", newest, cpu, target=targets[low], data=module(f"add_{targets[low]}"))[
        "ok"
    ]:
        if record(
            "stablehlo", newest, cpu, target=targets[high], data=module(f"add_{targets[high]}")
        )["ok"]:
            low = high
        while high - low > 1:
            mid = (low + high) // 2
            if record(
                "stablehlo", newest, cpu, target=targets[mid], data=module(f"add_{targets[mid]}")
            )["ok"]:
                low = mid
            else:
                high = mid
    # The same for a module of jax's usual math ops (their encodings changed over time).
    rich_ok = record("rich", newest, cpu, target=targets[0], data=module(f"rich_{targets[0]}"))
    low, high = 0, len(targets) - 1
    if rich_ok["ok"]:
        if record("rich", newest, cpu, target=targets[high], data=module(f"rich_{targets[high]}"))[
            "ok"
        ]:
            low = high
        while high - low > 1:
            mid = (low + high) // 2
            if record(
                "rich", newest, cpu, target=targets[mid], data=module(f"rich_{targets[mid]}")
            )["ok"]:
                low = mid
            else:
                high = mid
    # Which check comes first when two fail: a version above the newest it runs, a
    # platform list without CPU, a module it cannot read (the newest stamp).
    unread = module(f"rich_{targets[-1]}")
    if cpu:
        record("order", newest + 1, ["CUDA"])
        record("order", newest, ["CUDA"], target=targets[-1], data=unread)
    record("order", newest + 1, cpu, target=targets[-1], data=unread)
    print(json.dumps({"tensorflow": tf.__version__, "op_attrs": ATTRS, "cases": cases}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
