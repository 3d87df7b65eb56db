"""When and in which order TensorFlow meets a consumer's errors.

`place` decides when a function-body error bites for the consumer's loader (at load,
on the first request, or only when someone calls the function); `phases` is the order
of the checks' errors as each loader meets them, measured on the fixture matrices."""

from __future__ import annotations

from dataclasses import replace

from worker.compat.functions import call_closure
from worker.compat.subject import Subject
from worker.model.consumer import Loader
from worker.model.findings import Finding, Severity, Stage


def init_functions(s: Subject) -> frozenset[str]:
    """The functions the loader's init run calls (a TF2 export's table and asset
    initializers, under `__saved_model_init_op`): the v1 loader and `tf.saved_model.load`
    run it at load, so an error deferred to a function's first run bites there. A graph
    import runs no init."""
    meta_graph, scope = s.meta_graph, s.scope
    if s.consumer.loader == Loader.GRAPH_IMPORT or meta_graph is None or scope is None:
        return frozenset()
    plan = meta_graph.serve_plan
    if plan is None or plan.init is None:
        return frozenset()
    called = [n for k in plan.init.kinds for n in scope.top_calls.get(k, frozenset())]
    return frozenset(call_closure(called, scope.calls))


def place(s: Subject, finding: Finding, function: str | None, *, checked_at_load: bool) -> Finding:
    """When a function-body error bites, as the consumer's loader does it.

    1.13 checks nothing in function bodies at load; the v1 loader and a graph
    import check attrs only when a function is instantiated. A deferred error
    bites at load in the saver's restore function and in the functions the init run
    calls (the loader runs both), on the first request in a function a request runs,
    and otherwise only when someone calls that function (the saver's save function):
    information."""
    if function is None or finding.severity != Severity.ERROR:
        return finding
    if checked_at_load and s.consumer.validates_library:
        return finding
    if s.scope is None or function in s.scope.restore or function in init_functions(s):
        return finding
    if function in s.scope.request:
        return replace(
            finding,
            message=f"{finding.message} The model loads ({s.loader} checks this function body "
            f"only when it first runs): every request that runs {function} fails.",
            stage=Stage.REQUEST,
        )
    return replace(
        finding,
        severity=Severity.INFO,
        message=f"{finding.message} The model loads and serves ({s.loader} checks this "
        f"function body only when it runs, and no request runs {function}); calling it fails.",
    )


# The order in which TensorFlow meets load errors, by loader (measured: the first
# error of every failing row of the fixture matrices). The graph import and the
# v1 loader validate the top-level graph first, where an unknown attr on a
# variable (created before the model's ops) comes before an unregistered op;
# 1.13/1.14's v1 loader looks up the stripped op list before anything;
# tf.saved_model.load instantiates the function library before the graph.
_GRAPH_FIRST = (
    "saved-model-tags", "graph-versions", "checkpoint", "registry", "unknown-attrs", "ops",
    "data-types", "nodes", "edges", "output-shapes", "function-ops", "function-nodes",
    "function-edges", "objects", "serving", "xla",
    "devices", "runs", "kernel-changes", "kernel-nondeterminism",
    "kernels-unmeasured", "keras", "unsafe", "policy",
)  # fmt: skip
_OP_LIST_FIRST = (
    "saved-model-tags", "graph-versions", "checkpoint", "registry", "ops", "unknown-attrs",
    "data-types", "nodes", "edges", "output-shapes", "function-ops", "function-nodes",
    "function-edges", "objects", "serving", "xla",
    "devices", "runs", "kernel-changes", "kernel-nondeterminism",
    "kernels-unmeasured", "keras", "unsafe", "policy",
)  # fmt: skip
_FUNCTIONS_FIRST = (
    "saved-model-tags", "graph-versions", "checkpoint", "registry", "data-types",
    "function-ops", "function-nodes", "function-edges", "unknown-attrs", "ops", "nodes", "edges",
    "output-shapes", "objects",
    "serving", "xla", "devices", "runs", "kernel-changes", "kernel-nondeterminism",
    "kernels-unmeasured", "keras",
    "unsafe", "policy",
)  # fmt: skip


def phases(s: Subject) -> tuple[str, ...]:
    if s.instantiates_at_load:
        return _FUNCTIONS_FIRST
    if s.consumer.looks_up_op_list_first and s.is_saved_model and s.loader == "saved-model-v1":
        return _OP_LIST_FIRST
    return _GRAPH_FIRST


def severity_rank(finding: Finding) -> int:
    if finding.severity == Severity.ERROR:
        return 0 if finding.stage == Stage.LOAD else 1
    return 2 if finding.severity == Severity.WARNING else 3


# The checks TensorFlow's graph import makes node by node (GraphConstructor::Convert takes
# the nodes in topological order, ModifyNodeDefForImport looks the op up, then validates
# the NodeDef's attrs against it): which of those errors comes first follows the nodes,
# not the check. Measured: 1.15 meets ParseExampleV2 at a TFX export's input before
# SparseSegmentSum's Tsegmentids attr deeper in it, and a variable's unknown attr (made
# before the model's ops) before an unknown op.
_PER_NODE = {"unknown-attrs", "ops"}


def node_position(s: Subject, phase: str, finding: Finding) -> tuple[int, int]:
    """(the rank the per-node phases share, the first top-level node of the finding's op
    in the GraphDef, which the topological order approximates) under a loader that
    imports the graph before anything else; else the phase's own rank and 0."""
    order = phases(s)
    graph = s.graph
    if order is not _GRAPH_FIRST or phase not in _PER_NODE or graph is None or not finding.op:
        return order.index(phase), 0
    first = next(
        (i for i, k in enumerate(graph.kinds) if k.function is None and k.op == finding.op),
        len(graph.kinds),
    )
    return min(order.index(p) for p in _PER_NODE), first
