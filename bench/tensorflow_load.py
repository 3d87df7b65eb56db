"""Bench: TensorFlow itself loading a ResNet50 next to our `check` of the same files.

Needs a TensorFlow virtualenv (the ones tools/build_registries.py installs);
without one it prints a skipped row and exits 0. The interpreter is
$TFCOMPAT_BENCH_TF_PYTHON, else the newest $TFENVS/<version>/bin/python
that imports TensorFlow (TFCOMPAT_BENCH_TFENVS names another folder).

Once per TensorFlow version it writes, with TensorFlow, a Keras ResNet50
(random weights, nothing downloaded) as a SavedModel (`tf.saved_model.save`)
and as a frozen GraphDef (`convert_variables_to_constants_v2`), cached under
~/.cache/tfcompat-bench/. Then, each command in a fresh process, interleaved,
medians of --runs:

  TensorFlow: read + tf.import_graph_def(frozen)   vs  tfcompat check frozen --consumer tf==V
  TensorFlow: tf.saved_model.load(savedmodel)       vs  tfcompat check savedmodel --consumer
                                                          tf==V@saved-model-v2

Whole-process wall time and peak RSS: what a user pays either way (TensorFlow's
own import included, as in the issue's measurement). Goal: stay ahead.

Run: .venv/bin/python bench/tensorflow_load.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from rows import row  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tfcompat-bench"

WRITE = """
import sys, tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
out = sys.argv[1]
model = tf.keras.applications.ResNet50(weights=None)
tf.saved_model.save(model, out + "/savedmodel")
fn = tf.function(lambda x: model(x)).get_concrete_function(
    tf.TensorSpec([1, 224, 224, 3], tf.float32))
frozen = convert_variables_to_constants_v2(fn)
with open(out + "/frozen_graph.pb", "wb") as f:
    f.write(frozen.graph.as_graph_def().SerializeToString())
"""
IMPORT_GRAPH_DEF = """
import sys, tensorflow as tf
graph_def = tf.compat.v1.GraphDef()
with open(sys.argv[1], "rb") as f:
    graph_def.ParseFromString(f.read())
with tf.Graph().as_default():
    tf.import_graph_def(graph_def, name="")
"""
SAVED_MODEL_LOAD = """
import sys, tensorflow as tf
tf.saved_model.load(sys.argv[1])
"""


def tensorflow_python() -> tuple[str, str] | None:
    """(interpreter, TensorFlow version) or None."""
    candidates = []
    if os.environ.get("TFCOMPAT_BENCH_TF_PYTHON"):
        candidates.append(os.environ["TFCOMPAT_BENCH_TF_PYTHON"])
    envs = Path(os.environ.get("TFCOMPAT_BENCH_TFENVS", ".cache/tfenvs"))
    if envs.is_dir():

        def key(p: Path) -> tuple[int, ...]:
            return tuple(int(x) if x.isdigit() else -1 for x in p.name.split("."))

        for env in sorted(envs.iterdir(), key=key, reverse=True):
            if (env / "bin" / "python").exists():
                candidates.append(str(env / "bin" / "python"))
    for python in candidates:
        probe = subprocess.run(
            [python, "-c", "import tensorflow as tf; print(tf.__version__)"],
            capture_output=True,
            text=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        )
        if probe.returncode == 0 and probe.stdout.strip():
            return python, probe.stdout.strip().splitlines()[-1]
    return None


def measure(command: list[str]) -> tuple[float, float]:
    """(wall s, peak RSS MiB) of one fresh process."""
    start = time.perf_counter()
    child = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 3):
        raise SystemExit(f"{' '.join(command[:3])} ... exited {code}")
    return wall, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    found = tensorflow_python()
    if found is None:
        print("no TensorFlow virtualenv found (set TFCOMPAT_BENCH_TF_PYTHON): skipped")
        row("TensorFlow itself loading ResNet50", "skipped: no TensorFlow venv", "", "", None)
        return 0
    python, version = found
    folder = CACHE / f"resnet50-tf{version}"
    frozen, saved = folder / "frozen_graph.pb", folder / "savedmodel"
    if not frozen.exists() or not (saved / "saved_model.pb").exists():
        folder.mkdir(parents=True, exist_ok=True)
        print(f"writing ResNet50 with TensorFlow {version} into {folder} ...", flush=True)
        subprocess.run(
            [python, "-c", WRITE, str(folder)],
            check=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
        )
    tfcompat = str(Path(sys.executable).with_name("tfcompat"))
    minor = ".".join(version.split(".")[:2])
    pairs = {
        "import_graph_def": (
            [python, "-c", IMPORT_GRAPH_DEF, str(frozen)],
            [tfcompat, "check", str(frozen), "--consumer", f"tf=={minor}@graph-import"],
            frozen.stat().st_size,
        ),
        "tf.saved_model.load": (
            [python, "-c", SAVED_MODEL_LOAD, str(saved)],
            [tfcompat, "check", str(saved), "--consumer", f"tf=={minor}@saved-model-v2"],
            sum(p.stat().st_size for p in saved.rglob("*") if p.is_file()),
        ),
    }
    samples: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        for name, (theirs, ours, _) in pairs.items():
            samples.setdefault(f"tf {name}", []).append(measure(theirs))
            samples.setdefault(f"ours {name}", []).append(measure(ours))
    med = {
        k: (statistics.median(s[0] for s in v), statistics.median(s[1] for s in v))
        for k, v in samples.items()
    }
    print(f"TensorFlow {version} ({python}); {args.runs} interleaved runs, medians")
    print(f"{'command':<28} {'wall s':>7} {'peak MiB':>9}")
    for name, (wall, rss) in med.items():
        print(f"{name:<28} {wall:>7.2f} {rss:>9.0f}")
    for name, (_, _, size) in pairs.items():
        tf_wall, tf_rss = med[f"tf {name}"]
        our_wall, our_rss = med[f"ours {name}"]
        row(
            f"TensorFlow {version} {name}, ResNet50 ({size / 2**20:.0f} MB)",
            f"{tf_wall / our_wall:.1f}x our wall ({tf_wall:.1f} s), "
            f"{tf_rss / our_rss:.1f}x our memory ({tf_rss:.0f} MiB)",
            f"our check {our_wall:.1f} s, {our_rss:.0f} MiB",
            "stay ahead (> 1x)",
            tf_wall > our_wall and tf_rss > our_rss,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
