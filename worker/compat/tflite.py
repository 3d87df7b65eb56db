"""Whether a TFLite runtime runs a `.tflite` file, and whether its answers are right.

Measured on real runtimes (tests/fixtures/tflite: `tf.lite.Interpreter` of the
TensorFlow wheels 1.13 to 2.21, tflite-runtime, LiteRT). A runtime meets a
model's problems in this order, and the findings keep it:
1. building the interpreter. The schema version must be 3; every OperatorCode
   is resolved in turn: a builtin code past the runtime's enum fails ("Op
   builtin_code out of range: N. Are you using old TFLite binary with newer
   model?"; a runtime older than the int32 `builtin_code` field reads the byte
   field and reports 127), and so does a code or op version its resolver lacks
   ("Didn't find op for builtin opcode 'X' version 'N'"). 1.13 and 1.14 also
   refuse here a custom op their resolver lacks, used or not ("Didn't find
   custom op for name 'X' with version 1"). Then the file's features are read
   (worker.compat.tflite_features, measured per runtime): a tensor type past
   the runtime's enum fails here; constant buffers after the flatbuffer
   (schema 3c) load in a runtime that predates them and fail every request;
2. allocating tensors, where each operator is prepared in order: a custom op
   the runtime's default resolver does not register ("Encountered unresolved
   custom op"; which custom ops each resolver registers is measured, e.g.
   TFLite_Detection_PostProcess, Mfcc, AudioSpectrogram from 1.13 on; so is
   which ones the default delegate, XNNPACK, runs when the operator's tensors
   are float32: MediaPipe's Convolution2DTransposeBias from 2.17), a
   Select TF op (`Flex...`) without the Flex delegate (linked only into the
   TensorFlow wheels' interpreter, 2.4 to 2.18), and a kernel that cannot do
   what the operator's tensors need ("Node number N (OP) failed to prepare"):
   an op version TFLite's own versioning requires that the runtime lacks, or a
   kernel change it predates;
3. invoking: a kernel that predates a change the file relies on without a new
   op version (per-channel FULLY_CONNECTED weights before 2.10) runs and
   returns wrong values (all zeros, measured). That model loads but does not
   serve: an error at the request stage, never "serves". A kernel measured to
   answer otherwise than the newest runtime's on the same inputs
   (worker.compat.tflite_results) serves, at risk: `kernel.changed`, an error
   under `same_answer: strict`.

`loads` means the interpreter is built and its tensors allocated; `serves`
that it also answers right. A runtime without a measured table gets unknown
(None) for both, and so does a custom op where the resolver's custom ops were
not measured. The file's `min_runtime_version` metadata is informative: no
runtime checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from worker.compat.policy import Policy, apply_same_answer, policy_findings
from worker.compat.tflite_features import judge_features
from worker.compat.tflite_results import result_findings
from worker.model.artifact import Artifact
from worker.model.consumer import Consumer
from worker.model.findings import Code, Finding, Fix, FixKind, Severity, Stage, error, info
from worker.model.tflite import (
    TENSORFLOW,
    KernelChange,
    TensorSig,
    TfliteInterpreter,
    TfliteModel,
    TfliteOpCode,
    TfliteOperatorKind,
    TfliteRuntime,
)
from worker.model.verdict import Verdict

LOADER = "tflite-interpreter"
SCHEMA_VERSION = 3  # TFLITE_SCHEMA_VERSION since TensorFlow 1.x
BYTE_CODES = 127  # codes from here on do not fit the byte field (written as 127)
PREPARE_FAILS = "prepare-fails"  # KernelChange.without; also "invoke-fails", "wrong-values"
INVOKE_FAILS = "invoke-fails"


def _input(kind: TfliteOperatorKind, index: int) -> TensorSig | None:
    return kind.inputs[index] if index < len(kind.inputs) else None


FEATURES: dict[str, Callable[[TfliteOperatorKind], bool]] = {
    # the weights (input 1) carry one scale per output channel
    "per-channel-weights": lambda k: (w := _input(k, 1)) is not None and w.per_channel,
    # 16-bit activations (16x8 quantization): the data input is INT16
    "int16-activations": lambda k: (x := _input(k, 0)) is not None and x.type == "INT16",
    # float16 data (float16 quantization: DEQUANTIZE from FLOAT16 weights)
    "float16-input": lambda k: (x := _input(k, 0)) is not None and x.type == "FLOAT16",
}
RANK_ABOVE = "input-rank-above-"

FEATURE_TEXT = {
    "per-channel-weights": "per-channel quantized weights (one scale per output channel)",
    "int16-activations": "16-bit activations (16x8 quantization)",
    "float16-input": "a float16 input (float16 quantization)",
}


def has_feature(kind: TfliteOperatorKind, feature: str) -> bool:
    """Whether an operator's tensors show `feature` (a name used in tflite_kernels.json)."""
    if feature.startswith(RANK_ABOVE):
        x = _input(kind, 0)
        return x is not None and x.rank > int(feature.removeprefix(RANK_ABOVE))
    test = FEATURES.get(feature)
    return test is not None and test(kind)


