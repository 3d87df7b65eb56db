"""Which custom ops one TFLite interpreter's default resolver registers.

Runs INSIDE the runtime's own Python (3.7 or newer, standard library plus the
runtime), like probe_ops.py:

    <python> tools/tflite/probe_custom_ops.py NAMES.txt

For each candidate name (one a line) it hands the interpreter a flatbuffer with
one OperatorCode (CUSTOM, `custom_code` = the name, version 1) and one operator
using it (no inputs, no outputs), builds the interpreter and allocates tensors.
A custom op the resolver lacks gets TFLite's placeholder, whose prepare fails
with "Encountered unresolved custom op" (older builders refuse it when the
interpreter is built: "Didn't find custom op for name"); anything else (it
prepared, or a real kernel refused an operator without tensors) means the
resolver has a kernel of that name. One JSON line per name, flushed, so the
driver can tell which name crashed the process (a real kernel reading tensors
the operator does not have): a crash, too, means the kernel was found.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from probe_ops import CUSTOM_CODE, Writer, load_interpreter_class

UNRESOLVED = ("unresolved custom op", "Didn't find custom op")
# An empty FlexBuffers map: the kernels that read options parse `custom_options` in
# Init, and a missing buffer crashes some of them before they can refuse the operator.
EMPTY_OPTIONS = bytes([0, 0, 1, 0, 0, 36, 1])


def byte_vector(w, data):
    w.pad()
    pos = len(w.buf)
    w.buf += len(data).to_bytes(4, "little") + data
    return pos


def model_bytes(name, used=True):
    """One custom OperatorCode; with `used`, one operator of it."""
    w = Writer()
    w.buf += b"\0\0\0\0TFL3"

    def opcode():
        return w.table(
            [("i8", CUSTOM_CODE), ("ref", lambda: w.string(name)), ("i32", 1), ("i32", CUSTOM_CODE)]
        )

    def operator():
        return w.table(
            [
                ("u32", 0),
                ("ref", lambda: w.int_vector([])),
                ("ref", lambda: w.int_vector([])),
                None,
                None,
                ("ref", lambda: byte_vector(w, EMPTY_OPTIONS)),
            ]
        )

    def subgraph():
        return w.table(
            [
                ("ref", lambda: w.table_vector([])),
                ("ref", lambda: w.int_vector([])),
                ("ref", lambda: w.int_vector([])),
                ("ref", lambda: w.table_vector([operator] if used else [])),
            ]
        )

    root = w.table(
        [
            ("u32", 3),
            ("ref", lambda: w.table_vector([opcode])),
            ("ref", lambda: w.table_vector([subgraph])),
            None,
            ("ref", lambda: w.table_vector([lambda: w.table([])])),
        ]
    )
    w.u32_at(0, root)
    w.pad()
    return bytes(w.buf)


def classify(interpreter_class, name):
    try:
        interpreter = interpreter_class(model_content=model_bytes(name))
        interpreter.allocate_tensors()
    except Exception as exc:  # the runtimes raise ValueError or RuntimeError
        text = str(exc)
        if any(words in text for words in UNRESOLVED):
            return "unresolved", text[:200]
        return "resolved", text[:200]
    return "resolved", ""


def main():
    with open(sys.argv[1]) as names:
        candidates = [line.strip() for line in names if line.strip()]
    interpreter_class, _ = load_interpreter_class()
    for name in candidates:
        outcome, text = classify(interpreter_class, name)
        sys.stdout.write(json.dumps({"name": name, "outcome": outcome, "error": text}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
