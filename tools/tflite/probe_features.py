"""Which TFLite file features THIS runtime reads: real files, and one probe per tensor type.

Runs inside a runtime's own Python (3.7+; `tensorflow`, `tflite_runtime` or
`ai_edge_litert`), like load_models.py, one JSON line per subject, flushed one by
one so a driver can tell which subject crashed the process:

    <python> tools/tflite/probe_features.py MODEL.tflite [...]   # files with features
    <python> tools/tflite/probe_features.py --types              # tensor types

A model: build the interpreter from its path (where TFLite reads the
flatbuffer, the buffers and the tensors), allocate (kernels prepare), feed
float32 [1, 8] = linspace(-2, 2) and invoke by tensor index; then, where the
interpreter has the signature API (`get_signature_list`), list the
SignatureDefs and call the first one by name. The driver compares the outputs
with the producer's own interpreter.

`--types`: for every TensorType code 0..19 a minimal flatbuffer (no operator
codes, one subgraph with one tensor of that type, shape [1], as both its input
and output, one empty buffer) is built and allocated. TFLite converts every
tensor's type when it builds the interpreter ("Unsupported data type N in
tensor" for a code past its enum), before any operator is prepared.
"""

import json
import sys

import numpy as np

from probe_ops import Writer, load_interpreter_class

X = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(1, 8)
TYPE_CODES = range(20)  # TensorType 0..18 (2.21's schema) and one past it


def progress(path, stage):
    """A line saying how far the model got, before the next step: a crash there leaves
    it as the last line, so the driver knows the stage that crashed."""
    sys.stdout.write(json.dumps({"model": path, "progress": stage}) + "\n")
    sys.stdout.flush()


def run_model(cls, path):
    row = {"model": path, "stage": None}
    try:
        progress(path, None)
        interpreter = cls(model_path=path)
        row["stage"] = "built"
        progress(path, "built")
        interpreter.allocate_tensors()
        row["stage"] = "allocated"
        progress(path, "allocated")
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], X)
        interpreter.invoke()
        out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        row["stage"] = "invoked"
        row["output"] = np.asarray(out, dtype=np.float64).round(6).tolist()
    except Exception as exc:
        row["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:600])
        return row
    if not hasattr(interpreter, "get_signature_list"):
        row["signature_api"] = False
        return row
    row["signature_api"] = True
    try:
        listed = interpreter.get_signature_list()
        row["signatures"] = sorted(listed)
        if listed:
            key = sorted(listed)[0]
            runner = interpreter.get_signature_runner(key)
            name = listed[key]["inputs"][0]
            result = runner(**{name: X})
            first = sorted(result)[0]
            row["signature_output"] = np.asarray(result[first], dtype=np.float64).round(6).tolist()
    except Exception as exc:
        row["signature_error"] = "%s: %s" % (type(exc).__name__, str(exc)[:600])
    return row


def type_model(code):
    w = Writer()
    w.buf += b"\0\0\0\0TFL3"

    def tensor():
        return w.table([("ref", lambda: w.int_vector([1])), ("i8", code)])

    def subgraph():
        return w.table(
            [
                ("ref", lambda: w.table_vector([tensor])),
                ("ref", lambda: w.int_vector([0])),
                ("ref", lambda: w.int_vector([0])),
                ("ref", lambda: w.table_vector([])),
            ]
        )

    root = w.table(
        [
            ("u32", 3),
            ("ref", lambda: w.table_vector([])),
            ("ref", lambda: w.table_vector([subgraph])),
            None,
            ("ref", lambda: w.table_vector([lambda: w.table([])])),
        ]
    )
    w.u32_at(0, root)
    w.pad()
    return bytes(w.buf)


def run_type(cls, code):
    row = {"type_code": code, "stage": None}
    try:
        interpreter = cls(model_content=type_model(code))
        row["stage"] = "built"
        interpreter.allocate_tensors()
        row["stage"] = "allocated"
    except Exception as exc:
        row["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
    return row


def main():
    cls, _ = load_interpreter_class()
    if sys.argv[1:] == ["--types"]:
        rows = (run_type(cls, code) for code in TYPE_CODES)
    else:
        rows = (run_model(cls, path) for path in sys.argv[1:])
    for row in rows:
        sys.stdout.write(json.dumps(row, sort_keys=True) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
