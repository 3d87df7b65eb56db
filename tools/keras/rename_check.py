"""The `rename_layers` fix followed as printed, end to end: does the renamed file load in
every Keras 3 minor with the original's weights, and does the product then say it loads?

    python3 tools/keras/rename_check.py make --writer 2.15.1=PYTHON [...]
    python3 tools/keras/rename_check.py load --keras 3.0.5=SITE [...] --python PY [--path DIR]
    .venv/bin/python tools/keras/rename_check.py write

make: in a TensorFlow virtualenv (tf.keras is Keras 2), each model of NAMES (the '/'
      models of tests/fixtures/keras-names and keras-names-2, tools/keras/name_models.py)
      is built with its '/' names, given seeded weights and saved whole as H5 (the
      original, what the worker refused); its predictions on a fixed input are kept.
      Then the fix's steps, in this Keras (`rename` below, the code docs/fixing.md prints):
      rebuild the model from its own config with every '/' in a layer or model name
      replaced by '_', `model.load_weights(original)`, `model.save(renamed)`. The renamed
      file is loaded back in the same Keras and its predictions compared with the
      original's (`keras2_max_diff`). build/keras/rename/tf<version>/made.json.
load: in a Keras 3 runtime (the wheel unpacked, on PYTHON's path with --path, e.g.
      dm-tree for 3.0-3.4; KERAS_BACKEND=tensorflow), each writer's files:
      `keras.models.load_model` of the original (it must fail) and of the renamed file,
      whose predictions on the same input are compared with the original's in Keras 2.
      Rows: build/keras/rename/rows/keras-<v>.jsonl.
write: the renamed files without their weights (the root attributes the worker reads)
      into tests/fixtures/keras-rename/models/tf<version>/<name>.h5, and the rows into
      tests/fixtures/keras-rename/record.jsonl (writer, model, consumer, original_loads,
      loads, max_diff, error), with each writer's made rows (consumer "writer").
      tests/compat/test_keras_rename.py reads both: every renamed file loads, with the
      same outputs, and the product says it loads.

    --build DIR: another build folder (default build/keras/rename); `write --renamed-only
    DIR` adds the rows of a build made without the nested-model step (step
    "renamed-only"), to show that step is needed.

make and load run under any Python 3.7+ with the runtime's Keras and numpy; write needs
h5py: run it with the Keras 3 runtime's Python (TF 2.16.2's has it). A load still running
after LOAD_SECONDS is stopped and recorded as failed (Keras 3.0-3.10 loop on a Keras 2
nested model's call).
"""

from __future__ import print_function

import argparse
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import name_models  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO, "build", "keras", "rename")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "keras-rename")

# name -> the fixture folder whose refused file it is (a layer's name, the input's, the
# model's own, a layer in a nested model, a nested model's, a Sequential's layer; scoped
# layers, a nested Sequential, wrapped layers, a keras.applications model).
NAMES = {
    "slash_layer": "keras-names",
    "slash_input": "keras-names",
    "slash_model": "keras-names",
    "slash_in_nested": "keras-names",
    "slash_nested_model": "keras-names",
    "slash_sequential": "keras-names",
    "scoped_encoder": "keras-names-2",
    "towers": "keras-names-2",
    "backbone": "keras-names-2",
    "model_name_only": "keras-names-2",
    "wrapped_rnn": "keras-names-2",
    "td_scoped": "keras-names-2",
    "mobilenet_v3_small": "keras-names-2",
}
SEED = 7
LOAD_SECONDS = 15


def rename(keras, original_path, renamed_path):
    """The fix as docs/fixing.md prints it: rebuild the model with no '/' in any layer or
    model name, load the weights from the original file by layer order, save it again."""
    original = keras.models.load_model(original_path, compile=False)
    config = original.to_json()
    for name in sorted(set(_names(json.loads(config))), key=len, reverse=True):
        if "/" in name:
            config = config.replace(json.dumps(name), json.dumps(name.replace("/", "_")))
    model = keras.models.model_from_json(config)
    model.load_weights(original_path)
    model.save(renamed_path)
    return model


NESTED = ("Functional", "Model", "Sequential")


def renumber_nested_calls(path):
    """The fix's step for a model used as a layer: Keras 2 numbers a nested model's call
    on the outer tensors node 1 (node 0 is its own graph), Keras 3's legacy H5 loader
    numbers it 0 and never finds node 1 (3.15: "Invalid Functional model configuration",
    3.0: a loop). Lowers by one each inbound reference to a nested model in the saved
    file's model_config; True when there was one."""
    import h5py

    with h5py.File(path, "r+") as f:
        raw = f.attrs["model_config"]
        config = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        layers = config["config"].get("layers", [])
        nested = {x["config"]["name"] for x in layers if x["class_name"] in NESTED}
        refs = [ref for x in layers for node in x.get("inbound_nodes", []) for ref in node]
        refs += config["config"].get("output_layers", [])
        moved = False
        for ref in refs:
            if isinstance(ref, list) and ref and ref[0] in nested and ref[1] > 0:
                ref[1] -= 1
                moved = True
        if moved:
            f.attrs["model_config"] = json.dumps(config).encode("utf-8")
    return moved


