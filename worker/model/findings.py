"""Findings: what a check says about one artifact for one consumer, as data.

A finding carries its fix as data (`Fix`), never only as prose: messages,
Slack and the check run render the fix from its fields, so nothing has to
read a release number back out of a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    ERROR = "error"  # the consumer fails: at load, or on the first request (see Stage)
    WARNING = "warning"  # a named hazard with evidence: it serves, but something can break
    INFO = "info"  # worth knowing, no hazard for this consumer (e.g. the forward window)


class Stage(StrEnum):
    """When an error bites: the load fails, or the model loads and every request fails."""

    LOAD = "load"
    REQUEST = "request"
    POLICY = "policy"  # TensorFlow would serve it; the fleet's policy refuses to


class Code(StrEnum):
    """Stable finding codes; reports, tags and notifications key on these."""

    MIN_CONSUMER = "version.min-consumer"
    MIN_PRODUCER = "version.min-producer"
    BAD_CONSUMER = "version.bad-consumer"
    FORWARD_WINDOW = "version.forward-window"
    CHECKPOINT_VERSION = "checkpoint.version"
    CHECKPOINT_ENDIANNESS = "checkpoint.endianness"
    OP_NOT_REGISTERED = "op.not-registered"
    OP_REMOVED = "op.removed"
    OP_CUSTOM = "op.custom"
    OP_DEPRECATED = "op.deprecated"
    OP_NEEDS_CUDA = "op.needs-cuda"
    ATTR_UNKNOWN = "attr.unknown"
    ATTR_IGNORED = "attr.ignored"  # measured: changes results (warning) or not (info)
    ATTR_UNVERIFIED = "attr.ignored-unverified"  # ignored, and what that changes is unmeasured
    ATTR_DEFAULT_DROPPED = "attr.default-dropped"
    ATTR_MISSING = "attr.missing"
    ATTR_TYPE = "attr.wrong-type"
    ATTR_NOT_ALLOWED = "attr.not-allowed"
    ATTR_BELOW_MINIMUM = "attr.below-minimum"
    INPUTS_MISMATCH = "node.inputs-mismatch"
    EDGE_TYPE = "edge.type-mismatch"
    # a data type the consumer's DataType enum lacks, or was not measured for (compat.data_types)
    DTYPE_UNKNOWN = "dtype.unknown"
    DTYPE_UNMEASURED = "dtype.unmeasured"
    # a node pinned to a device the consumer's session cannot place it on (compat.devices)
    DEVICE_UNAVAILABLE = "device.unavailable"
    EDGE_OUTPUT = "edge.invalid-output"
    # a recorded `_output_shapes` the consumer's shape function contradicts (compat.output_shapes)
    OUTPUT_SHAPES = "import.output-shapes"
    RESOURCE_UNINITIALIZED = "resource.uninitialized"
    # The loader's steps and the first request (worker.compat.runs)
    SAVED_MODEL_TAGS = "saved-model.tags"  # no MetaGraph the loader's tag set selects
    RESTORE_FAILED = "restore.failed"  # the saver's restore run cannot run
    INIT_FAILED = "init.failed"  # the init op (main_op, legacy_init_op) cannot run
    REQUEST_FEED = "request.feed"  # a placeholder the signature does not feed
    REQUEST_NO_SIGNATURE = "request.no-signature"  # nothing a request can call
    REQUEST_PYTHON = "request.python"  # a Python callable on a run: no other process has it
    KERNEL_MISSING = "kernel.missing"  # registered op, no kernel for the device and types
    KERNEL_CHANGED = "kernel.changed"  # the kernel computes other results than the newest
    KERNEL_UNMEASURED = "kernel.unmeasured"  # no kernel table for the consumer: not looked up
    # ops on the request path whose (op, dtype) no release comparison ran: not verified
    KERNEL_RESULTS_UNMEASURED = "kernel.results-unmeasured"
    # a kernel measured to differ only on extreme or special inputs (NaN, overflow, empty)
    KERNEL_RESULTS_EXTREMES = "kernel.results-extremes"
    # a kernel measured to answer otherwise on a second run of the same node (unwritten memory)
    KERNEL_NONDETERMINISTIC = "kernel.nondeterministic"
    OBJECT_NOT_REVIVED = "object.not-revived"  # tf.saved_model.load cannot rebuild it
    REQUEST_CHECKPOINT_IO = "request.checkpoint-io"
    # What the SavedModel's own files decide (worker.compat.own_files)
    ASSET_MISSING = "asset.missing"  # a run opens an asset the SavedModel does not ship
    ASSET_EXPORT_PATH = "asset.export-path"  # a request opens the path written at export
    ASSERT_FALSE = "assert.constant-false"  # an Assert whose condition is constant and false
    # a lookup in a table nothing fills: its negative default becomes a Gather index
    LOOKUP_DEFAULT_INDEX = "request.lookup-default"
    # Keras files (worker.compat.keras) and ops that should never be served (compat.unsafe)
    KERAS_NOT_SERVABLE = "keras.not-servable"  # TF Serving reads SavedModels, not Keras files
    KERAS_VERSION_UNKNOWN = "keras.version-unknown"
    KERAS_FORMAT = "keras.format-unsupported"  # a .keras zip before Keras 2.12
    KERAS_CLASS_UNKNOWN = "keras.class-unknown"  # a class or module the consumer's Keras lacks
    KERAS_NEWER_MAJOR = "keras.newer-major"  # a Keras 3 file in Keras 2
    KERAS_ARGUMENT_UNKNOWN = "keras.argument-unknown"  # an argument an older Keras 2 lacks
    KERAS_ARGUMENT_REMOVED = "keras.argument-removed"  # a Keras 2 config key Keras 3 rejects
    KERAS_ARCHIVE_MINOR = "keras.archive-minor"  # a Keras 2 .keras from another Keras 2 minor
    KERAS_LAMBDA_SAFE_MODE = "keras.lambda-safe-mode"  # Lambda refused unless safe_mode=False
    KERAS_LAMBDA_PYTHON = "keras.lambda-python"  # marshalled Lambda code from another Python
    KERAS_UNKNOWN_OBJECT = "keras.unknown-object"  # a name the consumer's Keras cannot resolve
    KERAS_COMPILE_ARGUMENT = "keras.compile-argument"  # an optimizer argument it rejects
    KERAS_COMPILE_ONLY = "keras.compile-only"  # only compiling fails: compile=False loads it
    KERAS_INPUT_SHAPE = "keras.input-shape"  # the consumer's Keras reads the input otherwise
    KERAS_LAYER_DTYPE = "keras.layer-dtype"  # an integer layer dtype a drawn initializer fills
    KERAS_LAYER_CONFIG = "keras.layer-config"  # a Keras 2 H5 layer config Keras 3 fails on
    KERAS_LAYER_UNMEASURED = "keras.layer-unmeasured"  # a Keras 2 H5 layer config nobody measured
    KERAS_LAYER_NAME = "keras.layer-name"  # a layer or model name Keras 3 refuses ('/')
    KERAS_NESTED_CALL = "keras.nested-call"  # a nested model's call Keras 3 never resolves
    KERAS_UNBUILT_SEQUENTIAL = "keras.unbuilt-sequential"  # no input shape: weights fail
    UNSAFE_FILE_IO = "unsafe.file-io"  # reads, writes or lists files outside the saver
    UNSAFE_PYTHON = "unsafe.python"  # runs Python: PyFunc ops, marshalled Lambda code
    UNSAFE_NETWORK = "unsafe.network"  # opens connections to addresses the graph names
    # XlaCallModule (worker.compat.xla): checked by its kernel at the first run
    XLA_MODULE_VERSION = "xla.module-version"  # a calling-convention version it does not run
    XLA_PLATFORM = "xla.platform"  # lowered for platforms without the consumer's
    XLA_STABLEHLO = "xla.stablehlo-version"  # a StableHLO module newer than it reads
    XLA_UNMEASURED = "xla.unmeasured"  # no measurement of this release's XlaCallModule
    FUNCTION_DEFERRED = "function.checked-at-call"
    REGISTRY_UNAVAILABLE = "registry.unavailable"
    POLICY_BAD_CONSUMER = "policy.bad-consumer"
    POLICY_NOT_BANNED = "policy.model-does-not-ban"
    # TFLite runtimes (worker.compat.tflite)
    TFLITE_SCHEMA_VERSION = "tflite.schema-version"
    TFLITE_CODE_OUT_OF_RANGE = "tflite.op-code-out-of-range"
    TFLITE_OP_VERSION = "tflite.op-version"
    TFLITE_FLEX = "tflite.flex"
    TFLITE_CUSTOM_OP = "tflite.custom-op"
    TFLITE_KERNEL_PREPARE = "tflite.kernel-prepare"
    TFLITE_WRONG_VALUES = "tflite.wrong-values"
    TFLITE_KERNEL_INVOKE = "tflite.kernel-invoke"  # the kernel fails every invoke
    TFLITE_KERNEL_UNKNOWN = "tflite.kernel-unknown"
    TFLITE_RUNTIME_UNMEASURED = "tflite.runtime-unmeasured"
    TFLITE_ONLY = "tflite.reads-tflite-only"
    TFLITE_NOT_SERVABLE = "tflite.not-servable"  # TF Serving reads SavedModels, not .tflite
    TFLITE_FILE_FEATURE = "tflite.file-feature"  # a file feature the runtime does not read
    TFLITE_FEATURE_IGNORED = "tflite.feature-ignored"  # read past; the file still serves
    TFLITE_FEATURE_UNMEASURED = "tflite.feature-unmeasured"


class FixKind(StrEnum):
    """What a person can do about a finding; each kind names its own parameters."""

    UPGRADE_TO = "upgrade_to"  # release: the consumer's oldest upgrade that serves the model
    KEEP_AT_MOST = "keep_at_most"  # release: the last release that has the op
    STRIP_DEFAULT_ATTRS = "strip_default_attrs"  # re-export dropping default-valued attrs
    SET_ATTR_DEFAULT = "set_attr_default"  # op, attr: export with the attr at its default
    DROP_ATTR = "drop_attr"  # op, attr: measured to change no results; dropping it is safe
    REEXPORT_WITHOUT_OP = "reexport_without_op"  # op
    LOAD_OP_LIBRARY = "load_op_library"  # op: a custom op's library, in the consumer
    USE_MODEL_EXPORT = "use_model_export"  # Keras 3: model.export() instead of saved_model.save
    EXPORT_SAVED_MODEL = "export_saved_model"  # Keras: model.export(DIR), a SavedModel
    RESAVE_AS_H5 = "resave_as_h5"  # keras: load with that Keras, model.save("model.h5")
    RESAVE_AS_KERAS3 = "resave_as_keras3"  # keras: load with that Keras, re-save with Keras 3
    REPLACE_LAMBDA = "replace_lambda"  # a registered Layer subclass instead of a Lambda
    RESAVE_WITH_PYTHON = "resave_with_python"  # python: save the Lambda model under it
    DECLARE_KERAS = "declare_keras"  # `keras:` (and `python:`) in the consumer's fleet entry
    # keras, shape: re-save from that Keras 2 or a later one (an InputLayer first), or rebuild it
    # on keras.Input(batch_shape=shape); or serve it with Keras 2
    DECLARE_INPUT = "declare_input"
    # name: the layer; rebuild the model with that layer in float32 (the input keeps the
    # integer dtype) in the consumer's Keras, load the weights, save it again
    FLOAT_LAYER_DTYPE = "float_layer_dtype"
    # name: the first layer whose name Keras 3 refuses; keras: the Keras that wrote the file.
    # Rebuild it there with names without '/', load the weights by order, save it again
    RENAME_LAYERS = "rename_layers"
    RENUMBER_NESTED_CALLS = "renumber_nested_calls"  # name: the nested model
    # name: the first layer; rebuild the model in code with its input declared, load the
    # file's weights into it and save it again
    REBUILD_WITH_INPUT = "rebuild_with_input"
    # name: pass it in load_model(custom_objects=...), or re-save it registered
    REGISTER_CUSTOM_OBJECT = "register_custom_object"
    LOAD_WITHOUT_COMPILE = "load_without_compile"  # name: load_model(path, compile=False)
    USE_LOADER = "use_loader"  # loader: a loader that serves the model as it is
    REEXPORT_WITH = "reexport_with"  # release: export with that release (None: a newer one)
    USE_CUDA_BUILD = "use_cuda_build"  # op: the op's kernel runs only in a CUDA build
    RECORD_MANIFEST = "record_manifest"  # `tfcompat fleet dump-manifest` in that environment
    LEAVE_BANNED_RELEASE = "leave_banned_release"  # the fleet's policy bans the release
    LIST_BANNED_RELEASES = "list_banned_releases"  # add the fleet's bans to bad_consumers
    # TFLite: `runtime` names the runtime family (tflite-runtime, ai-edge-litert, tensorflow)
    UPGRADE_RUNTIME = "upgrade_runtime"  # runtime, release: its oldest measured one that runs it
    CONVERT_WITH = "convert_with"  # release: convert with that release's TFLite converter
    # value: the converter setting to leave off (a model under 2 GB needs none of it);
    # runtime, release: else the consumer's oldest measured upgrade that reads the file
    CONVERT_WITHOUT = "convert_without"
    ADD_FLEX_DELEGATE = "add_flex_delegate"  # op: link the Flex delegate (release: one with it)
    LINK_CUSTOM_OP = "link_custom_op"  # op: register its kernel with the interpreter's resolver
    MEASURE_TFLITE_RUNTIME = "measure_tflite_runtime"  # runtime, release: tools/tflite there
    SERVE_WITH_TFLITE_RUNTIME = "serve_with_tflite_runtime"  # a .tflite for TF Serving
    # The loader's steps and the first request
    EXPORT_SERVE_TAG = "export_serve_tag"  # save with tags=["serve"] (alone)
    LOAD_WITH_TAGS = "load_with_tags"  # tf.saved_model.load(path, tags=["serve"])
    ADD_INIT_OP = "add_init_op"  # export with main_op (tables_initializer, local variables)
    SAVE_VARIABLES = "save_variables"  # export with the variables in the saver (variables/)
    FEED_PLACEHOLDER = "feed_placeholder"  # make it a signature input, or give it a default
    ADD_SIGNATURE = "add_signature"  # export a serving_default signature
    USE_GPU_BUILD = "use_gpu_build"  # op: its kernel exists for GPU only
    EXPORT_WITHOUT_OPTIMIZER = "export_without_optimizer"  # save the model, not its optimizer
    SHIP_ASSETS = "ship_assets"  # upload the SavedModel's assets/ with it
    # op: read the asset in the init op (a table), or pass its path as a signature input
    READ_ASSET_AT_INIT = "read_asset_at_init"
    STRIP_OUTPUT_SHAPES = "strip_output_shapes"  # op: remove `_output_shapes` from the graph
    # XlaCallModule: attr (version, platforms, module) re-exported with `value` (a jax
    # serialization version, a platform); release: the oldest measured one that runs it
    REEXPORT_XLA = "reexport_xla"
    # re-export with the devices cleared: Builder.add_meta_graph_and_variables(...,
    # clear_devices=True), or tf.compat.v1.train.export_meta_graph(clear_devices=True)
    CLEAR_DEVICES = "clear_devices"


@dataclass(frozen=True)
class Fix:
    kind: FixKind
    release: str | None = None
    op: str | None = None
    attr: str | None = None
    loader: str | None = None
    runtime: str | None = None  # a TFLite runtime family, for the TFLite kinds
    keras: str | None = None  # a Keras version ("2.15", "3")
    python: str | None = None  # a Python version family ("3.11+")
    name: str | None = None  # a Keras object's name ("my_loss", "Custom>MyLayer")
    shape: str | None = None  # a Keras input's batch shape, "(None, 4)"
    value: str | None = None  # a value to export with (XLA: a serialization version, 'cpu')

    def to_json(self) -> dict[str, str]:
        data = {"kind": str(self.kind)}
        for key in (
            "release", "op", "attr", "loader", "runtime", "keras", "python", "name", "shape",
            "value",
        ):  # fmt: skip
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data


@dataclass(frozen=True)
class SeenOnly:
    """A fact a rule holds only from the fixture or model it was seen in, not generated
    from the releases by a tool: the finding holds for that case; whether the fact holds
    beyond it (other ops, layers or features of the same kind) is not verified."""

    seen_in: str  # the fixture or model, as the repository names it

    def to_json(self) -> dict[str, Any]:
        return {"seen_only": True, "seen_in": self.seen_in}


@dataclass(frozen=True)
class Finding:
    code: Code
    severity: Severity
    message: str
    op: str | None = None
    attr: str | None = None
    fix: Fix | None = None
    stage: Stage = Stage.LOAD  # for errors: when it fails
    evidence: SeenOnly | None = None  # set when the rule's fact is seen-only

    @property
    def fails_load(self) -> bool:
        return self.severity == Severity.ERROR and self.stage == Stage.LOAD

    @property
    def fails_request(self) -> bool:
        return self.severity == Severity.ERROR

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": str(self.code),
            "severity": str(self.severity),
            "message": self.message,
            "op": self.op,
            "attr": self.attr,
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.severity == Severity.ERROR:
            data["stage"] = str(self.stage)
        if self.evidence is not None:
            data["evidence"] = self.evidence.to_json()
        return data

    def seen_only(self, evidence: SeenOnly | None) -> Finding:
        """This finding, saying its fact was seen only in `evidence.seen_in` (None: as is)."""
        if evidence is None:
            return self
        note = f" (A fact seen only in {evidence.seen_in}, not measured over the releases.)"
        return replace(self, message=self.message + note, evidence=evidence)


def error(
    code: Code,
    message: str,
    op: str | None = None,
    attr: str | None = None,
    fix: Fix | None = None,
    stage: Stage = Stage.LOAD,
) -> Finding:
    return Finding(code, Severity.ERROR, message, op, attr, fix, stage)


def warning(
    code: Code, message: str, op: str | None = None, attr: str | None = None, fix: Fix | None = None
) -> Finding:
    return Finding(code, Severity.WARNING, message, op, attr, fix)


def info(
    code: Code, message: str, op: str | None = None, attr: str | None = None, fix: Fix | None = None
) -> Finding:
    return Finding(code, Severity.INFO, message, op, attr, fix)
