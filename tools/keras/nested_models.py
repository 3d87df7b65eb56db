"""Keras 2 models used as layers, in shapes beyond the one `keras.nested-call` was read
on: saved whole as H5 by a TensorFlow release's tf.keras, then loaded by Keras 3 wheels.

    PYTHON tools/keras/nested_models.py make OUT        (PYTHON: a TF 2.x venv, Keras 2)
    PYTHON tools/keras/nested_models.py load DIR OUT    (PYTHON + PYTHONPATH: Keras 3)
    .venv/bin/python tools/keras/nested_models.py write BUILD

make: each model of MODELS is built with seeded weights and `model.save(OUT/<name>.h5)`;
      OUT/made.json keeps the writer, each file's input shapes and the save's error (a
      subclassed model may not save to H5).
load: each file of DIR (made.json) by `keras.models.load_model(compile=False)` and run
      on a fixed input (`runs`); a load still running after LOAD_SECONDS is stopped and recorded
      as failed ("hang": Keras 3.0-3.11 and 3.13 loop on a call node they never make).
      One JSON row a file appended to OUT: consumer, writer, model, loads, error, runs.
write: BUILD/tf<version>/*.h5 into tests/fixtures/keras-nested/models/tf<version>/ (whole,
      weights included), every writer's made.json into the fixture's made.json, and the
      rows of BUILD/rows/*.jsonl, if any, into its record.jsonl.

The models: `control` (no nesting); `shared_twice` (one nested Functional called on two
inputs); `nested_is_output` (the nested model's call is the outer model's output, no
layer reads it); `two_levels` (a nested model inside a nested model); `multi_io` (a
nested model of two inputs and two outputs); `seq_shaped` and `seq_unshaped` (a nested
Sequential built with and without an input shape); `subclassed` (a keras.Model subclass
used as a layer). Runs under Python 3.7+.
"""

from __future__ import print_function

import json
import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SEED = 11
LOAD_SECONDS = 10


def _inner(keras, name, units=3, inputs=4):
    x = keras.Input((inputs,), name=name + "_in")
    y = keras.layers.Dense(units, activation="relu", name=name + "_d")(x)
    return keras.Model(x, y, name=name)


def control(keras):
    x = keras.Input((4,), name="x")
    h = keras.layers.Dense(3, activation="relu", name="h")(x)
    return keras.Model(x, keras.layers.Dense(2, name="out")(h), name="control")


def shared_twice(keras):
    inner = _inner(keras, "shared")
    a = keras.Input((4,), name="a")
    b = keras.Input((4,), name="b")
    joined = keras.layers.Concatenate(name="join")([inner(a), inner(b)])
    return keras.Model([a, b], keras.layers.Dense(2, name="out")(joined), name="outer")


def nested_is_output(keras):
    inner = _inner(keras, "inner")
    x = keras.Input((4,), name="x")
    return keras.Model(x, inner(x), name="outer")


def two_levels(keras):
    inner = _inner(keras, "inner")
    m = keras.Input((4,), name="m_in")
    middle = keras.Model(m, keras.layers.Dense(2, name="m_d")(inner(m)), name="middle")
    x = keras.Input((4,), name="x")
    return keras.Model(x, keras.layers.Dense(2, name="out")(middle(x)), name="outer")


def multi_io(keras):
    p = keras.Input((4,), name="p")
    q = keras.Input((3,), name="q")
    both = keras.layers.Concatenate(name="pq")([p, q])
    inner = keras.Model(
        [p, q],
        [keras.layers.Dense(2, name="o1")(both), keras.layers.Dense(3, name="o2")(both)],
        name="inner",
    )
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="b")
    one, two = inner([a, b])
    out = keras.layers.Add(name="add")([keras.layers.Dense(2, name="r1")(one),
                                        keras.layers.Dense(2, name="r2")(two)])  # fmt: skip
    return keras.Model([a, b], out, name="outer")


def seq_shaped(keras):
    seq = keras.Sequential([keras.layers.Dense(3, activation="relu", input_shape=(4,), name="s1"),
                            keras.layers.Dense(3, name="s2")], name="seq")  # fmt: skip
    x = keras.Input((4,), name="x")
    return keras.Model(x, keras.layers.Dense(2, name="out")(seq(x)), name="outer")


def seq_unshaped(keras):
    seq = keras.Sequential([keras.layers.Dense(3, activation="relu", name="s1"),
                            keras.layers.Dense(3, name="s2")], name="seq")  # fmt: skip
    x = keras.Input((4,), name="x")
    return keras.Model(x, keras.layers.Dense(2, name="out")(seq(x)), name="outer")


def subclassed(keras):
    class Block(keras.Model):
        def __init__(self, **kwargs):
            super(Block, self).__init__(**kwargs)
            self.d = keras.layers.Dense(3, name="b_d")

        def call(self, inputs):
            return self.d(inputs)

    x = keras.Input((4,), name="x")
    return keras.Model(x, keras.layers.Dense(2, name="out")(Block(name="block")(x)),
                       name="outer")  # fmt: skip


