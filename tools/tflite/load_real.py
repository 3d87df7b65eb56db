"""Build, allocate and invoke real .tflite files in THIS runtime; one JSON line per model.

Runs inside a runtime's own Python (3.7+; `tensorflow`, `tflite_runtime` or
`ai_edge_litert`), like load_models.py:

    <python> tools/tflite/load_real.py MODEL.tflite [MODEL.tflite ...]

Every input gets a fixed ramp of its own shape and type (floats from 0 to 1,
integers 0..6), then the model is invoked. A line says how far it got (`stage`:
built, allocated, invoked), the first error's text, and 64 evenly spaced values
of the first output (`output`, with `output_size`), enough to compare runtimes.
Lines are flushed one by one, so a driver can tell which model crashed the process.
"""

import json
import sys

import numpy as np
from load_models import interpreter_class


def feed(detail):
    shape = [int(d) for d in detail["shape"]]
    size = int(np.prod(shape)) if shape else 1
    dtype = detail["dtype"]
    if np.issubdtype(dtype, np.floating):
        data = np.linspace(0.0, 1.0, size)
    elif dtype == np.bool_:
        data = np.arange(size) % 2
    else:
        data = np.arange(size) % 7
    return data.astype(dtype).reshape(shape)


def run(cls, path):
    row = {"model": path, "stage": None}
    try:
        interpreter = cls(model_path=path)
        row["stage"] = "built"
        interpreter.allocate_tensors()
        row["stage"] = "allocated"
        for detail in interpreter.get_input_details():
            interpreter.set_tensor(detail["index"], feed(detail))
        interpreter.invoke()
        out = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
        flat = np.asarray(out, dtype=np.float64).ravel()
        picks = np.linspace(0, flat.size - 1, min(64, flat.size)).astype(int) if flat.size else []
        row["stage"] = "invoked"
        row["output"] = [round(float(flat[i]), 5) for i in picks]
        row["output_size"] = int(flat.size)
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
