"""Write TFLite files that each use one file feature, with THIS TensorFlow's converter.

Runs inside one TensorFlow 2.x venv (Python 3.7 or newer):

    <venv>/bin/python tools/tflite/make_feature_models.py OUT_DIR

Every case is the same model, relu(x @ W + b) with W float32 [8, 16] (three
quarters zeros, so the sparsity pass has something to compress) fed float32
[1, 8] = linspace(-2, 2); what changes is how the file is laid out:

- `base`: `TFLiteConverter.from_saved_model` as it comes: a `serving_default`
  SignatureDef and a dynamic batch (`shape_signature` [-1, 8]);
- `buffer_offset`: the same with `_experimental_use_buffer_offset = True`: the
  constant buffers after the flatbuffer (schema 3c's Buffer.offset/size, what
  the converter writes for a model over 2 GB);
- `sparse`: the same with `Optimize.EXPERIMENTAL_SPARSITY`: W as a sparse
  tensor (Tensor.sparsity) read by FULLY_CONNECTED version 8;
- `float16`, `sparse_float16`: float16 weights (`supported_types = [tf.float16]`:
  DEQUANTIZE before FULLY_CONNECTED), without and with the sparsity pass (then a
  DENSIFY of the sparse float16 weights, as the real sparse models have);
- `bare`, `signatures`, `shape_signature`: `base` rewritten with TensorFlow's own
  generated FlatBuffers object API (`schema_py_generated`) without the
  SignatureDefs and the shape signatures, then with only one of the two back:
  no converter option leaves them out.

OUT_DIR/cases.json says per case how it was made, TensorFlow's own output and
this release's own interpreter output (or why a case was skipped).
"""

import json
import os
import sys
import tempfile
import traceback

import numpy as np
import tensorflow as tf
from make_models import write_case  # this folder (make_models.py)

X = np.linspace(-2.0, 2.0, 8, dtype=np.float32).reshape(1, 8)
W = ((np.arange(128, dtype=np.float32).reshape(8, 16) % 7) - 3.0) / 4.0
W[:, [c for c in range(16) if c % 4]] = 0.0  # three quarters zeros
B = np.linspace(-0.5, 0.5, 16, dtype=np.float32)


class Dense(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.constant(W)
        self.b = tf.constant(B)

    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32)])
    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


def saved_model():
    module = Dense()
    path = tempfile.mkdtemp()
    tf.saved_model.save(module, path, signatures=module.__call__.get_concrete_function())
    return path, module(tf.constant(X)).numpy()


def convert(path, settings):
    converter = tf.lite.TFLiteConverter.from_saved_model(path)
    if settings.get("buffer_offset"):
        if not hasattr(converter, "_experimental_use_buffer_offset"):
            raise RuntimeError("this converter has no _experimental_use_buffer_offset")
        converter._experimental_use_buffer_offset = True
    if settings.get("float16"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    if settings.get("sparsity"):
        converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY] + (
            [tf.lite.Optimize.DEFAULT] if settings.get("float16") else []
        )
    return converter.convert()


def rewrite(data, signatures, shape_signature):
    """`data` without its SignatureDefs and/or its tensors' shape signatures."""
    from tensorflow.lite.python import schema_py_generated as schema
    import flatbuffers

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    if not signatures:
        model.signatureDefs = None
    if not shape_signature:
        for subgraph in model.subgraphs:
            for tensor in subgraph.tensors:
                tensor.shapeSignature = None
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def run_own(data):
    interpreter = tf.lite.Interpreter(model_content=data)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], X)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


CONVERTED = {
    "base": {},
    "buffer_offset": {"buffer_offset": True},
    "sparse": {"sparsity": True},
    "float16": {"float16": True},
    "sparse_float16": {"sparsity": True, "float16": True},
}
REWRITTEN = {  # case -> (keep the signatures, keep the shape signatures)
    "bare": (False, False),
    "signatures": (True, False),
    "shape_signature": (False, True),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    path, expected = saved_model()
    cases = {}
    made = {}
    jobs = [(name, settings, None) for name, settings in CONVERTED.items()]
    jobs += [(name, {"rewrite_of": "base"}, keep) for name, keep in REWRITTEN.items()]
    for name, settings, keep in jobs:
        entry = {"settings": settings, "input": X.tolist(), "tensorflow": tf.__version__}
        try:
            if keep is None:
                data = convert(path, settings)
            else:
                if "base" not in made:
                    raise RuntimeError("no base model to rewrite")
                data = rewrite(made["base"], *keep)
                entry["settings"] = {
                    "rewrite_of": "base",
                    "signature_defs": keep[0],
                    "shape_signature": keep[1],
                }
        except Exception as exc:
            entry["skipped"] = "%s: %s" % (type(exc).__name__, str(exc)[:300])
            cases[name] = entry
            continue
        made[name] = data
        cases[name] = write_case(out, name, data, expected, run_own, entry)
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