def _names(config):
    """Every layer's and model's `name` in a model config (nested models, wrapped layers)."""
    if isinstance(config, dict):
        if isinstance(config.get("config"), dict) and isinstance(
            config["config"].get("name"), str
        ):
            yield config["config"]["name"]
        for value in config.values():
            for name in _names(value):
                yield name
    elif isinstance(config, list):
        for value in config:
            for name in _names(value):
                yield name


def _said(e):
    text = "%s: %s" % (type(e).__name__, e)
    return text.strip().splitlines()[0][:300] if text.strip() else type(e).__name__


def _inputs(shapes):
    import numpy as np

    rng = np.random.RandomState(SEED)
    return [rng.uniform(-1, 1, (2,) + tuple(s)).astype("float32") for s in shapes]


def _max_diff(a, b):
    import numpy as np

    a = a if isinstance(a, list) else [a]
    b = b if isinstance(b, list) else [b]
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))


def _build(keras, name):
    if name in name_models.APPLICATIONS_4:
        cls, shape = name_models.APPLICATIONS_4[name]
        return getattr(keras.applications, cls)(weights=None, input_shape=shape, classes=10)
    if name in name_models.CONFIGS_3:
        return name_models.config_model_3(keras, name)
    return name_models.config_model_4(keras, name)


def child_make(out_dir):
    import numpy as np
    import tensorflow as tf

    keras = tf.keras
    os.makedirs(out_dir, exist_ok=True)
    made = []
    for name in NAMES:
        keras.backend.clear_session()
        tf.random.set_seed(SEED)
        entry = {"name": name}
        try:
            model = _build(keras, name)
            rng = np.random.RandomState(SEED)  # no zero biases; variances stay positive
            model.set_weights([w + rng.uniform(0, 0.1, w.shape).astype(w.dtype)
                               for w in model.get_weights()])  # fmt: skip
            shapes = [tuple(i.shape[1:]) for i in model.inputs]
            inputs = _inputs(shapes)
            expected = model.predict(inputs, verbose=0)
            original = os.path.join(out_dir, name + ".original.h5")
            renamed = os.path.join(out_dir, name + ".h5")
            model.save(original)
            keras.backend.clear_session()
            rename(keras, original, renamed)
            keras.backend.clear_session()
            again = keras.models.load_model(renamed, compile=False)
            keras2_diff = _max_diff(again.predict(inputs, verbose=0), expected)
            entry["renumbered"] = renumber_nested_calls(renamed)  # Keras 2 no longer loads it
            entry.update(
                file=name + ".h5", original=name + ".original.h5",
                shapes=[list(s) for s in shapes],
                expected=[e.tolist() for e in (expected if isinstance(expected, list)
                                               else [expected])],
                keras2_max_diff=keras2_diff,
                slash_names=sorted(n for n in _names(json.loads(model.to_json())) if "/" in n),
            )  # fmt: skip
        except Exception as e:
            entry["error"] = _said(e)
        made.append(entry)
        print(name, entry.get("keras2_max_diff", entry.get("error")))
    version = getattr(keras, "__version__", None)
    if version is None:
        import keras as keras_package

        version = keras_package.__version__
    record = {"tensorflow": tf.__version__, "keras": version,
              "python": sys.version.split()[0], "models": made}  # fmt: skip
    with open(os.path.join(out_dir, "made.json"), "w") as f:
        json.dump(record, f, indent=1)


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("no load in %ds (load_model still running)" % LOAD_SECONDS)


def _load(keras, path):
    """load_model, stopped after LOAD_SECONDS: Keras 3 loops for ever on some Keras 2
    nested-model configs (functional_from_config retries a node whose inbound node index
    never exists)."""
    import signal

    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LOAD_SECONDS)
    try:
        return keras.models.load_model(path, compile=False)
    finally:
        signal.alarm(0)


