"""XlaCallModule: what a release's kernel checks when the node first runs.

jax's native serialization (jax2tf, `jax.export` then `tf.saved_model.save`) puts a
StableHLO program into one `XlaCallModule` node. A load only validates the node
against the OpDef; the kernel reads the module when it first runs
(`XlaCallModuleLoader::LoadModule`, `compiler/tf2xla/kernels/xla_call_module_loader.cc`),
and any of these fails every request:
1. `version`, jax's calling convention: below kVersionMinimumSupported, "is not
   supported anymore"; above kVersionMaximumSupported, "is not supported by this
   build" (measured per release: 2.13 runs 4-5, 2.14 and 2.15 4-8, 2.16 4-9, ...);
2. an empty `platforms` list from version 6 on: "must have non-empty platforms";
3. the module itself: a StableHLO portable artifact stamped with a newer StableHLO
   version than the release reads: "Cannot deserialize computation" (2.13-2.15 refuse
   newer stamps outright; 2.16 on read any stamp of a bare module, and not the new
   encodings of jax's math ops a newer stamp brings: measured with modules of those);
4. the platform: the device's platform ('CPU') must be among `platforms`, spelled as
   jax writes it, unless `disabled_checks` holds 'platform' (from 2.14; the attr is
   ignored by releases whose OpDef lacks it): "The current platform CPU is not among
   the platforms required by the module".
Which of them a release meets first differs (2.13 checks the platform before the
version, 2.14-2.19 deserialize before the version check, 2.20 on check the platform
before deserializing); the first finding is the one it meets first. What each release
does is measured (`worker/catalog/data/xla_call_module.json`, by
`tools/xla/build_table.py`); a release with the op and no measurement has no answer
(`xla.unmeasured`: serves unknown). The tables are the CPU builds': the platform check
is judged for consumers without a GPU.
"""

from __future__ import annotations

from worker.compat.memo import per_object
from worker.compat.serving import request_kinds
from worker.compat.subject import Subject
from worker.model.artifact import Graph, NodeKind
from worker.model.findings import Code, Finding, Fix, FixKind, Stage, error, warning
from worker.model.xla import XlaCallModuleSupport, XlaModule, version_key, xla_module

XLA_CALL_MODULE = "XlaCallModule"
DISABLED_CHECK_PLATFORM = "platform"
CPU_PLATFORM = "CPU"
FIRST_VERSION_WITH_DISABLED_CHECKS = 6  # kVersionStartSupportDisabledChecks


@per_object
def holds_xla(graph: Graph) -> bool:
    """Whether any node of the graph or its functions is an XlaCallModule (kept on the
    graph: a fleet asks it of every model, and most hold none)."""
    return any(k.op == XLA_CALL_MODULE for k in graph.kinds)


def _kinds(s: Subject) -> list[NodeKind]:
    """The XlaCallModule kinds a request runs, one per distinct set of attrs."""
    if s.graph is None or s.scope is None or not holds_xla(s.graph):
        return []
    seen: set[str] = set()
    found = []
    for kind in request_kinds(s):
        if kind.op == XLA_CALL_MODULE and kind.key[1] not in seen:
            seen.add(kind.key[1])
            found.append(kind)
    return found


def _first_running(s: Subject, module: XlaModule, gpu: bool) -> XlaCallModuleSupport | None:
    """The oldest measured release that runs `module` (for the fix)."""
    for support in s.history.xla_call_module_releases():
        if not _problems(module, support, gpu):
            return support
    return None


_CHECK_OF = {"version": "version", "empty-platforms": "version", "stablehlo": "module"}


def _problems(module: XlaModule, support: XlaCallModuleSupport, gpu: bool) -> list[str]:
    """What fails, in the order the release's kernel checks (names only; `_finding`
    words them): the first is what every request reports."""
    found = _unordered_problems(module, support, gpu)
    order = support.check_order
    return sorted(found, key=lambda p: order.index(_CHECK_OF.get(p, "platform")))


