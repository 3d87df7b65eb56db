"""Check one artifact against one consumer: a registry of named checks.

Each check looks at one aspect (versions, op registration, node validation,
edge types, what a request runs, ...) and returns findings as data, so one
failing check never hides another. What the consumer reads is decided first
(`worker.compat.subject`); then:
- `loads` is false iff some error bites at load; unknown (None) when the
  consumer has no op registry and nothing else refuses the model;
- `serves` is false iff `loads` is or some error bites on the first request;
  unknown when it would be true and a request runs an XlaCallModule of a release
  nobody measured (`xla.unmeasured`).

Function bodies (measured, see `worker.compat.functions`): only the functions
in scope are checked. Their ops and edge types are checked at load (from 1.14);
their attrs at load by `tf.saved_model.load`, but by the v1 loader and a graph
import only when a function first runs. An error deferred so bites at load
when the function is the saver's restore, on the first request when a request
runs it, and never for the saver's save function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from functools import partial

from packaging.version import Version

from worker.compat.data_types import data_type_findings, data_types_unknown
from worker.compat.devices import device_findings
from worker.compat.edges import changed_ops, edge_findings, retyped
from worker.compat.keras import keras_findings
from worker.compat.kernel_changes import kernel_change_findings
from worker.compat.kernel_nondeterminism import nondeterminism_findings
from worker.compat.kernels import unmeasured_kernel_findings
from worker.compat.memo import (
    Identity,
    ObjectTable,
    edges_touching,
    graph_facts,
    identity,
    ops_in,
    registered_names,
    remembered,
)
from worker.compat.nodes import NodeContext, check_node_kind
from worker.compat.objects import object_findings
from worker.compat.op_signature import deprecation_key, judged_at, op_signature
from worker.compat.order import node_position, place, severity_rank
from worker.compat.output_shapes import output_shape_findings
from worker.compat.policy import Policy, apply_same_answer, policy_findings
from worker.compat.runs import run_findings, tag_findings
from worker.compat.serving import serving_findings
from worker.compat.subject import NO_HISTORY, Subject, subject_for
from worker.compat.subject import History as History
from worker.compat.tflite import applies, check_tflite
from worker.compat.unsafe import unsafe_findings
from worker.compat.versions import check_versions
from worker.compat.xla import xla_findings, xla_unknown
from worker.model.artifact import Artifact, Graph, OpDef, VersionDef
from worker.model.consumer import Consumer, minor
from worker.model.findings import (
    Code,
    Finding,
    Fix,
    FixKind,
    error,
    info,
)
from worker.model.verdict import Verdict

FORWARD_WINDOW_DAYS = 21

ATTR_CODES = frozenset(
    {
        Code.ATTR_UNKNOWN,
        Code.ATTR_MISSING,
        Code.ATTR_NOT_ALLOWED,
        Code.ATTR_TYPE,
        Code.ATTR_BELOW_MINIMUM,
    }
)


# --- the checks -----------------------------------------------------------------------------


def check_graph_versions(s: Subject) -> Iterable[Finding]:
    if s.graph is None or s.graph.versions is None or not s.check_graph_versions:
        return []
    target = s.history.upgrade_target(s.graph.versions, s.consumer.graph_def_version)
    findings = check_versions(
        s.graph.versions,
        s.consumer.graph_def_version,
        s.consumer.graph_def_min_producer,
        upgrade_target=target,
    )
    return findings + _forward_window(s, s.graph.versions)


def _forward_window(s: Subject, versions: VersionDef) -> list[Finding]:
    """Information, not a risk: real releases far outside the window loaded the
    fixtures whenever no other rule refused them."""
    gap = versions.producer - s.consumer.graph_def_version
    if gap <= FORWARD_WINDOW_DAYS:
        return []
    written = s.history.producer_date(versions.producer)
    when = f", written around {written.isoformat()}," if written else ""
    return [
        info(
            Code.FORWARD_WINDOW,
            f"Producer GraphDef version {versions.producer}{when} is {gap} versions (days) newer "
            f"than this consumer's {s.consumer.graph_def_version}; TensorFlow promises forward "
            f"compatibility for {FORWARD_WINDOW_DAYS} days only (every other rule was checked).",
            fix=Fix(FixKind.REEXPORT_WITH, release=s.consumer.tensorflow),
        )
    ]


def check_checkpoint(s: Subject) -> Iterable[Finding]:
    ckpt = s.artifact.checkpoint
    if ckpt is None:
        return []
    findings = check_versions(
        ckpt.versions,
        s.consumer.checkpoint_version,
        s.consumer.checkpoint_min_producer,
        what="Checkpoint",
    )
    if ckpt.endianness != "LITTLE":
        findings.append(
            error(
                Code.CHECKPOINT_ENDIANNESS,
                f"Checkpoint was written on a {ckpt.endianness.lower()}-endian machine; "
                "TensorFlow reads bundles only on a platform of the same endianness.",
            )
        )
    return findings


def registry_unknown(s: Subject) -> bool:
    """Op-level answers cannot be known: a graph to check and no registry to check it with."""
    return s.graph is not None and s.consumer.registry is None


def check_registry_available(s: Subject) -> Iterable[Finding]:
    if not registry_unknown(s):
        return []
    release = f"TensorFlow {s.consumer.tensorflow}" if s.consumer.tensorflow else "this build"
    return [
        info(
            Code.REGISTRY_UNAVAILABLE,
            f"No op registry is known for {release}: only version numbers were checked, so "
            "whether it loads and serves the model is unknown. A manifest recorded in that "
            "environment with `tfcompat fleet dump-manifest` makes it known.",
            fix=Fix(FixKind.RECORD_MANIFEST),
        )
    ]


def check_ops(s: Subject, *, in_functions: bool) -> Iterable[Finding]:
    return [place(s, f, fn, checked_at_load=True) for f, fn in _op_findings(s, in_functions)]


def _op_findings(s: Subject, in_functions: bool) -> list[tuple[Finding, str | None]]:
    """Every op the consumer does not register, once per op (the top-level graph's
    first: TensorFlow meets a graph node's error before a function body's), with the
    function it sits in (not yet placed: `place`)."""
    if s.graph is None or s.consumer.registry is None:
        return []
    if graph_facts(s.graph).library_ops <= registered_names(s.consumer.registry.ops):
        return []  # every op the graph names is registered
    functions = set(s.graph.functions)
    seen: set[str] = set()
    if in_functions:
        seen = {k.op for k in s.kinds if k.function is None}
    findings: list[tuple[Finding, str | None]] = []
    for kind in s.kinds:
        op = kind.op
        if (kind.function is not None) != in_functions:
            continue
        if op in seen or op in functions or op in s.consumer.registry.ops:
            continue
        seen.add(op)
        where = kind.where
        introduced = s.history.op_introduced(op)
        last = s.history.op_last_release(op)
        if introduced is None:
            finding = error(
                Code.OP_CUSTOM,
                f"Op type not registered '{op}' ({where}), nor by any known TensorFlow release: "
                "it is a custom op, whose library the consumer must load.",
                op=op,
                fix=Fix(FixKind.LOAD_OP_LIBRARY, op=op),
            )
        elif s.consumer.tensorflow and last and Version(last) < Version(s.consumer.tensorflow):
            finding = error(
                Code.OP_REMOVED,
                f"Op type not registered '{op}' ({where}): TensorFlow {minor(last)} was the last "
                "release to register it.",
                op=op,
                fix=Fix(FixKind.KEEP_AT_MOST, release=last, op=op),
            )
        else:
            finding = error(
                Code.OP_NOT_REGISTERED,
                f"Op type not registered '{op}' ({where}); TensorFlow registers it from "
                f"{minor(introduced)}.",
                op=op,
                fix=Fix(FixKind.UPGRADE_TO, release=introduced, op=op),
            )
        findings.append((finding, kind.function))
    return findings


def _deprecation_version(s: Subject) -> int | None:
    return judged_at(s.artifact, s.graph, s.consumer)


def check_nodes(s: Subject, *, in_functions: bool) -> Iterable[Finding]:
    return [
        place(s, finding, function, checked_at_load=at_load)
        for finding, function, at_load in _nodes(s)
        if (function is not None) == in_functions
    ]


def _nodes(s: Subject) -> list[tuple[Finding, str | None, bool]]:
    """`_node_findings`, once per check: one pass serves both the graph and the functions."""
    if s.nodes is None:
        s.nodes = _node_findings(s)
    return s.nodes


_CLEAN: dict[tuple[Identity, bool, bool], set[tuple[str, str, int, bool]]] = remembered({})


_CLEAN_KINDS_LIMIT = 200_000


def _clean_kinds(ops: object, drops: bool, rejects: bool) -> set[tuple[str, str, int, bool]]:
    """Kind keys found without any finding under a registry and loader context, whatever
    the model: kinds whose attrs the registry all knows and whose op is not deprecated
    (only those two make a kind's findings depend on the model that holds it)."""
    key = (identity(ops), drops, rejects)
    found = _CLEAN.get(key)
    if found is None:
        if len(_CLEAN) >= 1024:
            _CLEAN.clear()
        found = _CLEAN[key] = set()
    elif len(found) >= _CLEAN_KINDS_LIMIT:  # a long-lived worker meets ever new kinds
        found.clear()
    return found


_CONTEXTS: dict[tuple[object, ...], tuple[NodeContext, NodeContext]] = remembered({})


def _contexts(s: Subject) -> tuple[NodeContext, NodeContext]:
    """How the consumer validates top-level nodes and function-body nodes."""
    stripped = bool(s.meta_graph and s.meta_graph.stripped_default_attrs)
    version = _deprecation_version(s)
    rejects = s.consumer.rejects_unknown_attrs
    key = (s.drops_graph_defaults, rejects, version, stripped, identity(s.history))
    hit = _CONTEXTS.get(key)
    if hit is None:
        if len(_CONTEXTS) >= 4096:
            _CONTEXTS.clear()
        default_of, effect_of = s.history.attr_default, s.history.attr_effect
        graph_ctx = NodeContext(
            s.drops_graph_defaults, rejects, version, stripped, default_of, effect_of
        )
        # No loader drops default-valued attrs inside functions (measured: the v1 loader
        # loads such a model and the first call fails); see `place`.
        library_ctx = NodeContext(False, rejects, version, stripped, default_of, effect_of)
        hit = _CONTEXTS[key] = (graph_ctx, library_ctx)
    return hit


def _node_findings(s: Subject) -> list[tuple[Finding, str | None, bool]]:
    """(finding, the function it sits in, whether it is checked at load) of every kind in
    scope: the top-level graph first, as TensorFlow meets it (not yet placed: `place`)."""
    registry = s.consumer.registry
    if s.graph is None or registry is None:
        return []
    rejects = s.consumer.rejects_unknown_attrs
    clean_graph = _clean_kinds(registry.ops, s.drops_graph_defaults, rejects)
    clean_library = _clean_kinds(registry.ops, False, rejects)
    dirty = [
        k for k in s.kinds if k.key not in (clean_graph if k.function is None else clean_library)
    ]
    if not dirty:
        return []
    dirty.sort(key=lambda k: k.function is not None)  # the top-level graph's first
    graph_ctx, library_ctx = _contexts(s)
    findings: list[tuple[Finding, str | None, bool]] = []
    # A cause already reported at the top level is not repeated for a function body.
    reported = s.reported_nodes
    for kind in dirty:
        op = registry.ops.get(kind.op)
        clean = clean_graph if kind.function is None else clean_library
        if op is None:
            clean.add(kind.key)  # not this check's: the ops check reports it
            continue
        ctx = graph_ctx if kind.function is None else library_ctx
        found = check_node_kind(kind, op, s.producer_ops.get(kind.op), ctx)
        if not found:
            if op.deprecation_version is None and all(a in op.attr_map for a in kind.attrs):
                clean.add(kind.key)
            continue
        for finding in found:
            key = (str(finding.code), finding.op, finding.attr or "")
            if key in reported:
                continue  # one finding per (code, op, attr): kinds repeat the same cause
            reported.add(key)
            if finding.code in (Code.ATTR_UNKNOWN, Code.ATTR_IGNORED, Code.ATTR_UNVERIFIED):
                finding = _with_attr_history(s, finding)
            at_load = finding.code not in ATTR_CODES or s.instantiates_at_load
            findings.append((finding, kind.function, at_load))
    return findings


def _with_attr_history(s: Subject, finding: Finding) -> Finding:
    if finding.op is None or finding.attr is None:
        return finding
    introduced = s.history.attr_introduced(finding.op, finding.attr)
    if introduced is None:
        return finding
    fix = finding.fix
    if fix is not None and fix.kind == FixKind.UPGRADE_TO:
        fix = replace(fix, release=introduced)
    return replace(
        finding,
        message=f"{finding.message} (attr '{finding.attr}' of {finding.op} exists from "
        f"TensorFlow {minor(introduced)})",
        fix=fix,
    )


def check_policy(s: Subject) -> Iterable[Finding]:
    versions = s.graph.versions if s.graph is not None else None
    return policy_findings(s.consumer, versions, s.policy)


def check_edges(s: Subject, *, in_functions: bool) -> Iterable[Finding]:
    """Types along every edge in scope (top level or function bodies), under the
    consumer's OpDefs; checked at load by every loader."""
    return [
        place(s, finding, function, checked_at_load=True)
        for finding, function in _edge_findings(s)
        if (function is not None) == in_functions
    ]


def _edge_findings(s: Subject) -> list[tuple[Finding, str | None]]:
    """(finding, the function it sits in) of every edge in scope (not yet placed); one
    pass over the edges serves both the graph and the functions."""
    if s.graph is None or s.consumer.registry is None or not s.kinds:
        return []
    if s.edges is None:
        s.edges = _edges_in_scope(s, s.graph, s.consumer.registry.ops)
    return s.edges


def _edges_in_scope(
    s: Subject, graph: Graph, ops: Mapping[str, OpDef]
) -> list[tuple[Finding, str | None]]:
    changed = None
    if s.producer_ops and s.scope is not None:
        used = ops_in(graph, s.scope.reachable, not s.tf2_load)  # the ops of s.kinds
        changed = changed_ops(used, ops, s.producer_ops)
        if edges_touching(graph, changed):
            changed = retyped(graph, changed, ops, s.producer_ops)
    if changed is not None and not edges_touching(graph, changed):
        return []  # no edge touches an op the consumer types otherwise
    # the same for every loader validating s.kinds (`kinds_in_scope` of these two)
    reachable = s.scope.reachable if s.scope is not None else frozenset()
    memo = _EDGES.of(graph)
    key = (reachable, not s.tf2_load, identity(ops))
    found = memo.get(key)
    if found is None:
        found = memo[key] = edge_findings(graph, s.kinds, ops, changed)
    return found


_EDGES: ObjectTable[tuple[frozenset[str], bool, Identity], list[tuple[Finding, str | None]]] = (
    ObjectTable("edge_findings")
)


def check_serving(s: Subject) -> Iterable[Finding]:
    return serving_findings(s)


def check_keras(s: Subject) -> Iterable[Finding]:
    return keras_findings(s)


def check_unsafe(s: Subject) -> Iterable[Finding]:
    return unsafe_findings(s.artifact, s.policy)


def keras_unknown(s: Subject) -> bool:
    """A Keras file and a consumer whose Keras is not known (`keras.version-unknown`), or
    whose Keras 3 nobody measured on one of the file's layer configs
    (`keras.layer-unmeasured`)."""
    unknown = (Code.KERAS_VERSION_UNKNOWN, Code.KERAS_LAYER_UNMEASURED)
    return s.artifact.keras is not None and any(f.code in unknown for f in keras_findings(s))


CHECKS: dict[str, Callable[[Subject], Iterable[Finding]]] = {
    "saved-model-tags": tag_findings,
    "graph-versions": check_graph_versions,
    "checkpoint": check_checkpoint,
    "registry": check_registry_available,
    "ops": partial(check_ops, in_functions=False),
    "data-types": data_type_findings,
    "nodes": partial(check_nodes, in_functions=False),
    "edges": partial(check_edges, in_functions=False),
    "function-ops": partial(check_ops, in_functions=True),
    "function-nodes": partial(check_nodes, in_functions=True),
    "function-edges": partial(check_edges, in_functions=True),
    "output-shapes": output_shape_findings,
    "serving": check_serving,
    "xla": xla_findings,
    "kernel-changes": kernel_change_findings,
    "kernel-nondeterminism": nondeterminism_findings,
    "kernels-unmeasured": unmeasured_kernel_findings,
    "devices": device_findings,
    "runs": run_findings,
    "objects": object_findings,
    "keras": check_keras,
    "unsafe": check_unsafe,
    "policy": check_policy,
}


# Checks whose findings depend on the artifact, how the consumer loads it and the
# consumer's OpDefs of the ops the artifact uses, never on its version numbers or name.
# Releases that define those ops alike (the patch releases of a minor always do, and
# most minors for the ops of a given model) get the same findings, computed once: a
# report's `compatible_releases` over 79 releases runs them a handful of times.
REGISTRY_CHECKS = (
    "ops", "nodes", "edges", "function-ops", "function-nodes", "function-edges", "serving",
)  # fmt: skip

# The checks run for every consumer (the others are shared: `_registry_findings`).
_OWN_CHECKS = [(name, check) for name, check in CHECKS.items() if name not in REGISTRY_CHECKS]

_Raw = list[tuple[str, Finding, str | None, bool]]
_SHARED: ObjectTable[tuple[object, ...], _Raw] = ObjectTable("registry_findings")


def _raw_registry_findings(s: Subject) -> _Raw:
    """(check name, finding, its function, checked at load) of `REGISTRY_CHECKS`, in
    their order, before `place` decides when each bites for this consumer's loader."""
    found: _Raw = []
    for in_functions, prefix in ((False, ""), (True, "function-")):
        found += [(prefix + "ops", f, fn, True) for f, fn in _op_findings(s, in_functions)]
        found += [
            (prefix + "nodes", f, fn, at_load)
            for f, fn, at_load in _nodes(s)
            if (fn is not None) == in_functions
        ]
        found += [
            (prefix + "edges", f, fn, True)
            for f, fn in _edge_findings(s)
            if (fn is not None) == in_functions
        ]
    found += [("serving", f, None, True) for f in serving_findings(s)]
    return found


def _registry_findings(s: Subject) -> list[tuple[str, Finding]]:
    """(check name, finding) of `REGISTRY_CHECKS`, placed for this consumer.

    Before placement they depend on the artifact, the consumer's OpDefs of its ops
    and how the loader reads it (which functions it validates, whether it judges
    attrs at load, and, for a release that rejects unknown attrs, whether it drops
    the producer's defaults first), not on the loader's name: the v1 loader and a
    graph import of the same release share them. Remembered on the artifact, per history
    and the identities of the OpDefs."""
    consumer = s.consumer
    if consumer.registry is None:
        return [(name, finding) for name in REGISTRY_CHECKS for finding in CHECKS[name](s)]
    _, ids = op_signature(s.graph, consumer, s.history)
    rejects = consumer.rejects_unknown_attrs
    key = (
        identity(s.history),
        s.instantiates_at_load,
        rejects,
        s.drops_graph_defaults if rejects else None,  # else dropping changes nothing
        deprecation_key(s.graph, consumer, _deprecation_version(s)),
        ids,
    )
    memo = _SHARED.of(s.artifact)
    raw = memo.get(key)
    if raw is None:
        raw = memo[key] = _raw_registry_findings(s)
    return [(name, place(s, f, fn, checked_at_load=at_load)) for name, f, fn, at_load in raw]


def _with_unsafe(verdict: Verdict, artifact: Artifact, policy: Policy | None) -> Verdict:
    """A .tflite verdict with the Select TF ops that should never be served (FlexReadFile,
    ...): warnings after the runtime's own findings, or a refusal under the policy."""
    if artifact.format != "tflite":
        return verdict
    unsafe = unsafe_findings(artifact, policy or Policy())
    if not unsafe:
        return verdict
    refused = any(f.fails_request for f in unsafe)
    serves = False if refused else verdict.serves
    return replace(verdict, serves=serves, findings=(*verdict.findings, *unsafe))


def check_artifact(
    artifact: Artifact,
    consumer: Consumer,
    history: History | None = None,
    policy: Policy | None = None,
) -> Verdict:
    """The consumer's verdict: every check's findings, load errors first (in the order
    TensorFlow meets them), then request errors, warnings and information.
    A .tflite file, and any artifact for a TFLite runtime of its own, has its own rules."""
    if artifact.format == "tflite" or not applies(artifact, consumer):
        return _with_unsafe(check_tflite(artifact, consumer, policy), artifact, policy)
    subject = subject_for(artifact, consumer, history or NO_HISTORY)
    if policy is not None:
        subject.policy = policy
    found = [(name, finding) for name, check in _OWN_CHECKS for finding in check(subject)]
    found += _registry_findings(subject)
    strict = apply_same_answer([f for _, f in found], consumer, subject.policy)
    found = [(name, f) for (name, _), f in zip(found, strict, strict=True)]
    ranked: list[tuple[int, tuple[int, int], Finding]] = []
    for name, finding in found:
        phase = "unknown-attrs" if name == "nodes" and finding.code == Code.ATTR_UNKNOWN else name
        ranked.append((severity_rank(finding), node_position(subject, phase, finding), finding))
    ranked.sort(key=lambda item: item[:2])
    findings = [finding for _, _, finding in ranked]
    fails_load = any(f.fails_load for f in findings)
    fails_request = any(f.fails_request for f in findings)
    unknown = registry_unknown(subject) or keras_unknown(subject) or data_types_unknown(findings)
    loads: bool | None = False if fails_load else (None if unknown else True)
    serves: bool | None = False if fails_load or fails_request else loads
    if serves and xla_unknown(findings):
        serves = None  # what its XlaCallModule runs was never measured
    return Verdict(consumer, loads, serves, tuple(findings), subject.loader)