def known_feature(feature: str) -> bool:
    if feature.startswith(RANK_ABOVE):
        return feature.removeprefix(RANK_ABOVE).isdigit()
    return feature in FEATURES


def _feature_text(feature: str) -> str:
    if feature.startswith(RANK_ABOVE):
        return f"an input of rank above {feature.removeprefix(RANK_ABOVE)}"
    return FEATURE_TEXT.get(feature, feature)


def applies(artifact: Artifact, consumer: Consumer) -> bool:
    """Whether the consumer reads this kind of artifact at all: a TFLite runtime of its
    own (tflite-runtime, LiteRT) reads .tflite files and nothing else."""
    standalone = consumer.tflite is not None and consumer.tflite.standalone
    return artifact.format == "tflite" or not standalone


@dataclass
class _Run:
    """What one runtime does with the model: findings in the order it meets them."""

    build: list[Finding] = field(default_factory=list)
    prepare: list[tuple[tuple[int, int], Finding]] = field(default_factory=list)
    request: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    load_unknown: bool = False
    serve_unknown: bool = False

    @property
    def loads(self) -> bool | None:
        if self.build or self.prepare:
            return False
        return None if self.load_unknown else True

    @property
    def serves(self) -> bool | None:
        loads = self.loads
        if loads is False or self.request:
            return False
        return None if loads is None or self.serve_unknown else True

    def errors(self) -> list[Finding]:
        """Load errors in the order the runtime meets them, then request errors."""
        prepared = [f for _, f in sorted(self.prepare, key=lambda item: item[0])]
        return self.build + prepared + self.request


def _schema(model: TfliteModel, run: _Run) -> None:
    if model.schema_version != SCHEMA_VERSION:
        run.build.append(
            error(
                Code.TFLITE_SCHEMA_VERSION,
                f"Model provided is schema version {model.schema_version} not equal to "
                f"supported version {SCHEMA_VERSION}: no TFLite runtime builds it.",
                fix=Fix(FixKind.CONVERT_WITH),
            )
        )