MODELS = (control, shared_twice, nested_is_output, two_levels, multi_io, seq_shaped,
          seq_unshaped, subclassed)  # fmt: skip


def _said(e):
    text = "%s: %s" % (type(e).__name__, e)
    return text.strip().splitlines()[0][:300]


def _inputs(shapes):
    import numpy as np

    rng = np.random.RandomState(SEED)
    return [rng.uniform(-1, 1, (2,) + tuple(s)).astype("float32") for s in shapes]


def make(out):
    import numpy as np
    import tensorflow as tf

    keras = tf.keras
    if not os.path.isdir(out):
        os.makedirs(out)
    made = []
    for build in MODELS:
        keras.backend.clear_session()
        tf.random.set_seed(SEED)
        entry = {"name": build.__name__}
        try:
            model = build(keras)
            rng = np.random.RandomState(SEED)
            model.set_weights([w + rng.uniform(0, 0.1, w.shape).astype(w.dtype)
                               for w in model.get_weights()])  # fmt: skip
            shapes = [list(i.shape[1:]) for i in model.inputs]
            model.predict(_inputs(shapes), verbose=0)
            model.save(os.path.join(out, entry["name"] + ".h5"))
            entry.update(file=entry["name"] + ".h5", shapes=shapes)
        except Exception as e:  # a subclassed model may not save as H5
            entry["error"] = _said(e)
        made.append(entry)
        print(entry["name"], entry.get("error", "saved"))
    try:
        version = keras.__version__
    except AttributeError:  # TF 2.13+: tf.keras is the keras package's API
        import keras as keras_package

        version = keras_package.__version__
    record = {"tensorflow": tf.__version__, "keras": version,
              "python": sys.version.split()[0], "models": made}  # fmt: skip
    with open(os.path.join(out, "made.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("hang: no load in %ds" % LOAD_SECONDS)


def load(folder, out):
    import warnings

    warnings.filterwarnings("ignore")
    import keras

    with open(os.path.join(folder, "made.json")) as f:
        made = json.load(f)
    with open(out, "a") as rows:
        for entry in made["models"]:
            if "file" not in entry:
                continue
            row = {"consumer": "keras-" + keras.__version__, "writer": "tf" + made["tensorflow"],
                   "model": entry["name"], "backend": keras.backend.backend()}  # fmt: skip
            keras.backend.clear_session()
            signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(LOAD_SECONDS)
            try:
                model = keras.models.load_model(os.path.join(folder, entry["file"]), compile=False)
                signal.alarm(0)
                row["loads"] = True
            except Exception as e:
                row.update(loads=False, error=_said(e))
            finally:
                signal.alarm(0)
            if row["loads"]:
                try:
                    model.predict(_inputs(entry["shapes"]), verbose=0)
                    row["runs"] = True
                except Exception as e:
                    row.update(runs=False, run_error=_said(e))
            rows.write(json.dumps(row, sort_keys=True) + "\n")
            rows.flush()
            print(row["consumer"], row["writer"], row["model"], row["loads"], row.get("error", ""))


def write(build):
    import shutil

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    fixtures = os.path.join(repo, "tests", "fixtures", "keras-nested")
    writers = sorted(d for d in os.listdir(build) if d.startswith("tf"))
    made = {}
    for writer in writers:
        with open(os.path.join(build, writer, "made.json")) as f:
            made[writer] = json.load(f)
        os.makedirs(os.path.join(fixtures, "models", writer), exist_ok=True)
        for entry in made[writer]["models"]:
            if "file" in entry:
                target = os.path.join(fixtures, "models", writer, entry["file"])
                shutil.copyfile(os.path.join(build, writer, entry["file"]), target)
    with open(os.path.join(fixtures, "made.json"), "w") as f:
        json.dump(made, f, indent=1, sort_keys=True)
        f.write("\n")
    written = [os.path.join(fixtures, "made.json")]
    rows_dir = os.path.join(build, "rows")
    if os.path.isdir(rows_dir):
        rows = []
        for name in sorted(os.listdir(rows_dir)):
            with open(os.path.join(rows_dir, name)) as f:
                rows.extend(json.loads(line) for line in f if line.strip())
        rows.sort(key=lambda r: (r["consumer"], r["writer"], r["model"]))
        with open(os.path.join(fixtures, "record.jsonl"), "w") as f:
            for row in rows:
                f.write(json.dumps(row, sort_keys=True) + "\n")
        written.append(os.path.join(fixtures, "record.jsonl"))
    sys.path.insert(0, os.path.join(repo, "tools"))
    from pathlib import Path

    from fixture_sources import record

    for path in written:
        record(Path(path))
    print("wrote", ", ".join(os.path.basename(p) for p in written))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "load":
        load(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        sys.exit(__doc__)