def child_load(folder, out):
    import warnings

    warnings.filterwarnings("ignore")
    import keras
    import numpy as np

    with open(os.path.join(folder, "made.json")) as f:
        made = json.load(f)
    with open(out, "a") as rows:
        for entry in made["models"]:
            if "file" not in entry:
                continue
            row = {"consumer": "keras-" + keras.__version__, "writer": "tf" + made["tensorflow"],
                   "model": entry["name"], "backend": keras.backend.backend()}  # fmt: skip
            keras.backend.clear_session()
            try:
                _load(keras, os.path.join(folder, entry["original"]))
                row["original_loads"] = True
            except Exception as e:
                row.update(original_loads=False, original_error=_said(e))
            keras.backend.clear_session()
            try:
                model = _load(keras, os.path.join(folder, entry["file"]))
                got = model.predict(_inputs(entry["shapes"]), verbose=0)
                expected = [np.asarray(e) for e in entry["expected"]]
                row.update(loads=True, max_diff=_max_diff(got, expected))
            except Exception as e:
                row.update(loads=False, error=_said(e))
            rows.write(json.dumps(row, sort_keys=True) + "\n")
            rows.flush()


def _writers(build):
    return sorted(d for d in os.listdir(build) if d.startswith("tf"))


def cmd_make(args):
    for spec in args.writer:
        version, python = spec.split("=", 1)
        start = time.time()
        out = os.path.join(args.build, "tf" + version)
        subprocess.check_call([python, os.path.abspath(__file__), "_make", out])
        print("made tf%s in %.0fs" % (version, time.time() - start))


def cmd_load(args):
    os.makedirs(os.path.join(args.build, "rows"), exist_ok=True)
    for spec in args.keras:
        version, site = spec.split("=", 1)
        out = os.path.join(args.build, "rows", "keras-%s.jsonl" % version)
        if os.path.exists(out):
            os.remove(out)
        path = os.pathsep.join([site] + args.path)
        env = dict(os.environ, PYTHONPATH=path, KERAS_BACKEND="tensorflow")
        for writer in _writers(args.build):
            start = time.time()
            folder = os.path.join(args.build, writer)
            subprocess.call([args.python, os.path.abspath(__file__), "_load", folder, out], env=env)
            print("keras %s, %s: %.0fs" % (version, writer, time.time() - start))


def cmd_write(args):
    import h5py

    models = os.path.join(args.fixtures, "models")
    rows = []
    for writer in _writers(args.build):
        with open(os.path.join(args.build, writer, "made.json")) as f:
            made = json.load(f)
        os.makedirs(os.path.join(models, writer), exist_ok=True)
        for entry in made["models"]:
            row = {"consumer": "writer", "writer": writer, "model": entry["name"]}
            if "file" not in entry:
                rows.append(dict(row, loads=False, error=entry["error"]))
                continue
            rows.append(dict(row, loads=True, max_diff=entry["keras2_max_diff"],
                             renamed=entry["slash_names"], renumbered=entry["renumbered"]))  # fmt: skip
            # nested, not one parenthesized `with`: the file also runs in Python 3.7
            with h5py.File(os.path.join(args.build, writer, entry["file"]), "r") as src:
                with h5py.File(os.path.join(models, writer, entry["file"]), "w") as dst:
                    for key in ("model_config", "keras_version", "backend"):
                        if key in src.attrs:
                            dst.attrs[key] = src.attrs[key]
    for build, step in ((args.build, "fix"), (args.renamed_only, "renamed-only")):
        if not build:
            continue
        for name in sorted(os.listdir(os.path.join(build, "rows"))):
            with open(os.path.join(build, "rows", name)) as f:
                rows.extend(dict(json.loads(line), step=step) for line in f if line.strip())
    rows.sort(key=lambda r: (r.get("step", ""), r["consumer"] != "writer", r["consumer"],
                             r["writer"], r["model"]))  # fmt: skip
    with open(os.path.join(args.fixtures, "record.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    from pathlib import Path

    sys.path.insert(0, os.path.join(REPO, "tools"))
    from fixture_sources import record

    record(Path(os.path.join(args.fixtures, "record.jsonl")))
    print("wrote %d rows" % len(rows))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=BUILD)
    sub = parser.add_subparsers(dest="command")
    make = sub.add_parser("make")
    make.add_argument("--writer", action="append", default=[], help="VERSION=PYTHON")
    load = sub.add_parser("load")
    load.add_argument("--keras", action="append", default=[], help="VERSION=SITE")
    load.add_argument("--python", default=sys.executable)
    load.add_argument("--path", action="append", default=[], help="more on PYTHONPATH")
    write = sub.add_parser("write")
    write.add_argument("--renamed-only", default="",
                       help="a build made without the nested-model step (its rows only)")  # fmt: skip
    sub.add_parser("_make").add_argument("out")
    child = sub.add_parser("_load")
    child.add_argument("folder")
    child.add_argument("out")
    args = parser.parse_args()
    args.fixtures = FIXTURES
    if args.command == "_make":
        child_make(args.out)
    elif args.command == "_load":
        child_load(args.folder, args.out)
    elif args.command == "make":
        cmd_make(args)
    elif args.command == "load":
        cmd_load(args)
    elif args.command == "write":
        cmd_write(args)
    else:
        parser.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