def _custom_ops(model: TfliteModel, interp: TfliteInterpreter | None, run: _Run) -> None:
    """A custom op runs where the runtime's default resolver registers it (measured per
    runtime); Select TF ops only with the Flex delegate."""
    table = interp.table if interp is not None else None
    for index, opcode in enumerate(model.operator_codes):
        if not opcode.is_custom:
            continue
        if not opcode.custom_code:
            run.build.append(
                error(
                    Code.TFLITE_CUSTOM_OP,
                    f"Operator with CUSTOM builtin_code has no custom_code (operator code "
                    f"{index}): no runtime builds it.",
                    fix=Fix(FixKind.CONVERT_WITH),
                )
            )
            continue
        where = _first_use(model, index)
        if opcode.is_flex:
            if table is not None and not table.flex and where is not None:
                run.prepare.append((where, _flex_error(opcode, table, where)))
            continue
        if table is None or table.custom_ops is None:
            if where is not None:
                run.load_unknown = True
            continue
        if opcode.custom_code in table.custom_ops:
            continue
        if opcode.custom_code in table.delegate_custom_ops and _all_float(model, index):
            continue  # the default delegate (XNNPACK) takes it
        assert interp is not None
        if table.unused_custom_fails_build:
            run.build.append(_unresolved_custom(opcode.custom_code, interp, None))
        elif where is not None:  # an operator code no operator uses is never prepared
            run.prepare.append((where, _unresolved_custom(opcode.custom_code, interp, where)))


def _all_float(model: TfliteModel, opcode_index: int) -> bool:
    """Whether every operator of this opcode has float32 tensors only: what the default
    delegate needs to take a custom op no resolver registers."""
    kinds = [k for k in model.operator_kinds if k.opcode_index == opcode_index]
    return bool(kinds) and all(
        t.type == "FLOAT32" for k in kinds for t in (*k.inputs, *k.outputs) if t is not None
    )


def registrars(op: str, measured: Sequence[TfliteRuntime]) -> list[tuple[str, str, str]]:
    """The measured runtimes whose default resolver registers custom op `op`, as
    (family, first, last) runs of consecutive measured versions."""
    runs: list[tuple[str, str, str]] = []
    previous: tuple[str, bool] = ("", False)  # the previous runtime's family, has it
    for runtime in measured:  # by family, oldest first
        has = op in runtime.delegate_custom_ops or (
            runtime.custom_ops is not None and op in runtime.custom_ops
        )
        if has and previous == (runtime.family, True):
            family, first, _ = runs[-1]
            runs[-1] = (family, first, runtime.version)
        elif has:
            runs.append((runtime.family, runtime.version, runtime.version))
        previous = (runtime.family, has)
    return runs


def _registrars_text(op: str, measured: Sequence[TfliteRuntime]) -> str:
    runs = registrars(op, measured)
    if not runs:
        return "no measured TFLite runtime runs it by default"
    spans = [
        f"{family} {first}" if first == last else f"{family} {first} to {last}"
        for family, first, last in runs
    ]
    return "its default resolver or delegate runs it in " + ", ".join(spans)


def _unresolved_custom(
    op: str, interp: TfliteInterpreter, where: tuple[int, int] | None
) -> Finding:
    """The runtime's own words (at build: 1.13 and 1.14; else when the node is prepared),
    which runtimes register the op by default, and the fix: the oldest newer release of
    the consumer's own runtime whose resolver has it, or registering its kernel."""
    upgrade = next(
        (
            r
            for r in interp.upgrades
            if op in r.delegate_custom_ops or (r.custom_ops is not None and op in r.custom_ops)
        ),
        None,
    )
    fix = Fix(
        FixKind.LINK_CUSTOM_OP,
        op=op,
        release=upgrade.version if upgrade else None,
        runtime=interp.family if upgrade else None,
    )
    said = (
        f"Didn't find custom op for name '{op}' with version 1"
        if where is None
        else f"Encountered unresolved custom op: {op}. Node number {where[1]} ({op}) "
        "failed to prepare"
    )
    return error(
        Code.TFLITE_CUSTOM_OP,
        f"{said}: neither the default op resolver nor the default delegate of "
        f"{interp.label()} runs custom op {op} ({_registrars_text(op, interp.measured)}); "
        "the application must register its kernel with the interpreter's op resolver.",
        op=op,
        fix=fix,
    )


