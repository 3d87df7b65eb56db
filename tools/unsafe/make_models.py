"""SavedModels holding ops that should never be served, written by a real TensorFlow.

    <tfenv>/bin/python tools/unsafe/make_models.py tests/fixtures/unsafe/tf<minor>
    <tfenv>/bin/python tools/unsafe/make_models.py --tflite tests/fixtures/unsafe/tflite<minor>

Writes, in OUT, one SavedModel per case, each computing y = x * v (a variable, so
the saver's own SaveV2/RestoreV2/MergeV2Checkpoints are there) and, beside that:
- clean: nothing else;
- read_file: returns the contents of a file outside the model (`tf.io.read_file`);
- write_file: writes a file (`tf.io.write_file`) on every call;
- matching_files (2.x): returns a listing of /etc (`tf.io.matching_files`);
- py_function (2.x): computes y through Python (`tf.py_function`, EagerPyFunc);
- py_func (1.x): the same with `tf.compat.v1.py_func` (PyFunc).
Then it loads each model in the same release and calls it once, and writes
OUT/cases.json: what each call returned (the text it read, the files it listed)
and whether the file it was to write exists afterwards. The paths it read and
wrote are temporary files made for the run (`_paths`).

With --tflite (2.x), clean, read_file, write_file and matching_files are converted
to `.tflite` with Select TF ops (the file ops become Flex ops: `FlexReadFile`, ...;
the path is an input, since the converter reads a constant path itself and folds
the contents in; MatchingFiles is no Select TF op and does not convert), run once
in that release's `tf.lite.Interpreter` (which links the Flex delegate), and
recorded the same way.

TF 1.x: graph mode, `tf.compat.v1.saved_model.simple_save`, loaded with the v1
loader in a session. TF 2.x: a `tf.Module` whose signature is a `tf.function`,
`tf.saved_model.save`, loaded with `tf.saved_model.load`.
Python 3.7+ and TensorFlow 1.15+: standard library, numpy and TensorFlow only.
"""

from __future__ import print_function

import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

SECRET_TEXT = "not for the model to read\n"
X = [1.0, 1.0, 3.0]
V = [1.0, 1.0, 2.0]
LISTED = 5


def cases_for(major):
    if major == 1:
        return ["clean", "read_file", "write_file", "py_func"]
    return ["clean", "read_file", "write_file", "matching_files", "py_function"]


def as_json(name, value):
    import numpy as np

    value = np.asarray(value)
    if name == "leak":
        return value.item().decode("utf-8")
    if name == "files":
        return sorted(v.decode("utf-8") for v in value.tolist())[:LISTED]
    return [round(float(v), 5) for v in value.tolist()]


def build_v1(tf, case, out, paths):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        v = tf.compat.v1.get_variable("v", initializer=tf.constant(V))
        y = x * v
        outputs = {}
        if case == "read_file":
            outputs["leak"] = tf.io.read_file(paths["secret"])
        elif case == "write_file":
            written = tf.io.write_file(paths["written"], tf.strings.as_string(y[0]))
            with tf.control_dependencies([written]):
                y = tf.identity(y)
        elif case == "py_func":
            y = tf.compat.v1.py_func(lambda a: a * 2, [y], tf.float32)
            y.set_shape([3])
        outputs["y"] = y
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.saved_model.simple_save(sess, out, {"x": x}, outputs)
    # py_func's callback lives in a registry entry that goes with the graph that built it
    return graph


def call_v1(tf, out):
    graph = tf.Graph()
    with tf.compat.v1.Session(graph=graph) as sess:
        meta = tf.compat.v1.saved_model.loader.load(sess, ["serve"], out)
        signature = meta.signature_def["serving_default"]
        fetches = {k: t.name for k, t in signature.outputs.items()}
        feed = {signature.inputs["x"].name: X}
        return {k: as_json(k, v) for k, v in sess.run(fetches, feed).items()}


def build_v2(tf, case, out, paths):
    module = tf.Module()
    module.v = tf.Variable(V)

    def compute(x):
        y = x * module.v
        outputs = {}
        if case == "read_file":
            outputs["leak"] = tf.io.read_file(paths["secret"])
        elif case == "write_file":
            written = tf.io.write_file(paths["written"], tf.strings.as_string(y[0]))
            with tf.control_dependencies([written]):
                y = tf.identity(y)
        elif case == "matching_files":
            outputs["files"] = tf.io.matching_files("/etc/*")
        elif case == "py_function":
            y = tf.py_function(lambda a: a * 2, [y], tf.float32)
            y.set_shape([3])
        outputs["y"] = y
        return outputs

    module.serve = tf.function(compute, input_signature=[tf.TensorSpec([3], tf.float32)])
    tf.saved_model.save(module, out, signatures={"serving_default": module.serve})
    return module


