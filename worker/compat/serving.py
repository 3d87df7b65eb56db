"""What the first request needs beyond a successful load (`serves`, not only `loads`).

From the graph alone, as the v1 loader (TF Serving's) and `tf.saved_model.load`
run a model:
- the loader runs the saver's restore (over `variables/`) and the init op; a
  request runs the serving functions the graph calls. Every variable a request
  reads must be one the restore fills. A Keras 3 model held by a `tf.Module`
  and saved with `tf.saved_model.save` breaks this: its serving function reads
  the Keras variables (`out/bias`), the restore function fills the module's own
  copies (`Variable_1`), and every request fails "Could not find variable"
  (tensorflow/tensorflow#72963, keras-team/keras#19274; the fixture
  `keras3_module_save` is `oOo` on 2.12-2.21). `tf.saved_model.load` restores
  through the object graph and serves it.
- some ops load and fail when they run: `OP_RUNS_ONLY_WITH_CUDA`, and
  checkpoint-file ops on a request path (`CHECKPOINT_FILE_OPS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from worker.compat.functions import scope_of
from worker.compat.memo import kinds_in_scope, ops_in, per_object
from worker.compat.subject import Subject
from worker.model.artifact import Graph, NodeKind
from worker.model.findings import Code, Finding, Fix, FixKind, SeenOnly, Stage, error


@dataclass(frozen=True)
class FailingOp:
    """An op that loads and fails when a request runs it, and the one case it was seen in
    (no tool lists such ops per release: the rows are seen-only)."""

    op: str
    why: str
    evidence: SeenOnly


# Ops that load in a CPU build and fail on the first request that runs them
# (measured: 2.18's `new_op` and `function_op` use CheckPinned; they load in
# 2.18-2.21 and every run fails "to check pinnedness, must be built with
# `--config=cuda`").
OP_RUNS_ONLY_WITH_CUDA: dict[str, FailingOp] = {
    "CheckPinned": FailingOp(
        "CheckPinned",
        "to check pinnedness, TensorFlow must be built with --config=cuda",
        SeenOnly("tests/fixtures/tf-real tf2.18/new_op and tf2.18/function_op"),
    ),
}

# Ops that touch checkpoint files: in the saver's own functions they are what
# saving does; on a request path they merge (and delete) files named in the graph
# on every request (measured: 2.11's `function_attr_default_unstripped` holds a
# MergeV2Checkpoints in the served function; every run fails, 2.5 to 2.21).
CHECKPOINT_FILE_OPS: dict[str, FailingOp] = {
    "MergeV2Checkpoints": FailingOp(
        "MergeV2Checkpoints",
        "it merges and deletes checkpoint files named in the graph",
        SeenOnly("tests/fixtures/tf-real tf2.11/function_attr_default_unstripped"),
    ),
}

VARIABLE_OPS = frozenset({"VarHandleOp"})
_FAILING_OPS = frozenset(OP_RUNS_ONLY_WITH_CUDA) | frozenset(CHECKPOINT_FILE_OPS)


def _shared_name(kind: NodeKind) -> str:
    return kind.text_attr("shared_name") or kind.example


def request_kinds(s: Subject) -> list[NodeKind]:
    """The kinds a request can run: the top-level graph (unless tf.saved_model.load of a
    TF2 SavedModel, which serves functions only) and the request functions' bodies."""
    if s.graph is None or s.scope is None:
        return []
    return kinds_in_scope(s.graph, s.scope.request, not s.tf2_load)


def unfilled_variables(s: Subject) -> list[Finding]:
    """Variables a request reads that the SavedModel's restore function never fills."""
    graph, scope = s.graph, s.scope
    if graph is None or scope is None or not s.is_saved_model or s.tf2_load or not scope.restore:
        return []
    if s.meta_graph is not None and s.meta_graph.serve_plan is not None:
        return []  # metadata read with a serve plan: worker.compat.runs judges every resource
    # Restore and request functions are the same whatever the loader validates: once a graph.
    return _unfilled(graph)


@per_object
def _unfilled(graph: Graph) -> list[Finding]:
    scope = scope_of(graph)
    kinds = graph.kinds
    role: dict[int, str] = {}
    for index, called in scope.top_calls.items():
        if called & scope.restore:
            role[index] = "restore"
        elif called & scope.request:
            role[index] = "request"
    restored: set[int] = set()
    read: set[int] = set()
    for edge in graph.edges:
        src = kinds[edge.src]
        if src.function is not None or src.op not in VARIABLE_OPS:
            continue
        where = role.get(edge.dst)
        if where == "restore":
            restored.add(edge.src)
        elif where == "request":
            read.add(edge.src)
    missing = sorted(_shared_name(kinds[i]) for i in read - restored)
    if not missing or not restored:
        return []
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    filled = ", ".join(sorted(_shared_name(kinds[i]) for i in restored)[:4])
    return [
        error(
            Code.RESOURCE_UNINITIALIZED,
            f"The serving function reads variable(s) {shown}, which the SavedModel's restore "
            f"function never fills (it restores {filled}): the model loads and every request "
            "fails with 'Could not find variable'. This is what a Keras 3 model wrapped in a "
            "tf.Module and saved with tf.saved_model.save looks like; tf.saved_model.load "
            "serves it.",
            op="VarHandleOp",
            fix=Fix(FixKind.USE_MODEL_EXPORT, loader="saved-model-v2"),
            stage=Stage.REQUEST,
        )
    ]


def failing_kernels(s: Subject) -> list[Finding]:
    """Ops on the request path that load and fail when they run."""
    if s.graph is None or s.scope is None:
        return []
    if ops_in(s.graph, s.scope.request, not s.tf2_load).isdisjoint(_FAILING_OPS):
        return []  # no such op on a request path (the saver's own are not)
    registry = s.consumer.registry
    findings: list[Finding] = []
    seen: set[str] = set()
    for kind in [k for k in request_kinds(s) if k.op in _FAILING_OPS]:
        if kind.op in seen or (registry is not None and kind.op not in registry.ops):
            continue
        where = kind.where
        if kind.op in OP_RUNS_ONLY_WITH_CUDA:
            seen.add(kind.op)
            findings.append(
                error(
                    Code.OP_NEEDS_CUDA,
                    f"{kind.op} ({where}) loads, and every request that runs it fails on a "
                    f"build without CUDA: {OP_RUNS_ONLY_WITH_CUDA[kind.op].why}.",
                    op=kind.op,
                    fix=Fix(FixKind.USE_CUDA_BUILD, op=kind.op),
                    stage=Stage.REQUEST,
                ).seen_only(OP_RUNS_ONLY_WITH_CUDA[kind.op].evidence)
            )
        elif kind.op in CHECKPOINT_FILE_OPS and kind.function is not None:
            seen.add(kind.op)
            findings.append(
                error(
                    Code.REQUEST_CHECKPOINT_IO,
                    f"{kind.op} ({where}) runs on every request: it merges and deletes "
                    "checkpoint files named in the graph, and the request fails where they "
                    "do not exist.",
                    op=kind.op,
                    fix=Fix(FixKind.REEXPORT_WITHOUT_OP, op=kind.op),
                    stage=Stage.REQUEST,
                ).seen_only(CHECKPOINT_FILE_OPS[kind.op].evidence)
            )
    return findings


def serving_findings(s: Subject) -> Iterable[Finding]:
    return [*unfilled_variables(s), *failing_kernels(s)]
