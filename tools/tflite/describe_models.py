"""What TensorFlow's own FlatBuffers code reads in each TFLite model (reader truth).

Runs inside a TensorFlow venv whose schema knows every field (2.21):

    <venv>/bin/python tools/tflite/describe_models.py MODEL.tflite [...] > truth.json

For each model, parsed with `tensorflow.lite.python.schema_py_generated`
(TensorFlow's generated accessors, not ours): the schema version, every
OperatorCode (deprecated_builtin_code, builtin_code, version, custom_code),
the number of operators per op code index, and the `min_runtime_version`
metadata string. tests/formats/test_tflite.py compares our reader with it.
"""

import json
import sys

from tensorflow.lite.python import schema_py_generated as schema


def describe(path):
    with open(path, "rb") as f:
        data = f.read()
    model = schema.Model.GetRootAsModel(data, 0)
    codes = []
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        custom = oc.CustomCode()
        codes.append(
            {
                "deprecated_builtin_code": oc.DeprecatedBuiltinCode(),
                "builtin_code": oc.BuiltinCode(),
                "version": oc.Version(),
                "custom_code": custom.decode() if custom else None,
            }
        )
    uses = [0] * len(codes)
    for s in range(model.SubgraphsLength()):
        sub = model.Subgraphs(s)
        for o in range(sub.OperatorsLength()):
            uses[sub.Operators(o).OpcodeIndex()] += 1
    min_runtime = None
    for m in range(model.MetadataLength()):
        meta = model.Metadata(m)
        if meta.Name() == b"min_runtime_version":
            raw = model.Buffers(meta.Buffer()).DataAsNumpy().tobytes()
            min_runtime = raw.split(b"\0", 1)[0].decode()
    return {
        "schema_version": model.Version(),
        "subgraphs": model.SubgraphsLength(),
        "operator_codes": codes,
        "operators": uses,
        "min_runtime_version": min_runtime,
    }


if __name__ == "__main__":
    json.dump({p: describe(p) for p in sys.argv[1:]}, sys.stdout, indent=1, sort_keys=True)
