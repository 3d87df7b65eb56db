"""What a TFLite flatbuffer says about itself, and what a TFLite runtime resolves, as data.

A `.tflite` file has no GraphDef and no VersionDef: what decides whether a
runtime runs it is each OperatorCode (a builtin code and an op version, or a
custom code) and, for a few kernels that changed without a new op version,
what the operator's tensors look like (their types, ranks and quantization).
`TfliteModel` keeps exactly that, with operators collapsed into kinds (the
same opcode over tensors of the same shape of data), so a model of 10,000
operators costs a few dozen kinds and round-trips through JSON.

`TfliteRuntime` is one measured runtime (`tf.lite.Interpreter` of a TensorFlow
wheel, the standalone `tflite-runtime`, LiteRT): the builtin codes and op
versions its resolver has, whether Select TF ops (Flex) run, and which of the
catalogued kernel changes it has. `TfliteInterpreter` is what a consumer runs
`.tflite` files with: a family and version, and that runtime's table when one
was measured (else `table` is None and the answers are unknown).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from worker.model.findings import SeenOnly

CUSTOM = 32
"""BuiltinOperator_CUSTOM: the OperatorCode names its op in `custom_code`."""

FLEX_PREFIX = "Flex"
"""Select TF ops are custom ops named `Flex<TensorFlow op>` (the Flex delegate runs them)."""

TENSORFLOW = "tensorflow"  # tf.lite.Interpreter of a TensorFlow wheel (and its TF Serving)
TFLITE_RUNTIME = "tflite-runtime"  # the standalone pip package, 2.x
LITERT = "ai-edge-litert"  # LiteRT, tflite-runtime's successor


@dataclass(frozen=True)
class TfliteOpCode:
    """One entry of the model's `operator_codes`, as written."""

    deprecated_builtin_code: int  # the byte field (0); 127 for codes that do not fit in it
    builtin_code: int  # the int32 field (3) of schema 3a; 0 when the writer predates it
    version: int
    custom_code: str | None
    name: str  # the builtin's name in TFLite's schema, or the custom code

    @property
    def code(self) -> int:
        """The builtin code as TensorFlow's `GetBuiltinCode` reads it: the larger field."""
        return max(self.builtin_code, self.deprecated_builtin_code)

    @property
    def is_custom(self) -> bool:
        return self.code == CUSTOM

    @property
    def is_flex(self) -> bool:
        return self.is_custom and (self.custom_code or "").startswith(FLEX_PREFIX)


@dataclass(frozen=True)
class TensorSig:
    """What a kernel sees of one tensor: its type, rank and quantization."""

    type: str  # TensorType name: "FLOAT32", "INT8", "INT16", ... ("TYPE_<n>" if unknown)
    rank: int  # len(shape); 0 for a scalar or a tensor written without a shape
    scales: int = 0  # quantization scales: 0 none, 1 per tensor, more: one per channel
    # int8 of shape [n, 1, 1, m]: a 1x1 convolution's weights (the XNNPACK delegate of
    # LiteRT 1.2 and TensorFlow 2.20 on runs a dynamic-range 1x1 CONV_2D otherwise)
    pointwise: bool = False

    @property
    def per_channel(self) -> bool:
        return self.scales > 1


@dataclass(frozen=True)
class TfliteOperatorKind:
    """Operators sharing an opcode and the signature of their tensors."""

    opcode_index: int
    inputs: tuple[TensorSig | None, ...]  # None: an optional input left out (index -1)
    outputs: tuple[TensorSig | None, ...]
    count: int
    subgraph: int  # where the first of them is
    position: int  # the first one's index among that subgraph's operators


@dataclass(frozen=True)
class TfliteModel:
    schema_version: int
    description: str  # the converter's note, e.g. "MLIR Converted."
    min_runtime_version: str | None  # metadata written by the converter; no runtime checks it
    operator_codes: tuple[TfliteOpCode, ...]
    operator_kinds: tuple[TfliteOperatorKind, ...]  # in the order the runtime prepares them
    subgraphs: int
    operators: int
    tensors: int
    buffers: int
    metadata: tuple[str, ...] = ()  # the names of the metadata entries
    signatures: tuple[str, ...] = ()  # SignatureDef keys
    # file features a runtime may not read (worker.formats.tflite's FEATURE names), sorted
    features: tuple[str, ...] = ()


