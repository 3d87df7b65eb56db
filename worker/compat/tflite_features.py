"""Whether a TFLite runtime reads the file features a `.tflite` file uses.

The ops a file needs are one question (worker.compat.tflite); how the file is
laid out is another. TensorFlow's interpreter builder (interpreter_builder.cc)
reads fields as its schema knew them, and a runtime older than a field reads
past it:
- Buffer.offset/size (schema 3c: constant data after the flatbuffer, what the
  converter writes for a model over 2 GB or with `_experimental_use_buffer_offset`):
  a runtime that predates it sees a constant without data and takes it for a
  tensor to compute, so the file loads and every answer is wrong, or a kernel
  that needs the constant refuses it at prepare;
- a tensor type past the runtime's TensorType enum: "Unsupported data type N in
  tensor" when the interpreter is built;
- Tensor.sparsity, Tensor.shape_signature, SignatureDefs: read past by a
  runtime that predates them (a file with no signature API serves by index).

What each runtime does with each feature is measured on real converter files
(catalog/data/tflite_features.json, tools/tflite/build_features.py): `reads`,
`ignored` (read past, and the file still serves), `load-fails`, `requests-fail`.
A feature the file uses and nobody measured on that runtime makes the verdict
unknown, never fine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from worker.model.findings import Code, Finding, Fix, FixKind, Stage, error, info
from worker.model.tflite import TfliteModel, TfliteRuntime

READS = "reads"
IGNORED = "ignored"
LOAD_FAILS = "load-fails"
REQUESTS_FAIL = "requests-fail"
FEATURE_STATUSES = (READS, IGNORED, LOAD_FAILS, REQUESTS_FAIL)

TENSOR_TYPE = "tensor-type-"
FEATURE_TEXT = {
    "buffer-offset": "constant buffers stored after the flatbuffer (Buffer.offset, schema "
    "3c: what the converter writes for a model over 2 GB or with "
    "_experimental_use_buffer_offset)",
    "large-custom-options": "custom options stored after the flatbuffer "
    "(Operator.large_custom_options_offset, schema 3c)",
    "signature-defs": "SignatureDefs",
    "sparse-tensor": "a sparse tensor (Tensor.sparsity)",
    "shape-signature": "shape signatures (Tensor.shape_signature, dynamic dimensions)",
    "variant-subtypes": "variant tensor subtypes (Tensor.variant_tensors)",
}
CONVERTER_SETTING = {"buffer-offset": "_experimental_use_buffer_offset"}
"""Features a converter setting turns on: leaving it off is a fix (under 2 GB)."""


def feature_text(feature: str) -> str:
    if feature.startswith(TENSOR_TYPE):
        return f"tensors of type {feature.removeprefix(TENSOR_TYPE)}"
    return FEATURE_TEXT.get(feature, feature)


@dataclass
class FeatureFindings:
    """What the runtime does with the file's features: build errors (the file fails to
    load), request errors (it loads and fails every request), notes, and whether some
    feature was never measured on it."""

    build: list[Finding] = field(default_factory=list)
    request: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    unknown: bool = False


def judge_features(model: TfliteModel, table: TfliteRuntime) -> FeatureFindings:
    """Each of the file's features against the runtime's measured row."""
    found = FeatureFindings()
    for feature in model.features:
        status = table.features.get(feature)
        text = feature_text(feature)
        said = table.feature_errors.get(feature)
        if status == READS:
            continue
        if status == IGNORED:
            found.notes.append(
                info(
                    Code.TFLITE_FEATURE_IGNORED,
                    f"The file has {text}; {table.label()} reads past them (measured): it "
                    "serves the file by tensor index, and a caller that asks for a "
                    "signature by name gets none.",
                )
            )
        elif status in (LOAD_FAILS, REQUESTS_FAIL):
            loads = status == REQUESTS_FAIL
            what = (
                "it loads the file and every request fails or answers wrong"
                if loads
                else "it fails to load the file"
            )
            words = f" ('{said.strip()}')" if said else ""
            finding = _fails(feature, text, table, what + words, loads)
            (found.request if loads else found.build).append(finding)
        else:
            found.unknown = True
            found.notes.append(
                info(
                    Code.TFLITE_FEATURE_UNMEASURED,
                    f"The file has {text}: whether {table.label()} reads them is not "
                    "measured, so whether it runs the file is unknown "
                    "(tools/tflite/build_features.py measures it).",
                    fix=Fix(
                        FixKind.MEASURE_TFLITE_RUNTIME, release=table.version, runtime=table.family
                    ),
                )
            )
    return found


def _fails(feature: str, text: str, table: TfliteRuntime, what: str, loads: bool) -> Finding:
    setting = CONVERTER_SETTING.get(feature)
    fix = Fix(FixKind.CONVERT_WITHOUT, value=setting) if setting else None
    return error(
        Code.TFLITE_FILE_FEATURE,
        f"The file has {text}: {table.label()} does not read them, so {what} (measured on "
        "a converter's file).",
        fix=fix,
        stage=Stage.REQUEST if loads else Stage.LOAD,
    )
