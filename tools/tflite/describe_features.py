"""The file features TensorFlow's own generated FlatBuffers code finds in TFLite models.

Runs inside a TensorFlow venv whose schema knows every field (2.21):

    <venv>/bin/python tools/tflite/describe_features.py MODEL.tflite [...] > truth.json

Parsed with `tensorflow.lite.python.schema_py_generated` (TensorFlow's accessors,
not ours). The names are those of worker/catalog/data/tflite_features.json:
- `buffer-offset`: a Buffer whose bytes sit after the flatbuffer (offset > 1, schema 3c);
- `large-custom-options`: an Operator whose custom options sit there too;
- `signature-defs`: the model has SignatureDefs;
- tensor features, over the tensors operators read or write: `sparse-tensor`
  (Tensor.sparsity), `shape-signature` (Tensor.shape_signature written),
  `variant-subtypes` (Tensor.variant_tensors), `tensor-type-<NAME>` (each type).
"""

import json
import sys

from tensorflow.lite.python import schema_py_generated as schema

TYPE_NAMES = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}


def describe(path):
    with open(path, "rb") as f:
        data = f.read()
    model = schema.Model.GetRootAsModel(data, 0)
    features = set()
    for i in range(model.BuffersLength()):
        if model.Buffers(i).Offset() > 1:
            features.add("buffer-offset")
    if model.SignatureDefsLength():
        features.add("signature-defs")
    for s in range(model.SubgraphsLength()):
        subgraph = model.Subgraphs(s)
        used = set()
        for o in range(subgraph.OperatorsLength()):
            op = subgraph.Operators(o)
            if op.LargeCustomOptionsOffset() > 1:
                features.add("large-custom-options")
            used.update(op.InputsAsNumpy().tolist() if op.InputsLength() else [])
            used.update(op.OutputsAsNumpy().tolist() if op.OutputsLength() else [])
        for t in sorted(used - {-1}):
            tensor = subgraph.Tensors(t)
            features.add("tensor-type-" + TYPE_NAMES.get(tensor.Type(), "TYPE_%d" % tensor.Type()))
            if tensor.Sparsity() is not None:
                features.add("sparse-tensor")
            if not tensor.ShapeSignatureIsNone():
                features.add("shape-signature")
            if tensor.VariantTensorsLength():
                features.add("variant-subtypes")
    return {"features": sorted(features)}


def main():
    json.dump({p: describe(p) for p in sys.argv[1:]}, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