def _flex_error(opcode: TfliteOpCode, table: TfliteRuntime, where: tuple[int, int]) -> Finding:
    name = opcode.custom_code or opcode.name
    return error(
        Code.TFLITE_FLEX,
        f"Select TensorFlow op {name} (TensorFlow's {name.removeprefix('Flex')}) needs the "
        f"Flex delegate, which {table.label()} does not have: node number {where[1]} "
        f"({name}) fails to prepare ('Select TensorFlow op(s), included in the given model, "
        "is(are) not supported by this interpreter').",
        op=name,
        fix=Fix(FixKind.ADD_FLEX_DELEGATE, op=name),
    )


def _first_use(model: TfliteModel, opcode_index: int) -> tuple[int, int] | None:
    uses = [
        (k.subgraph, k.position) for k in model.operator_kinds if k.opcode_index == opcode_index
    ]
    return min(uses) if uses else None


def _builtins(model: TfliteModel, table: TfliteRuntime, run: _Run) -> None:
    """Every builtin OperatorCode, resolved as the interpreter's builder does."""
    for opcode in model.operator_codes:
        if opcode.is_custom:
            continue
        seen = opcode.code if table.reads_builtin_code else opcode.deprecated_builtin_code
        if seen > table.max_code or seen < 0:
            byte_only = (
                ", and it reads only the byte field, where codes from 127 are written as 127"
                if not table.reads_builtin_code and opcode.code >= BYTE_CODES
                else ""
            )
            run.build.append(
                error(
                    Code.TFLITE_CODE_OUT_OF_RANGE,
                    f"Op builtin_code out of range: {seen}. Are you using old TFLite binary "
                    f"with newer model? ({opcode.name} is builtin code {opcode.code}; "
                    f"{table.label()} knows codes up to {table.max_code}{byte_only}.)",
                    op=opcode.name,
                )
            )
            continue
        versions = table.ops.get(opcode.code)
        if versions is None or not versions[0] <= opcode.version <= versions[1]:
            has = (
                f"resolves {opcode.name} versions {versions[0]} to {versions[1]}"
                if versions
                else f"has no kernel for {opcode.name}"
            )
            run.build.append(
                error(
                    Code.TFLITE_OP_VERSION,
                    f"Didn't find op for builtin opcode '{opcode.name}' version "
                    f"'{opcode.version}': {table.label()} {has}.",
                    op=opcode.name,
                )
            )


def _kernels(model: TfliteModel, table: TfliteRuntime, run: _Run) -> None:
    """What each operator's tensors need of a kernel whose op the runtime resolves."""
    for kind in model.operator_kinds:
        opcode = model.operator_codes[kind.opcode_index]
        if opcode.is_custom:
            continue
        versions = table.ops.get(opcode.code)
        if versions is None or not versions[0] <= opcode.version <= versions[1]:
            continue  # already refused when the interpreter was built
        where = (kind.subgraph, kind.position)
        needed = max(
            (
                r
                for r in table.required_versions
                if r.op == opcode.name and has_feature(kind, r.feature)
            ),
            key=lambda r: r.version,
            default=None,
        )
        if needed is not None and needed.version > versions[1]:
            run.prepare.append(
                (
                    where,
                    error(
                        Code.TFLITE_KERNEL_PREPARE,
                        f"{opcode.name} with {_feature_text(needed.feature)} needs op "
                        f"version {needed.version} (TFLite's op versioning); the file says "
                        f"version {opcode.version}, and {table.label()}'s kernel goes up to "
                        f"version {versions[1]}: node number {kind.position} "
                        f"({opcode.name}) fails to prepare.",
                        op=opcode.name,
                    ).seen_only(needed.evidence),
                )
            )
        for change, present in table.kernels:
            if change.op != opcode.name or not has_feature(kind, change.feature):
                continue
            if present is None:
                _unknown_kernel(change, opcode, table, run)
            elif not present:
                _kernel_lacking(change, opcode, kind, table, run)