def _sig(d: dict[str, Any] | None) -> TensorSig | None:
    if d is None:
        return None
    return TensorSig(d["type"], d["rank"], d["scales"], d.get("pointwise", False))


def tflite_from_json(d: dict[str, Any]) -> TfliteModel:
    """Inverse of `dataclasses.asdict` of a `TfliteModel`."""
    return TfliteModel(
        schema_version=d["schema_version"],
        description=d["description"],
        min_runtime_version=d["min_runtime_version"],
        operator_codes=tuple(TfliteOpCode(**c) for c in d["operator_codes"]),
        operator_kinds=tuple(
            TfliteOperatorKind(
                opcode_index=k["opcode_index"],
                inputs=tuple(_sig(s) for s in k["inputs"]),
                outputs=tuple(_sig(s) for s in k["outputs"]),
                count=k["count"],
                subgraph=k["subgraph"],
                position=k["position"],
            )
            for k in d["operator_kinds"]
        ),
        subgraphs=d["subgraphs"],
        operators=d["operators"],
        tensors=d["tensors"],
        buffers=d["buffers"],
        metadata=tuple(d["metadata"]),
        signatures=tuple(d["signatures"]),
        features=tuple(d.get("features", ())),
    )


# --- runtimes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelChange:
    """A kernel that learnt something without a new op version (measured on real runtimes).

    A runtime without it fails to prepare such an operator (`without` =
    "prepare-fails"), prepares it and fails every invoke ("invoke-fails": the kernel's
    Eval refuses the type), or, worst, runs it and returns wrong values ("wrong-values")."""

    op: str  # builtin name
    feature: str  # what the operator's tensors show, see worker.compat.tflite.FEATURES
    without: str  # "prepare-fails" | "invoke-fails" | "wrong-values"
    convert_with: str | None  # a converter release that writes the op without the feature
    evidence: str


@dataclass(frozen=True)
class RequiredVersion:
    """The op version TFLite's own versioning gives an operator with `feature`
    (tensorflow/lite/tools/versioning/op_version.cc): a kernel that resolves only
    older versions fails to prepare it, whatever version the file claims."""

    op: str
    feature: str
    version: int
    # set when the row was seen in one fixture, not read from op_version.cc for every op
    evidence: SeenOnly | None = None


@dataclass(frozen=True)
class ResultChange:
    """A builtin of one type variant whose outputs in this runtime differ from the
    reference runtime's beyond the stated tolerance, on the same file and inputs
    (catalog `tflite_kernel_changes`, tools/tflite/kernel_sweep.py)."""

    op: str  # builtin name
    variant: str  # "float32" | "int8" | "int16x8" | "dynamic" (see variant_of)
    reference: str  # the runtime compared with, by name ("ai-edge-litert-2.3.0")
    classes: tuple[str, ...]  # the input classes that differ beyond the tolerance
    met_on: str  # "ordinary": a class a served model meets differs; else "extremes"
    evidence_class: str  # the input class the evidence shows (an ordinary one if any)
    got: str  # this runtime's output there, as measured
    expected: str  # the reference's
    distance: str  # "37 ULPs", "3 quantised steps", "not comparable"
    tolerance: str  # "4 ULPs" or "1 quantised step": within it is rounding
    producer: str  # the converter release that wrote the file
    runtimes: int  # how many runtimes ran it
    remeasure: str

    @property
    def extremes_only(self) -> bool:
        return self.met_on == "extremes"


