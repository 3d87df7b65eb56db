"""Which custom ops one TFLite interpreter runs through its default delegate (XNNPACK).

Runs INSIDE the runtime's own Python, like probe_custom_ops.py:

    <python> tools/tflite/probe_delegate_ops.py

From TensorFlow 2.17 and in LiteRT the interpreter applies the XNNPACK delegate by
default, and XNNPACK runs some custom ops of on-device frameworks (MediaPipe's
Convolution2DTransposeBias, MaxPoolingWithArgmax2D, MaxUnpooling2D) that no op
resolver registers. A delegate takes a node only when its tensors suit it, so the
one-op probes of probe_custom_ops.py (no tensors) cannot see it: here each op gets a
small float32 graph of the shape MediaPipe's models use (static weights, its
options as MediaPipe writes them), and the interpreter is built and allocated. "Encountered
unresolved custom op" means nothing ran it; allocating means something did. One
JSON line per op.
"""

import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from probe_ops import CUSTOM_CODE, Writer, load_interpreter_class

from probe_custom_ops import UNRESOLVED, byte_vector

FLOAT32, INT32 = 0, 2
SAME, VALID = 1, 2
POOL = struct.pack("<10i", VALID, 2, 2, 2, 2, 0, 0, 0, 0, 0)  # TfLitePoolParams
# (name, tensors as (shape, type, constant data or None), inputs, outputs, options)
CASES = [
    (
        "Convolution2DTransposeBias",
        [
            ([1, 4, 4, 2], FLOAT32, None),
            ([2, 3, 3, 2], FLOAT32, struct.pack("<36f", *([0.1] * 36))),
            ([2], FLOAT32, struct.pack("<2f", 0.0, 0.0)),
            ([1, 8, 8, 2], FLOAT32, None),
        ],
        [0, 1, 2],
        [3],
        struct.pack("<3i", SAME, 2, 2),  # TfLiteTransposeConvParams
    ),
    (
        "MaxPoolingWithArgmax2D",
        [([1, 4, 4, 1], FLOAT32, None), ([1, 2, 2, 1], FLOAT32, None), ([1, 2, 2, 1], INT32, None)],
        [0],
        [1, 2],
        POOL,
    ),
    (
        "MaxUnpooling2D",
        [([1, 2, 2, 1], FLOAT32, None), ([1, 2, 2, 1], INT32, None), ([1, 4, 4, 1], FLOAT32, None)],
        [0, 1],
        [2],
        POOL,
    ),
]


def model_bytes(name, tensors, inputs, outputs, options):
    w = Writer()
    w.buf += b"\0\0\0\0TFL3"
    graph_inputs = [i for i in inputs if tensors[i][2] is None]

    def tensor(index):
        shape, kind, data = tensors[index]
        return lambda: w.table(
            [
                ("ref", lambda: w.int_vector(shape)),
                ("i8", kind),
                ("u32", index + 1 if data is not None else 0),
                ("ref", lambda: w.string("t%d" % index)),
            ]
        )

    def buffer(data):
        return lambda: w.table([("ref", lambda: byte_vector(w, data))] if data else [])

    def opcode():
        return w.table(
            [("i8", CUSTOM_CODE), ("ref", lambda: w.string(name)), ("i32", 1), ("i32", CUSTOM_CODE)]
        )

    def operator():
        return w.table(
            [
                ("u32", 0),
                ("ref", lambda: w.int_vector(inputs)),
                ("ref", lambda: w.int_vector(outputs)),
                None,
                None,
                ("ref", lambda: byte_vector(w, options)),
            ]
        )

    def subgraph():
        return w.table(
            [
                ("ref", lambda: w.table_vector([tensor(i) for i in range(len(tensors))])),
                ("ref", lambda: w.int_vector(graph_inputs)),
                ("ref", lambda: w.int_vector(outputs)),
                ("ref", lambda: w.table_vector([operator])),
            ]
        )

    buffers = [buffer(b"")] + [buffer(t[2] or b"") for t in tensors]
    root = w.table(
        [
            ("u32", 3),
            ("ref", lambda: w.table_vector([opcode])),
            ("ref", lambda: w.table_vector([subgraph])),
            None,
            ("ref", lambda: w.table_vector(buffers)),
        ]
    )
    w.u32_at(0, root)
    w.pad()
    return bytes(w.buf)


def main():
    interpreter_class, _ = load_interpreter_class()
    for name, tensors, inputs, outputs, options in CASES:
        try:
            interpreter = interpreter_class(
                model_content=model_bytes(name, tensors, inputs, outputs, options)
            )
            interpreter.allocate_tensors()
            outcome, text = "runs", ""
        except Exception as exc:
            text = str(exc)[:200]
            outcome = "unresolved" if any(w in text for w in UNRESOLVED) else "refused"
        sys.stdout.write(json.dumps({"name": name, "outcome": outcome, "error": text}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