def _unknown_kernel(
    change: KernelChange, opcode: TfliteOpCode, table: TfliteRuntime, run: _Run
) -> None:
    if change.without == PREPARE_FAILS:
        run.load_unknown = True
    else:
        run.serve_unknown = True
    run.notes.append(
        info(
            Code.TFLITE_KERNEL_UNKNOWN,
            f"{opcode.name} with {_feature_text(change.feature)}: whether {table.label()}'s "
            f"kernel has it is not measured (without it: {change.without}), so whether it "
            "serves the model is unknown.",
            op=opcode.name,
        )
    )


def _kernel_lacking(
    change: KernelChange,
    opcode: TfliteOpCode,
    kind: TfliteOperatorKind,
    table: TfliteRuntime,
    run: _Run,
) -> None:
    feature = _feature_text(change.feature)
    if change.without == PREPARE_FAILS:
        run.prepare.append(
            (
                (kind.subgraph, kind.position),
                error(
                    Code.TFLITE_KERNEL_PREPARE,
                    f"{opcode.name} with {feature}: {table.label()}'s kernel predates them "
                    f"(the file says version {opcode.version}, which it resolves): node "
                    f"number {kind.position} ({opcode.name}) fails to prepare.",
                    op=opcode.name,
                ),
            )
        )
        return
    if change.without == INVOKE_FAILS:
        run.request.append(
            error(
                Code.TFLITE_KERNEL_INVOKE,
                f"{opcode.name} with {feature}: {table.label()}'s kernel prepares it (the file "
                f"says version {opcode.version}, which it resolves) and refuses the type "
                f"when it runs: node number {kind.position} ({opcode.name}) fails every "
                "invoke ('Type N not supported ... failed to invoke'). It loads, and every "
                "request fails.",
                op=opcode.name,
                fix=Fix(FixKind.CONVERT_WITH, release=change.convert_with),
                stage=Stage.REQUEST,
            )
        )
        return
    run.request.append(
        error(
            Code.TFLITE_WRONG_VALUES,
            f"{opcode.name} with {feature}, still at op version {opcode.version}: "
            f"{table.label()}'s kernel predates them, runs the model and returns wrong "
            "values (all zeros, measured). It loads, and every answer is wrong.",
            op=opcode.name,
            fix=Fix(FixKind.CONVERT_WITH, release=change.convert_with),
            stage=Stage.REQUEST,
        )
    )


def run_model(
    model: TfliteModel, table: TfliteRuntime | None, interp: TfliteInterpreter | None = None
) -> _Run:
    """What a runtime with this table does with the model (None: no measured table);
    `interp`, the consumer's interpreter, says what messages and fixes can name."""
    if interp is None or interp.table is not table:
        family = table.family if table is not None else TENSORFLOW
        version = table.version if table is not None else ""
        interp = TfliteInterpreter(
            family, version, table, (), () if interp is None else interp.measured
        )
    run = _Run()
    _schema(model, run)
    if table is not None:
        _builtins(model, table, run)
    _custom_ops(model, interp, run)
    if table is not None:
        features = judge_features(model, table)  # read when the interpreter is built
        run.build += features.build
        run.request += features.request
        run.notes += features.notes
        run.load_unknown |= features.unknown
        _kernels(model, table, run)
    else:
        run.load_unknown = True
    return run


def _oldest_upgrade(
    model: TfliteModel, upgrades: Sequence[TfliteRuntime], *, flex: bool = False
) -> str | None:
    for runtime in upgrades:
        if flex and not runtime.flex:
            continue
        if run_model(model, runtime).serves is True:
            return runtime.version
    return None


UPGRADE_CODES = frozenset(
    {
        Code.TFLITE_CODE_OUT_OF_RANGE,
        Code.TFLITE_OP_VERSION,
        Code.TFLITE_KERNEL_PREPARE,
        Code.TFLITE_FILE_FEATURE,
    }
)


