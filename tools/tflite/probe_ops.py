"""Which builtin op codes and versions one TFLite interpreter resolves.

Runs INSIDE the runtime's own Python (3.7 or newer, standard library plus the
runtime: `tensorflow`, `tflite_runtime` or `ai_edge_litert`). For every builtin
code 0..--max-code and version 1..--max-version it hands the interpreter a
minimal flatbuffer (one OperatorCode, one empty subgraph, one empty buffer)
and records what the interpreter's builder said. TFLite resolves every
OperatorCode when the interpreter is built, before it looks at any operator,
so the answer is exactly the runtime's own op resolver:
- `ok`: the builder resolved (code, version);
- `out-of-range`: "Op builtin_code out of range: N" (the runtime's enum ends
  before N);
- `no-version`: "Didn't find op for builtin opcode 'NAME' version 'N'"; the
  NAME in that message is the runtime's own name for the code.
Versions are tried from 1 up, and stop at the first refused after one resolved:
TFLite registers one contiguous range of versions per builtin.

The file is written the way TFLite's converter writes an OperatorCode: codes
below 127 in both `deprecated_builtin_code` (byte, field 0) and `builtin_code`
(int32, field 3); larger codes as 127 (PLACEHOLDER_FOR_GREATER_OP_CODES) in
field 0 and the real code in field 3. A runtime older than field 3 reads only
field 0, as it would for a real model.

Prints one JSON document on stdout.
"""

import json
import re
import struct
import sys

CUSTOM_CODE = 32  # BuiltinOperator_CUSTOM


# --- a minimal flatbuffer writer (front to back: every uoffset points forward) ---


class Writer(object):
    def __init__(self):
        self.buf = bytearray()

    def pad(self, n=4):
        while len(self.buf) % n:
            self.buf.append(0)

    def u32_at(self, pos, value):
        struct.pack_into("<I", self.buf, pos, value)

    def string(self, text):
        self.pad()
        pos = len(self.buf)
        data = text.encode("utf-8")
        self.buf += struct.pack("<I", len(data)) + data + b"\0"
        return pos

    def int_vector(self, values):
        self.pad()
        pos = len(self.buf)
        self.buf += struct.pack("<I", len(values))
        for v in values:
            self.buf += struct.pack("<i", v)
        return pos

    def table_vector(self, children):
        """children: callables that write a table and return its position."""
        self.pad()
        pos = len(self.buf)
        self.buf += struct.pack("<I", len(children))
        slots = []
        for _ in children:
            slots.append(len(self.buf))
            self.buf += b"\0\0\0\0"
        for slot, child in zip(slots, children):
            self.u32_at(slot, child() - slot)
        return pos

    def table(self, fields):
        """fields[i] is None or (kind, value): kind 'i8', 'i32', 'u32' or 'ref' (a
        callable writing the referenced object, returning its position)."""
        present = [(i, f) for i, f in enumerate(fields) if f is not None]
        self.pad()
        vt_pos = len(self.buf)
        offsets = [0] * len(fields)
        for slot, (i, _) in enumerate(present):
            offsets[i] = 4 + 4 * slot
        self.buf += struct.pack("<HH", 4 + 2 * len(fields), 4 + 4 * len(present))
        for off in offsets:
            self.buf += struct.pack("<H", off)
        self.pad()
        pos = len(self.buf)
        self.buf += struct.pack("<i", pos - vt_pos)
        refs = []
        for _, (kind, value) in present:
            if kind == "i8":
                self.buf += struct.pack("<b", value) + b"\0\0\0"
            elif kind == "i32":
                self.buf += struct.pack("<i", value)
            elif kind == "u32":
                self.buf += struct.pack("<I", value)
            else:
                refs.append((len(self.buf), value))
                self.buf += b"\0\0\0\0"
        for slot, child in refs:
            self.u32_at(slot, child() - slot)
        return pos


def model_bytes(code, version, custom=None):
    w = Writer()
    w.buf += b"\0\0\0\0TFL3"

    def opcode():
        return w.table(
            [
                ("i8", min(code, 127)),
                ("ref", lambda: w.string(custom)) if custom else None,
                ("i32", version),
                ("i32", code),
            ]
        )

    def subgraph():
        return w.table(
            [
                ("ref", lambda: w.table_vector([])),
                ("ref", lambda: w.int_vector([])),
                ("ref", lambda: w.int_vector([])),
                ("ref", lambda: w.table_vector([])),
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


# --- the runtime under test ---


def load_interpreter_class():
    for module in ("ai_edge_litert.interpreter", "tflite_runtime.interpreter"):
        try:
            mod = __import__(module, fromlist=["Interpreter"])
            return mod.Interpreter, module
        except ImportError:
            pass
    import tensorflow as tf

    return tf.lite.Interpreter, "tensorflow"


NAME = re.compile(r"builtin opcode '([A-Z0-9_]+)' version")


def classify(interpreter_class, data):
    try:
        interpreter_class(model_content=data)
    except Exception as exc:  # the runtimes raise ValueError or RuntimeError
        text = str(exc)
        if "out of range" in text:
            return "out-of-range", None, text
        m = NAME.search(text)
        if m:
            return "no-version", m.group(1), text
        return "error", None, text
    return "ok", None, ""


def main():
    max_code = int(sys.argv[1]) if len(sys.argv) > 1 else 255
    max_version = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    interpreter_class, module = load_interpreter_class()
    ops = {}
    names = {}
    out_of_range = []
    other = {}
    for code in range(max_code + 1):
        outcome, name, text = classify(interpreter_class, model_bytes(code, 999))
        if name:
            names[str(code)] = name
        if outcome == "out-of-range":
            out_of_range.append(code)
            continue
        if outcome != "no-version":
            other[str(code)] = "version 999: " + outcome + ": " + text[:200]
        versions = []
        for version in range(1, max_version + 1):
            outcome, _, text = classify(interpreter_class, model_bytes(code, version))
            if outcome == "ok":
                versions.append(version)
            elif outcome not in ("no-version", "out-of-range"):
                other.setdefault(str(code), "version %d: %s: %s" % (version, outcome, text[:200]))
            if versions and outcome != "ok":
                # TFLite registers one range of versions per op (AddBuiltin(op, kernel, min,
                # max)): the first version refused after one resolved ends it
                break
        ops[str(code)] = versions
    version = ""
    try:
        if module == "tensorflow":
            import tensorflow as tf

            version = tf.__version__
        else:
            import importlib

            pkg = importlib.import_module(module.split(".")[0])
            version = getattr(pkg, "__version__", "")
    except Exception:
        pass
    json.dump(
        {
            "module": module,
            "module_version": version,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "max_code_probed": max_code,
            "max_version_probed": max_version,
            "ops": ops,
            "names": names,
            "out_of_range": out_of_range,
            "other_errors": other,
        },
        sys.stdout,
        sort_keys=True,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
