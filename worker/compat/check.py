"""Check one artifact against one consumer: a registry of named checks.

Each check looks at one aspect (versions, op registration, node validation,
edge types, ...) and returns findings as data, so one failing check never
hides another. `loads` is true iff no finding is an error.

Which graph a consumer reads, and what its loader does first, follows
TensorFlow's loaders (the fixture matrices show each case):
- SavedModel loaders (and import_meta_graph) use the MetaGraph tagged `serve`
  and drop unknown attrs whose value is the producer's default (from
  `stripped_op_list`) from the graph's nodes, never inside functions;
- function bodies: the tf.compat.v1 loader and a graph import check their ops
  at load (from 1.14) but their attrs only when a function first runs;
  `tf.saved_model.load` instantiates them at load;
- `tf.saved_model.load` judges deprecations at the running binary's GraphDef
  version, and on a TF2 SavedModel (one with an object graph) ignores the
  VersionDef and instantiates only the function library;
- a graph import takes the GraphDef as it is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from worker.compat.edges import edge_findings
from worker.compat.nodes import NodeContext, check_node_kind
from worker.compat.policy import Policy, policy_findings
from worker.compat.versions import check_versions
from worker.model.artifact import Artifact, Graph, MetaGraph, NodeKind, OpDef, VersionDef
from worker.model.consumer import Consumer, Loader
from worker.model.findings import Code, Finding, Severity, error, warning
from worker.model.verdict import Verdict

FORWARD_WINDOW_DAYS = 21
SERVING_TAG = "serve"


class History(Protocol):
    """What the release catalog knows beyond one consumer (for messages)."""

    def op_introduced(self, op: str) -> str | None:
        """The first known release that registers `op`; None if none does."""
        ...

    def attr_introduced(self, op: str, attr: str) -> str | None: ...

    def op_last_release(self, op: str) -> str | None:
        """The last known release that registers `op` (for removed ops)."""
        ...

    def producer_date(self, graph_def_version: int) -> dt.date | None: ...

    def upgrade_target(self, versions: VersionDef, current: int) -> str | None:
        """The oldest known release newer than `current` that accepts `versions`."""
        ...


class NoHistory:
    def op_introduced(self, op: str) -> str | None:
        return None

    def attr_introduced(self, op: str, attr: str) -> str | None:
        return None

    def op_last_release(self, op: str) -> str | None:
        return None

    def producer_date(self, graph_def_version: int) -> dt.date | None:
        return None

    def upgrade_target(self, versions: VersionDef, current: int) -> str | None:
        return None


@dataclass
class Subject:
    """What a consumer actually reads of an artifact, after its loader acted."""

    artifact: Artifact
    consumer: Consumer
    history: History
    graph: Graph | None = None
    meta_graph: MetaGraph | None = None
    kinds: list[NodeKind] = field(default_factory=list)
    check_graph_versions: bool = True
    drops_graph_defaults: bool = False
    policy: Policy = field(default_factory=Policy)

    @property
    def label(self) -> str:
        c = self.consumer
        release = f"TensorFlow {c.tensorflow}" if c.tensorflow else "a custom build"
        return f"{c.name} ({release}, GraphDef version {c.graph_def_version})"

    @property
    def producer_ops(self) -> dict[str, OpDef]:
        return self.meta_graph.producer_ops if self.meta_graph else {}


def select_meta_graph(meta_graphs: tuple[MetaGraph, ...]) -> MetaGraph | None:
    for meta_graph in meta_graphs:
        if SERVING_TAG in meta_graph.tags:
            return meta_graph
    return meta_graphs[0] if meta_graphs else None


def subject_for(artifact: Artifact, consumer: Consumer, history: History) -> Subject:
    subject = Subject(artifact, consumer, history)
    if artifact.format in ("savedmodel", "metagraph"):
        subject.meta_graph = select_meta_graph(artifact.meta_graphs)
        subject.graph = subject.meta_graph.graph if subject.meta_graph else None
        # The SavedModel loaders drop default-valued unknown attrs from graph nodes.
        subject.drops_graph_defaults = consumer.loader != Loader.GRAPH_IMPORT
        tf2_load = (
            consumer.loader == Loader.SAVED_MODEL_V2
            and subject.meta_graph is not None
            and subject.meta_graph.has_object_graph
        )
        if tf2_load:
            subject.check_graph_versions = False
    else:
        subject.graph = artifact.graph
        tf2_load = False
    if subject.graph is not None:
        subject.kinds = [k for k in subject.graph.kinds if not tf2_load or k.function is not None]
    return subject


# --- the checks -----------------------------------------------------------------------------


def check_graph_versions(s: Subject) -> Iterable[Finding]:
    if s.graph is None or s.graph.versions is None or not s.check_graph_versions:
        return []
    target = s.history.upgrade_target(s.graph.versions, s.consumer.graph_def_version)
    findings = check_versions(
        s.graph.versions,
        s.consumer.graph_def_version,
        s.consumer.graph_def_min_producer,
        consumer_label=s.label,
        upgrade_hint=f"Upgrade {s.consumer.name} to TensorFlow >= {target}." if target else "",
    )
    return findings + _forward_window(s, s.graph.versions)


def _forward_window(s: Subject, versions: VersionDef) -> list[Finding]:
    gap = versions.producer - s.consumer.graph_def_version
    if gap <= FORWARD_WINDOW_DAYS:
        return []
    written = s.history.producer_date(versions.producer)
    when = f", written around {written.isoformat()}" if written else ""
    return [
        warning(
            Code.FORWARD_WINDOW,
            f"Producer GraphDef version {versions.producer}{when} is {gap} versions (days) newer "
            f"than {s.label}; TensorFlow promises forward compatibility for "
            f"{FORWARD_WINDOW_DAYS} days only. Export with the consumer's release, or upgrade it.",
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
        consumer_label=s.label,
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


def _registry_missing(s: Subject) -> bool:
    return s.consumer.registry is None


def check_registry_available(s: Subject) -> Iterable[Finding]:
    if s.graph is None or not _registry_missing(s):
        return []
    return [
        warning(
            Code.REGISTRY_UNAVAILABLE,
            f"No op registry is known for {s.label}: only version numbers were checked. "
            "Record one with `tfcompat fleet dump-manifest` in that environment.",
        )
    ]


def check_ops(s: Subject) -> Iterable[Finding]:
    """Every op the consumer does not register, once per op."""
    if s.graph is None or s.consumer.registry is None:
        return []
    functions = set(s.graph.functions)
    seen: dict[str, str | None] = {}  # op -> the function it was first seen in (None: graph)
    findings = []
    for kind in sorted(s.kinds, key=lambda k: k.function is not None):
        op = kind.op
        if op in seen or op in functions or op in s.consumer.registry.ops:
            continue
        seen[op] = kind.function
        where = f"node {kind.example}" + (f" in function {kind.function}" if kind.function else "")
        introduced = s.history.op_introduced(op)
        last = s.history.op_last_release(op)
        if introduced is None:
            findings.append(
                error(
                    Code.OP_CUSTOM,
                    f"Op type not registered '{op}' ({where}) in {s.label}, nor in any known "
                    "TensorFlow release: it is a custom op. Load its op library in the consumer "
                    "(tf.load_op_library or the package that registers it) and record a manifest "
                    "of that build.",
                    op=op,
                )
            )
        elif s.consumer.tensorflow and last and _older(last, s.consumer.tensorflow):
            findings.append(
                error(
                    Code.OP_REMOVED,
                    f"Op type not registered '{op}' ({where}) in {s.label}: TensorFlow {last} was "
                    f"the last release to register it. Re-export the model without {op}, or keep "
                    f"the consumer at {last} or older.",
                    op=op,
                )
            )
        else:
            fix = f"op {op} is registered from TensorFlow {introduced}: upgrade the consumer "
            fix += f"to >= {introduced}, or re-export without {op}."
            findings.append(
                error(
                    Code.OP_NOT_REGISTERED,
                    f"Op type not registered '{op}' ({where}) in {s.label}; {fix}",
                    op=op,
                )
            )
    return [deferred_to_call(s, f, seen[f.op or ""]) for f in findings]


def _older(a: str, b: str) -> bool:
    from packaging.version import Version

    return Version(a) < Version(b)


def _deprecation_version(s: Subject) -> int | None:
    """The GraphDef version deprecations are judged at.

    tf.saved_model.load imports the graph into a graph of the running binary, so
    its own GraphDef version counts, not the producer's (seen with 2.4 loading a
    producer-12 graph using an op deprecated at 13)."""
    if s.consumer.loader == Loader.SAVED_MODEL_V2 and s.artifact.format == "savedmodel":
        return s.consumer.graph_def_version
    return s.graph.versions.producer if s.graph and s.graph.versions else None


def check_nodes(s: Subject) -> Iterable[Finding]:
    if s.graph is None or s.consumer.registry is None:
        return []
    graph_ctx = NodeContext(
        consumer_label=s.label,
        drops_producer_defaults=s.drops_graph_defaults,
        rejects_unknown_attrs=s.consumer.rejects_unknown_attrs,
        producer_version=_deprecation_version(s),
        stripped_default_attrs=bool(s.meta_graph and s.meta_graph.stripped_default_attrs),
    )
    # No loader drops default-valued attrs inside functions (measured: the v1 loader
    # loads such a model and the first call fails); see deferred_to_call.
    library_ctx = replace(graph_ctx, drops_producer_defaults=False)
    findings: list[Finding] = []
    reported: set[tuple[str, str | None, str]] = set()
    for kind in sorted(s.kinds, key=lambda k: k.function is not None):
        op = s.consumer.registry.ops.get(kind.op)
        if op is None:
            continue
        ctx = graph_ctx if kind.function is None else library_ctx
        for finding in check_node_kind(kind, op, s.producer_ops.get(kind.op), ctx):
            key = (str(finding.code), finding.op, finding.attr or "")
            if key in reported:
                continue  # one finding per (code, op, attr): kinds repeat the same cause
            reported.add(key)
            if finding.code in (Code.ATTR_UNKNOWN, Code.ATTR_IGNORED, Code.ATTR_NOT_ALLOWED):
                finding = _with_attr_history(s, finding)
            findings.append(deferred_to_call(s, finding, kind.function))
    return findings


def _with_attr_history(s: Subject, finding: Finding) -> Finding:
    if finding.op is None or finding.attr is None:
        return finding
    introduced = s.history.attr_introduced(finding.op, finding.attr)
    if introduced is None or finding.code == Code.ATTR_NOT_ALLOWED:
        return finding
    return Finding(
        finding.code,
        finding.severity,
        f"{finding.message} (attr '{finding.attr}' of {finding.op} exists from "
        f"TensorFlow {introduced})",
        finding.op,
        finding.attr,
    )


def check_policy(s: Subject) -> Iterable[Finding]:
    versions = s.graph.versions if s.graph is not None else None
    return policy_findings(s.consumer, versions, s.policy)


def check_edges(s: Subject) -> Iterable[Finding]:
    """Types along every top-level edge, computed under the consumer's OpDefs."""
    if s.graph is None or s.consumer.registry is None or not s.kinds:
        return []
    return edge_findings(s.graph, s.kinds, s.consumer.registry.ops, s.label)