@dataclass(frozen=True)
class TfliteRuntime:
    """One measured TFLite runtime (tools/tflite/probe_ops.py in its own environment)."""

    name: str  # "tflite-runtime-2.14.0"
    family: str  # TENSORFLOW | TFLITE_RUNTIME | LITERT
    version: str
    tensorflow: str  # the TensorFlow release it was built from; "" when not known (LiteRT)
    flex: bool  # runs Select TF ops (the Flex delegate is linked)
    max_code: int  # builtin codes above this are out of its enum
    ops: Mapping[int, tuple[int, int]]  # builtin code -> (lowest, highest) version resolved
    kernels: tuple[tuple[KernelChange, bool | None], ...] = ()  # has it / lacks it / unknown
    required_versions: tuple[RequiredVersion, ...] = ()
    fingerprint: str = ""  # names the measured contents
    # the custom ops its default op resolver registers (None: not measured)
    custom_ops: frozenset[str] | None = None
    # custom ops no resolver registers that its default delegate (XNNPACK) runs when the
    # operator's tensors are all float32 (MediaPipe's Convolution2DTransposeBias, from 2.17)
    delegate_custom_ops: frozenset[str] = frozenset()
    # it resolves every OperatorCode when built, so an unresolved custom op fails there even
    # when no operator uses it (1.13, 1.14); later ones fail when an operator is prepared
    unused_custom_fails_build: bool = False
    # file feature -> what it does with a file that has it (FEATURE_STATUSES); a feature
    # missing here was not measured for this runtime
    features: Mapping[str, str] = field(default_factory=dict)
    feature_errors: Mapping[str, str] = field(default_factory=dict)  # its own words, measured
    # (builtin, variant) -> how its answers differ from the reference runtime's, measured
    result_changes: Mapping[tuple[str, str], ResultChange] = field(default_factory=dict)
    # the (builtin, variant) pairs the kernel sweep ran in this runtime (empty: never swept)
    results_measured: frozenset[tuple[str, str]] = frozenset()

    @property
    def reads_builtin_code(self) -> bool:
        """Whether it reads the int32 `builtin_code` field. One that knows no code past
        the byte field's 127 predates the field (1.15) and reads only the byte."""
        return self.max_code >= 127

    def label(self) -> str:
        return runtime_label(self.family, self.version)


DATA_INPUT = {"TRANSPOSE_CONV": 2, "SELECT": 1, "SELECT_V2": 1}
"""Builtins whose data input is not input 0 (TRANSPOSE_CONV: output shape, weights, data;
SELECT and SELECT_V2: a bool condition, then the values)."""


def variant_of(kind: TfliteOperatorKind, op: str = "") -> str:
    """The type variant of an operator of builtin `op` as the kernel sweep keys it: what
    its data input holds, for a float input whether some other input (the weights) is
    int8, which is dynamic-range quantisation, and `-per-channel` when the weights carry
    one scale per output channel; a dynamic-range CONV_2D with 1x1 weights adds `-1x1`
    (measured apart: runtimes that answer its 3x3 kernels as the newest do not its 1x1)."""
    index = DATA_INPUT.get(op, 0)
    data = kind.inputs[index] if index < len(kind.inputs) else None
    if data is None:
        return "none"
    rest = [t for t in kind.inputs[:index] + kind.inputs[index + 1 :] if t is not None]
    # one scale per output channel is another kernel path (the per-channel FULLY_CONNECTED
    # of old runtimes returns zeros where per-tensor weights answer), so it keys apart
    channels = "-per-channel" if any(t.per_channel for t in rest) else ""
    if data.type == "INT16":
        return "int16x8" + channels
    if data.type == "FLOAT32":
        hybrid = any(t.type == "INT8" for t in rest)
        pointwise = op == "CONV_2D" and any(t.pointwise for t in rest)
        return "dynamic" + channels + ("-1x1" if pointwise else "") if hybrid else "float32"
    return data.type.lower() + channels


def runtime_label(family: str, version: str) -> str:
    """How messages name a runtime."""
    if family == TENSORFLOW:
        return f"TensorFlow {version}'s tf.lite.Interpreter"
    return f"{family} {version}"


@dataclass(frozen=True)
class TfliteInterpreter:
    """The TFLite interpreter a consumer runs `.tflite` files with.

    `table` None: no measured table for that family and version, so whether it
    runs a model is unknown (never guessed); a TensorFlow patch release without a
    table of its own runs its minor's measured one (`table.version` differs from
    `version`), as it borrows its minor's op registry. `upgrades`: the measured
    runtimes of the same family newer than this one, oldest first (what a fix can
    name); `measured`: every measured runtime of every family (what a message
    can say registers a custom op)."""

    family: str
    version: str
    table: TfliteRuntime | None
    upgrades: tuple[TfliteRuntime, ...] = ()
    measured: tuple[TfliteRuntime, ...] = ()

    @property
    def standalone(self) -> bool:
        """A TFLite runtime of its own (tflite-runtime, LiteRT): it reads .tflite files
        only, so no other format applies to it."""
        return self.family != TENSORFLOW

    def label(self) -> str:
        return runtime_label(self.family, self.version)