def call_v2(tf, out):
    loaded = tf.saved_model.load(out)
    result = loaded.signatures["serving_default"](x=tf.constant(X))
    return {k: as_json(k, v.numpy()) for k, v in result.items()}


TFLITE_CASES = ["clean", "read_file", "write_file", "matching_files"]


def build_tflite(tf, case, out, paths):
    module = tf.Module()

    # the path is an input: a constant one would be read (and folded) by the converter
    @tf.function(input_signature=[tf.TensorSpec([3], tf.float32), tf.TensorSpec([], tf.string)])
    def serve(x, path):
        y = x * tf.constant(V)
        outputs = {"y": y}
        if case == "read_file":
            outputs["leak"] = tf.io.read_file(path)
        elif case == "write_file":
            written = tf.io.write_file(path, tf.strings.as_string(y[0]))
            with tf.control_dependencies([written]):
                outputs["y"] = tf.identity(y)
        elif case == "matching_files":
            outputs["files"] = tf.io.matching_files(path)
        else:
            outputs["path"] = tf.identity(path)
        return outputs

    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [serve.get_concrete_function()], module
    )
    converter.target_spec.supported_ops = [
        tf.lite.OpsSet.TFLITE_BUILTINS,
        tf.lite.OpsSet.SELECT_TF_OPS,
    ]
    with open(out, "wb") as f:
        f.write(converter.convert())


def call_tflite(tf, out, path):
    import numpy as np

    interpreter = tf.lite.Interpreter(model_path=out)
    runner = interpreter.get_signature_runner()
    result = runner(x=np.array(X, dtype=np.float32), path=np.array(path.encode()))
    return {k: as_json(k, v) for k, v in result.items() if k != "path"}


def main_tflite(target):
    import tensorflow as tf

    scratch = tempfile.mkdtemp()
    paths = {
        "secret": os.path.join(scratch, "secret.txt"),
        "written": os.path.join(scratch, "written.txt"),
    }
    with open(paths["secret"], "w") as f:
        f.write(SECRET_TEXT)
    if not os.path.isdir(target):
        os.makedirs(target)
    report = {"_paths": dict(paths)}
    for case in TFLITE_CASES:
        out = os.path.join(target, case + ".tflite")
        entry = {"tensorflow": tf.__version__}
        try:
            build_tflite(tf, case, out, paths)
        except Exception as exc:  # MatchingFiles is no Select TF op: recorded, not written
            entry["converted"] = False
            entry["error"] = (type(exc).__name__ + ": " + str(exc)).splitlines()[0][:400]
            report[case] = entry
            if os.path.exists(out):
                os.remove(out)
            continue
        entry["converted"] = True
        try:
            path = {"read_file": paths["secret"], "write_file": paths["written"]}.get(case, "/etc/*")
            entry["outputs"] = call_tflite(tf, out, path)
            entry["called"] = True
        except Exception as exc:  # what the call did is the record, whatever it was
            entry["called"] = False
            entry["error"] = (type(exc).__name__ + ": " + str(exc))[:400]
        report[case] = entry
    report["_paths"]["written_exists_after_calls"] = os.path.exists(paths["written"])
    with open(os.path.join(target, "cases.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print(json.dumps(report, sort_keys=True))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--tflite":
        return main_tflite(sys.argv[2])
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n\n")[1])
    import tensorflow as tf

    target = sys.argv[1]
    major = int(tf.__version__.split(".")[0])
    scratch = tempfile.mkdtemp()
    paths = {
        "secret": os.path.join(scratch, "secret.txt"),
        "written": os.path.join(scratch, "written.txt"),
    }
    with open(paths["secret"], "w") as f:
        f.write(SECRET_TEXT)
    report = {"_paths": dict(paths)}
    for case in cases_for(major):
        out = os.path.join(target, case)
        if os.path.exists(out):
            shutil.rmtree(out)
        kept = (build_v1 if major == 1 else build_v2)(tf, case, out, paths)
        entry = {"tensorflow": tf.__version__}
        try:
            entry["outputs"] = (call_v1 if major == 1 else call_v2)(tf, out)
            entry["called"] = True
        except Exception as exc:  # what the call did is the record, whatever it was
            entry["called"] = False
            entry["error"] = (type(exc).__name__ + ": " + str(exc))[:400]
        report[case] = entry
        del kept
    report["_paths"]["written_exists_after_calls"] = os.path.exists(paths["written"])
    with open(os.path.join(target, "cases.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