def _unordered_problems(module: XlaModule, support: XlaCallModuleSupport, gpu: bool) -> list[str]:
    found = []
    versioned = "version" in support.attrs  # 2.10-2.11's op has none: the attr is ignored
    if versioned and module.version is not None and module.version not in support.versions:
        found.append("version")
    elif (
        not module.platforms
        and module.version is not None
        and module.version >= FIRST_VERSION_WITH_DISABLED_CHECKS
        and any(v >= FIRST_VERSION_WITH_DISABLED_CHECKS for v in support.empty_platforms_fail_at)
    ):
        found.append("empty-platforms")
    if module.stamp is not None and support.reads_stamp(module.stamp) is False:
        found.append("stablehlo")
    if not gpu and _platform_refused(module, support):
        found.append("platform")
    return found


def _platform_refused(module: XlaModule, support: XlaCallModuleSupport) -> bool:
    if not support.platform_error or not module.platforms or CPU_PLATFORM in module.platforms:
        return False
    lifted = DISABLED_CHECK_PLATFORM in module.disabled_checks
    return not (lifted and support.disabled_checks_honoured and "disabled_checks" in support.attrs)


def _span(versions: tuple[int, ...]) -> str:
    if not versions:
        return "none"
    low, high = min(versions), max(versions)
    return str(low) if low == high else f"{low}-{high}"


def _finding(
    problem: str,
    kind: NodeKind,
    module: XlaModule,
    support: XlaCallModuleSupport,
    upgrade: str | None,
) -> Finding:
    where = kind.where
    release = support.release
    if problem == "version":
        assert module.version is not None
        too_new = not support.versions or module.version > max(support.versions)
        said = support.version_above_error if too_new else support.version_below_error
        target = max(support.versions) if too_new and support.versions else None
        if not too_new and support.versions:
            target = min(support.versions)
        return _refused(
            Code.XLA_MODULE_VERSION,
            f"XlaCallModule ({where}) has serialization version {module.version}; TensorFlow "
            f"{release} runs versions {_span(support.versions)}: the model loads and every "
            f"request that runs it fails ({_said(said, module.version)}).",
            "version",
            str(target) if target is not None else None,
            upgrade,
        )
    if problem == "empty-platforms":
        return _refused(
            Code.XLA_PLATFORM,
            f"XlaCallModule ({where}) has serialization version {module.version} and no "
            f"platforms; TensorFlow {release} requires them from version "
            f"{FIRST_VERSION_WITH_DISABLED_CHECKS}: every request that runs it fails "
            f"('XlaCallModuleOp with version {module.version} must have non-empty platforms').",
            "platforms",
            "cpu",
            upgrade,
        )
    if problem == "stablehlo":
        refused = support.refused_from()
        newest = support.stablehlo_newest
        if not newest:
            read = "reads no StableHLO bytecode (only MLIR text)"
        elif refused is not None and not refused[1]:
            read = (
                f"cannot read modules of jax's usual math ops (sine, exponential, ...) "
                f"stamped {refused[0]} or newer, whose encodings changed"
            )
        else:
            read = (
                f"reads modules stamped up to {newest} (refused from {support.stablehlo_refused})"
            )
        return _refused(
            Code.XLA_STABLEHLO,
            f"XlaCallModule ({where}) holds a StableHLO module written for StableHLO "
            f"{module.stamp}; TensorFlow {release} {read}: every request that runs it fails "
            f"('{support.stablehlo_error or 'Cannot deserialize computation'}').",
            "module",
            _older(refused[0]) if refused is not None and newest else None,
            upgrade,
        )
    shown = ", ".join(module.platforms)
    return _refused(
        Code.XLA_PLATFORM,
        f"XlaCallModule ({where}) was lowered for platforms [{shown}], without CPU, where "
        f"TensorFlow {release} runs it: every request that runs it fails "
        f"('{support.platform_error}').",
        "platforms",
        "cpu",
        None,
    )


