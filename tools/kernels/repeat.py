#!/usr/bin/env python3
"""Run a held-out model's feeds many times in one session of each release; count answers.

    nice python3 tools/kernels/repeat.py CASE_DIR [CASE_DIR...] --envs $TFENVS
                                         --releases 2.12.1,2.13.1 [--times 20]

`kernel.nondeterministic` says a request may get another answer than the last with
the same inputs. A held-out cell (tools/attrs/outcomes.py) runs each feed once in a
fresh process, which cannot show that; this runs the case's feeds in turn, `--times`
rounds in one session of frozen_graph.pb (requests alternate, as a served model's do),
every answer kept alive (as the sweep's probe does), and prints per release and feed
how many distinct answers it got (1: the same every time). Standard library
here; numpy and TensorFlow in the release's own Python.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

RUNNER = r"""
import json, sys, hashlib
import numpy as np
import tensorflow as tf
v1 = tf.compat.v1
case = json.load(open(sys.argv[1]))
graph_def = v1.GraphDef()
graph_def.ParseFromString(open(sys.argv[2], "rb").read())
times = int(sys.argv[3])
graph = tf.Graph()
with graph.as_default():
    tf.import_graph_def(graph_def, name="")
feeds = []
for feed in case["feeds"]:
    named = {}
    for name, value in feed.items():
        tensor = graph.get_tensor_by_name(name)
        named[tensor] = np.asarray(value, dtype=tensor.dtype.as_numpy_dtype)
    feeds.append(named)
kept, seen = [], [set() for _ in feeds]
with v1.Session(graph=graph) as sess:
    for _ in range(times):
        for n, named in enumerate(feeds):  # requests alternate, as a served model's do
            got = sess.run(case["fetches"], feed_dict=named)
            kept.append(got)
            raw = b"".join(np.ascontiguousarray(g).tobytes() for g in got)
            seen[n].add(hashlib.sha256(raw).hexdigest())
print(json.dumps([len(s) for s in seen]))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument(
        "--envs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs"))
    )
    parser.add_argument("--releases", required=True)
    parser.add_argument("--times", type=int, default=20)
    args = parser.parse_args(argv)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""}
    for case in args.cases:
        for release in filter(None, args.releases.split(",")):
            python = args.envs / release / "bin" / "python"
            done = subprocess.run(
                [
                    "nice",
                    "-n",
                    "19",
                    str(python),
                    "-c",
                    RUNNER,
                    str(case / "case.json"),
                    str(case / "frozen_graph.pb"),
                    str(args.times),
                ],
                capture_output=True,
                text=True,
                check=False,
                env=env,
            )
            lines = done.stdout.strip().splitlines()
            answers = json.loads(lines[-1]) if done.returncode == 0 and lines else None
            why = "" if answers is not None else done.stderr.strip().splitlines()[-1:]
            print(f"{case.name} {release}: distinct answers per feed {answers} {why}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