def _with_fixes(
    findings: list[Finding], model: TfliteModel, interp: TfliteInterpreter
) -> list[Finding]:
    """Each error's fix, from the runtimes the consumer could move to: the oldest newer
    measured release of its own runtime that serves the model."""
    needs_upgrade = any(f.fix is None and f.code in UPGRADE_CODES for f in findings)
    upgrade = _oldest_upgrade(model, interp.upgrades) if needs_upgrade else None
    fixed = []
    for finding in findings:
        if finding.fix is None and finding.code in UPGRADE_CODES:
            fix = (
                Fix(FixKind.UPGRADE_TO, release=upgrade)
                if interp.family == TENSORFLOW
                else Fix(FixKind.UPGRADE_RUNTIME, release=upgrade, runtime=interp.family)
            )
            finding = replace(finding, fix=fix)
        elif finding.fix is not None and finding.fix.kind == FixKind.ADD_FLEX_DELEGATE:
            release = _oldest_upgrade(model, interp.upgrades, flex=True)
            finding = replace(finding, fix=replace(finding.fix, release=release))
        elif finding.fix is not None and finding.fix.kind == FixKind.CONVERT_WITHOUT:
            release = _oldest_upgrade(model, interp.upgrades)  # or: a runtime that reads it
            runtime = interp.family if release else None
            finding = replace(finding, fix=replace(finding.fix, release=release, runtime=runtime))
        fixed.append(finding)
    return fixed


def _unmeasured(consumer: Consumer, interp: TfliteInterpreter | None) -> Finding:
    if interp is None:
        return info(
            Code.TFLITE_RUNTIME_UNMEASURED,
            f"No TFLite interpreter is known for {consumer.name} (a build without a "
            "catalogued release): whether it runs the model is unknown. Name its TFLite "
            "runtime in the fleet (tflite: or litert:) or measure it with tools/tflite.",
            fix=Fix(FixKind.MEASURE_TFLITE_RUNTIME),
        )
    return info(
        Code.TFLITE_RUNTIME_UNMEASURED,
        f"No measured op table for {interp.label()}: whether it runs the model is "
        "unknown. tools/tflite (probe_ops.py in that environment, then build_table.py "
        "pack) measures one and makes it known.",
        fix=Fix(FixKind.MEASURE_TFLITE_RUNTIME, release=interp.version, runtime=interp.family),
    )


def check_tflite(artifact: Artifact, consumer: Consumer, policy: Policy | None = None) -> Verdict:
    """The consumer's verdict on a .tflite artifact (or, for a TFLite runtime of its own,
    on anything else: it cannot read it)."""
    interp = consumer.tflite
    model = artifact.tflite
    if model is None or artifact.format != "tflite":
        refused = error(
            Code.TFLITE_ONLY,
            f"{consumer.name} is a TFLite runtime: it reads .tflite files only, not a "
            f"{artifact.format}.",
        )
        return Verdict(consumer, False, False, (refused,), LOADER)
    if consumer.tf_serving:
        refused = error(
            Code.TFLITE_NOT_SERVABLE,
            "TensorFlow Serving loads SavedModels; it does not read a bare .tflite file.",
            fix=Fix(FixKind.SERVE_WITH_TFLITE_RUNTIME),
        )
        return Verdict(consumer, False, False, (refused,), LOADER)
    table = interp.table if interp is not None else None
    run = run_model(model, table, interp)
    if table is None:
        run.notes.insert(0, _unmeasured(consumer, interp))
    findings = run.errors()
    if interp is not None:
        findings = _with_fixes(findings, model, interp)
    if table is not None and run.loads is not False:
        upgrades = interp.upgrades if interp is not None else ()
        findings += result_findings(model, table, upgrades)  # what it answers, once it loads
    if policy is not None and not (interp is not None and interp.standalone):
        findings += policy_findings(consumer, None, policy)
    findings = apply_same_answer(findings, consumer, policy or Policy())
    serves = run.serves
    if any(f.severity == Severity.ERROR and f.stage == Stage.POLICY for f in findings):
        serves = False  # it answers, otherwise than the fleet accepts (same_answer: strict)
    return Verdict(consumer, run.loads, serves, (*findings, *run.notes), LOADER)
