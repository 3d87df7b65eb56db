"""Load, allocate and run TFLite models in THIS runtime; one JSON line per model.

Runs inside a runtime's own Python (3.7+; `tensorflow`, `tflite_runtime` or
`ai_edge_litert`):

    <python> tools/tflite/load_models.py MODEL.tflite [MODEL.tflite ...]

For each model: build the interpreter (this is where TFLite resolves op codes),
allocate tensors (kernels prepare), feed float32 [1, 8] = linspace(-2, 2) and
invoke. A line says how far it got (`stage`: built, allocated, invoked), the
first error's text, and the output. Lines are flushed one by one, so a driver
can tell which model crashed the process.
"""

import json
import sys

import numpy as np

X = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(1, 8)


def interpreter_class():
    for module in ("ai_edge_litert.interpreter", "tflite_runtime.interpreter"):
        try:
            return __import__(module, fromlist=["Interpreter"]).Interpreter
        except ImportError:
            pass
    import tensorflow as tf

    return tf.lite.Interpreter


def run(cls, path):
    row = {"model": path, "stage": None}
    try:
        interpreter = cls(model_path=path)
        row["stage"] = "built"
        interpreter.allocate_tensors()
        row["stage"] = "allocated"
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], X)
        interpreter.invoke()
        out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        row["stage"] = "invoked"
        row["output"] = np.asarray(out, dtype=np.float64).round(6).tolist()
    except Exception as exc:
        row["error"] = "%s: %s" % (type(exc).__name__, str(exc)[:600])
    return row


def main():
    cls = interpreter_class()
    for path in sys.argv[1:]:
        sys.stdout.write(json.dumps(run(cls, path), sort_keys=True) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