def _refused(
    code: Code, message: str, attr: str, value: str | None, release: str | None
) -> Finding:
    """An error at the first request, fixed by re-exporting with `attr` at `value` (or by
    upgrading to `release`, the first that runs the module as it is)."""
    fix = Fix(FixKind.REEXPORT_XLA, op=XLA_CALL_MODULE, attr=attr, value=value, release=release)
    return error(code, message, op=XLA_CALL_MODULE, attr=attr, fix=fix, stage=Stage.REQUEST)


def _older(stamp: str) -> str:
    """'older than 1.9.0', for a fix: the newest readable stamp is any below it."""
    return f"older than {stamp}"


def _said(text: str, version: int) -> str:
    """The release's measured words for a version it refuses, with this version in them."""
    if not text:
        return f"XlaCallModuleOp with version {version} is not supported"
    head, sep, tail = text.partition("with version ")
    if sep and " " in tail:
        tail = f"{version} " + tail.split(" ", 1)[1]
    return f"'{head}{sep}{tail}'"


def xla_findings(s: Subject) -> list[Finding]:
    """Every XlaCallModule a request runs, judged as the consumer's kernel judges it."""
    kinds = _kinds(s)
    if not kinds:
        return []
    registry = s.consumer.registry
    if registry is not None and XLA_CALL_MODULE not in registry.ops:
        return []  # op.not-registered says it, at load
    release = s.consumer.tensorflow
    support = s.history.xla_call_module(release) if release else None
    if support is None:
        return [
            warning(
                Code.XLA_UNMEASURED,
                f"XlaCallModule ({kinds[0].where}) runs on every request, and what "
                f"{'TensorFlow ' + release if release else 'this build'}'s XlaCallModule "
                "accepts (serialization versions, platforms, StableHLO versions) was not "
                "measured: whether it serves the model is unknown.",
                op=XLA_CALL_MODULE,
            )
        ]
    gpu = s.consumer.gpu
    findings: list[Finding] = []
    reported: set[tuple[str, str]] = set()
    for kind in kinds:
        module = xla_module(kind.attrs)
        problems = _problems(module, support, gpu)
        if not problems:
            continue
        first = _first_running(s, module, gpu)
        upgrade = (
            first.release
            if first is not None and version_key(first.release) > version_key(support.release)
            else None
        )
        for problem in problems:
            key = (problem, kind.key[1])
            if key not in reported:
                reported.add(key)
                findings.append(_finding(problem, kind, module, support, upgrade))
    if gpu:
        findings += _gpu_platform_unverified(kinds, support)
    return findings


GPU_PLATFORMS = ("CUDA", "ROCM")


def _gpu_platform_unverified(kinds: list[NodeKind], support: XlaCallModuleSupport) -> list[Finding]:
    """A consumer with a GPU places XlaCallModule there, where the platform check
    compares the module's platforms with CUDA (or ROCM); what it does was measured on the
    CPU only, so a module lowered for other platforms only is an unknown, never a 'serves'."""
    for kind in kinds:
        module = xla_module(kind.attrs)
        if not module.platforms or any(p in GPU_PLATFORMS for p in module.platforms):
            continue
        lifted = DISABLED_CHECK_PLATFORM in module.disabled_checks
        if lifted and support.disabled_checks_honoured and "disabled_checks" in support.attrs:
            continue
        return [
            warning(
                Code.XLA_UNMEASURED,
                f"XlaCallModule ({kind.where}) was lowered for platforms "
                f"[{', '.join(module.platforms)}], without CUDA or ROCM, and this consumer "
                "runs on a GPU, where the kernel checks the module's platforms against the "
                "GPU's ('The current platform CUDA is not among the platforms required by "
                "the module'); that was not measured (the tables come from CPU builds): "
                "whether it serves the model is unknown.",
                op=XLA_CALL_MODULE,
                fix=Fix(FixKind.REEXPORT_XLA, attr="platforms", value="cuda"),
            )
        ]
    return []


def xla_unknown(findings: list[Finding]) -> bool:
    """Whether the consumer's XlaCallModule was never measured (serves: unknown)."""
    return any(f.code == Code.XLA_UNMEASURED for f in findings)