CHECKS: dict[str, Callable[[Subject], Iterable[Finding]]] = {
    "graph-versions": check_graph_versions,
    "checkpoint": check_checkpoint,
    "registry": check_registry_available,
    "ops": check_ops,
    "nodes": check_nodes,
    "edges": check_edges,
    "policy": check_policy,
}


ATTR_CODES = frozenset(
    {
        Code.ATTR_UNKNOWN,
        Code.ATTR_MISSING,
        Code.ATTR_NOT_ALLOWED,
        Code.ATTR_TYPE,
        Code.ATTR_BELOW_MINIMUM,
    }
)


def deferred_to_call(s: Subject, finding: Finding, function: str | None) -> Finding:
    """A function-body error the consumer meets only when the function first runs.

    1.13 checks nothing in function bodies at load; every release's tf.compat.v1
    loader and graph import check their ops at load (1.14 on) but their attrs only
    when a function is instantiated; tf.saved_model.load instantiates at load."""
    if function is None or finding.severity != Severity.ERROR:
        return finding
    later = not s.consumer.validates_library or (
        finding.code in ATTR_CODES and s.consumer.loader != Loader.SAVED_MODEL_V2
    )
    if not later:
        return finding
    return Finding(
        finding.code,
        Severity.WARNING,
        f"{finding.message} The model loads ({s.consumer.loader} checks this function body "
        f"only when it first runs): calling {function} will fail.",
        finding.op,
        finding.attr,
    )


def check_artifact(
    artifact: Artifact,
    consumer: Consumer,
    history: History | None = None,
    policy: Policy | None = None,
) -> Verdict:
    """The consumer's verdict: every check's findings, errors first."""
    subject = subject_for(artifact, consumer, history or NoHistory())
    if policy is not None:
        subject.policy = policy
    findings: list[Finding] = []
    for check in CHECKS.values():
        findings.extend(check(subject))
    findings.sort(key=lambda f: f.severity != Severity.ERROR)
    loads = not any(f.severity == Severity.ERROR for f in findings)
    return Verdict(consumer, loads, tuple(findings))


def status_of(verdicts: Iterable[Verdict]) -> str:
    """'incompatible' if a consumer cannot load it, 'at-risk' on warnings, else 'compatible'."""
    verdicts = list(verdicts)
    if any(not v.loads for v in verdicts):
        return "incompatible"
    if any(v.findings for v in verdicts):
        return "at-risk"
    return "compatible"
