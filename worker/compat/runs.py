"""The loader's steps and the first request, judged from the MetaGraph's serve plan.

What each loader runs, from TensorFlow's code (the plan itself is data:
`worker.model.serving`, built by `worker.formats.serve_plan`):
- **the v1 loader** (`loader.cc` LoadSavedModelInternal; TF Serving): find the
  MetaGraph whose tag set is exactly {serve} → import its graph → the restore
  run (only when `variables/variables.index` exists) → the init run (the init
  op, with the asset files fed). A request runs one signature;
- **`tf.saved_model.load` of a TF1 SavedModel** (`load_v1_in_v2.py`): without
  `tags=` it needs a single MetaGraph; it runs the same restore, then the init op
  or, without one, `Scaffold.default_local_init_op` (local variables' and tables'
  initializers), and prunes every signature into a function at load, which fails
  when a signature's outputs need a placeholder that is not one of its inputs;
- **a graph import of a SavedModel's graph** (how the fixture matrix runs it):
  the restore, no init, then the request; the import is the load, so what the
  restore run fails fails before the first answer (Stage.REQUEST).

A resource is filled by a run that executes a node assigning or initialising
it (`Assign`, `AssignVariableOp`, `InitializeTable*`, `LookupTableImport*`,
`MakeIterator`), or calls a function that does; any other use reads it. A
read by a run before any run filled the resource fails: "Attempting to use
uninitialized value", "Error while reading resource variable", "Table not
initialized", "GetNext() failed because the iterator has not been initialized".
"""

from __future__ import annotations

from dataclasses import dataclass

from worker.compat.functions import call_closure, callees, lowered_functions
from worker.compat.kernels import kernel_gap
from worker.compat.memo import ObjectTable, identity
from worker.compat.own_files import empty_table_findings, own_file_findings
from worker.compat.subject import SERVING_TAG, Subject, serving_meta_graph
from worker.model.artifact import Graph, MetaGraph
from worker.model.consumer import Loader
from worker.model.findings import Code, Finding, Fix, FixKind, Stage, error
from worker.model.serving import DEFAULT_SIGNATURE, INIT_OP_SIGNATURE, Run, ServePlan

# Ops that fill the resource they take at the given input (their OpDefs: MakeIterator
# takes the dataset first, the iterator second).
FILL_INPUTS: dict[str, int] = {
    "Assign": 0,
    "AssignVariableOp": 0,
    "InitializeTable": 0,
    "InitializeTableV2": 0,
    "InitializeTableFromTextFile": 0,
    "InitializeTableFromTextFileV2": 0,
    "InitializeTableFromDataset": 0,
    "LookupTableImport": 0,
    "LookupTableImportV2": 0,
    "MakeIterator": 1,
    "MultiDeviceIteratorInit": 1,
    "DeserializeIterator": 0,
}
FILL_OPS = frozenset(FILL_INPUTS)
# Uses that neither fill nor read: they ask whether it is filled, or drop it.
NEUTRAL_OPS = frozenset(
    {"VarIsInitializedOp", "IsVariableInitialized", "DestroyResourceOp", "NoOp"}
)
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})
# Ops that open the file a fed asset path names (an absent asset: "No such file").
ASSET_READING_OPS = frozenset(
    {
        "InitializeTableFromTextFile",
        "InitializeTableFromTextFileV2",
        "ReadFile",
        "TextLineDataset",
        "TFRecordDataset",
        "FixedLengthRecordDataset",
    }
)

_FAILS_WITH = {
    "variable": "'Attempting to use uninitialized value' / 'Error while reading resource variable'",
    "table": "'Table not initialized'",
    "iterator": "'GetNext() failed because the iterator has not been initialized'",
}


def applies(s: Subject) -> bool:
    """The plan speaks for SavedModels read by the v1 loader, a graph import, or
    `tf.saved_model.load` of a TF1 SavedModel (a TF2 one restores its object graph)."""
    return (
        s.is_saved_model
        and s.meta_graph is not None
        and s.meta_graph.serve_plan is not None
        and not s.tf2_load
    )


def tag_findings(s: Subject) -> list[Finding]:
    """The MetaGraph the loader's tag set selects must exist (reader.cc FindMetaGraphDef
    compares tag sets for equality; load_v1_in_v2 needs `tags=` with several)."""
    artifact = s.artifact
    if artifact.format != "savedmodel" or not artifact.meta_graphs:
        return []
    tag_sets = "; ".join("{" + ", ".join(m.tags) + "}" for m in artifact.meta_graphs)
    loader = s.consumer.loader
    if loader == Loader.SAVED_MODEL_V1 and serving_meta_graph(artifact.meta_graphs) is None:
        return [
            error(
                Code.SAVED_MODEL_TAGS,
                f"Could not find meta graph def matching supplied tags: {{ {SERVING_TAG} }}: "
                f"the SavedModel's MetaGraphs are tagged {tag_sets}, and the v1 loader (TF "
                f"Serving's) loads only a MetaGraph whose tag set is exactly {{{SERVING_TAG}}}.",
                fix=Fix(FixKind.EXPORT_SERVE_TAG),
            )
        ]
    if loader == Loader.SAVED_MODEL_V2 and len(artifact.meta_graphs) > 1:
        return [
            error(
                Code.SAVED_MODEL_TAGS,
                f"tf.saved_model.load needs a tags= argument: the SavedModel holds "
                f"{len(artifact.meta_graphs)} MetaGraphs ({tag_sets}).",
                fix=Fix(FixKind.LOAD_WITH_TAGS),
            )
        ]
    return []


@dataclass
class _Effects:
    fills: set[int]
    reads: dict[int, str]  # resource -> the op that reads it
    ops: set[str]  # every op the run executes, function bodies included
    kinds: list[int]  # every kind it executes: top-level, then the bodies it calls


def _effects(s: Subject, graph: Graph, run: Run) -> _Effects:
    scope = s.scope
    functions = frozenset(graph.functions)
    kinds = graph.kinds
    ops: set[str] = set()
    called: set[str] = set()
    for index in run.kinds:
        kind = kinds[index]
        ops.add(kind.op)
        if scope is not None:
            called |= scope.top_calls.get(index, frozenset())
    closure = call_closure(called, scope.calls if scope is not None else {})
    for name in closure:
        ops |= scope.holds.get(name, frozenset()) if scope is not None else set()
    executed = list(run.kinds)
    if closure:
        executed += [i for i, k in enumerate(kinds) if k.function in closure]
    fills: set[int] = set()
    reads: dict[int, str] = {}
    for use in run.uses:
        kind = kinds[use.kind]
        if kind.op in NEUTRAL_OPS:
            continue
        if FILL_INPUTS.get(kind.op) == use.input:
            fills.add(use.resource)
            continue
        targets = callees(kind, functions)
        if targets and scope is not None:
            body: set[str] = set()
            for name in call_closure(targets, scope.calls):
                body |= scope.holds.get(name, frozenset())
            if body & FILL_OPS:
                fills.add(use.resource)
                continue
        reads.setdefault(use.resource, kind.op)
    return _Effects(fills, reads, ops, executed)


def _no_default_signature(names: list[str]) -> Finding:
    """A request that names no signature runs `serving_default` (TF Serving's default,
    `model.signatures["serving_default"]`); without it there is no default request."""
    others = ", ".join(sorted(names)[:6])
    return error(
        Code.REQUEST_NO_SIGNATURE,
        "The model loads and has no serving_default signature: a request that names no "
        + (
            f"signature fails (a client naming one of {others} is served)."
            if names
            else "signature fails, and it has no signature at all."
        ),
        fix=Fix(FixKind.ADD_SIGNATURE),
        stage=Stage.REQUEST,
    )


def tf2_own_file_findings(s: Subject) -> list[Finding]:
    """`tf.saved_model.load` of a TF2 SavedModel: every restored resource's `_initialize`
    runs at load (`load.py`; the same functions the `__saved_model_init_op` calls, with
    the assets restored as `Asset`s of the shipped paths), then the request calls
    `serving_default`."""
    meta_graph = s.meta_graph
    if not s.tf2_load or meta_graph is None or meta_graph.serve_plan is None:
        return []
    plan = meta_graph.serve_plan
    present = s.artifact.asset_files
    findings: list[Finding] = []
    if plan.init is not None:
        findings += own_file_findings(plan.init, present, Stage.LOAD)
    request = plan.request(DEFAULT_SIGNATURE)
    if request is not None:
        findings += own_file_findings(request, present, Stage.REQUEST)
    return findings


def tf2_signature_findings(s: Subject) -> list[Finding]:
    """`tf.saved_model.load` of a TF2 SavedModel: the request calls serving_default."""
    meta_graph = s.meta_graph
    if not s.tf2_load or meta_graph is None:
        return []
    names = [n for n in meta_graph.signatures if n != INIT_OP_SIGNATURE]
    return [] if DEFAULT_SIGNATURE in names else [_no_default_signature(names)]


def tf2_request_kernel_findings(s: Subject) -> list[Finding]:
    """`tf.saved_model.load` of a TF2 SavedModel: a function's kernels are looked up when
    a call runs it (its instantiation at load only builds the graph), so an op with no
    kernel in what `serving_default` calls fails the request, not the load. Measured
    (tests/fixtures/tf-bites): RFFTND in the serving function loads and fails the
    request in 2.15 and 2.21."""
    meta_graph, graph = s.meta_graph, s.graph
    if not s.tf2_load or meta_graph is None or meta_graph.serve_plan is None or graph is None:
        return []
    request = meta_graph.serve_plan.request(DEFAULT_SIGNATURE)
    if request is None:
        return []
    return _kernel_findings(s, request, _effects(s, graph, request).kinds, Stage.REQUEST)


def graph_def_kernel_findings(s: Subject) -> list[Finding]:
    """A bare GraphDef under a graph import: the import looks up no kernel; the first run
    (the request) places the whole graph (`_session_places_graph`) and instantiates the
    functions its calls reach. Measured (tests/fixtures/tf-bites): a GraphDef holding
    bfloat16 Erfc on the path, in an unfetched node or in a called function imports in
    2.4 and 2.8 and fails the request."""
    graph = s.graph
    if s.is_saved_model or graph is None or s.consumer.loader != Loader.GRAPH_IMPORT:
        return []
    reached = s.scope.reachable if s.scope is not None else frozenset()
    kinds = [i for i, k in enumerate(graph.kinds) if k.function is None or k.function in reached]
    request = Run(role="request", name=DEFAULT_SIGNATURE, kinds=())
    return _kernel_findings(s, request, kinds, Stage.REQUEST, whole_graph=True)


_RUNS: ObjectTable[tuple[object, ...], tuple[Finding, ...]] = ObjectTable("run_findings")


def run_findings(s: Subject) -> list[Finding]:
    """Every step the consumer's loader runs, then the first request (`serving_default`,
    else the first signature), judged in TensorFlow's order.

    Remembered on the artifact, per what the findings read of the consumer (its loader, op
    registry and kernel table by identity, GPU, lifted reads): an upload is judged
    against 79 releases and a fleet change against every model, and most of them share
    those with many others."""
    if not applies(s):
        return (
            tf2_own_file_findings(s)
            + tf2_signature_findings(s)
            + tf2_request_kernel_findings(s)
            + graph_def_kernel_findings(s)
        )
    registry = s.consumer.registry
    key = (
        s.consumer.loader,
        identity(registry.ops) if registry is not None else None,
        identity(registry.kernels) if registry is not None else None,
        s.consumer.gpu,
        s.consumer.lifted_reads_empty,
    )
    memo = _RUNS.of(s.artifact)
    found = memo.get(key)
    if found is None:
        found = memo[key] = tuple(_run_findings(s))
    return list(found)


def _run_findings(s: Subject) -> list[Finding]:
    meta_graph, graph = s.meta_graph, s.graph
    assert meta_graph is not None and meta_graph.serve_plan is not None and graph is not None
    plan = meta_graph.serve_plan
    loader = s.consumer.loader
    findings: list[Finding] = []
    steps: list[Run] = []
    restores = plan.restore is not None and not s.artifact.restore_skipped
    if plan.restore is not None and restores:
        steps.append(plan.restore)
    if loader != Loader.GRAPH_IMPORT:
        if plan.init_error:
            findings.append(
                error(
                    Code.INIT_FAILED,
                    f"Expected exactly one main op: {plan.init_error}; the loader fails.",
                    fix=Fix(FixKind.ADD_INIT_OP),
                )
            )
        if plan.init is not None:
            steps.append(plan.init)
        elif loader == Loader.SAVED_MODEL_V2 and plan.default_init is not None:
            steps.append(plan.default_init)
    request = plan.request(DEFAULT_SIGNATURE)
    first = steps[0] if steps else request
    # A graph import loads when import_graph_def returns: the restore is the caller's
    # first run, and what fails there fails before the first answer, not the load.
    step_stage = Stage.REQUEST if loader == Loader.GRAPH_IMPORT else Stage.LOAD
    if first is not None and _session_places_graph(s):
        findings += _graph_kernel_findings(s, graph, first, step_stage if steps else Stage.REQUEST)
    filled: set[int] = set()
    for run in steps:
        effects = _effects(s, graph, run)
        findings += _step_findings(s, plan, run, effects, filled, restores, step_stage)
        filled |= effects.fills
    tf1_in_v2 = loader == Loader.SAVED_MODEL_V2
    if tf1_in_v2:
        # load_v1_in_v2 prunes every signature at load: a placeholder no signature input
        # feeds fails the load, whichever signature it is, and so does a tensor two of its
        # inputs name.
        for run in plan.requests:
            findings += _feed_findings(run, Stage.LOAD) + _repeated_input_findings(run)
    if request is None:
        findings.append(_no_default_signature([r.name for r in plan.requests]))
        return findings
    effects = _effects(s, graph, request)
    findings += _step_findings(
        s, plan, request, effects, filled, restores, Stage.REQUEST, feeds=not tf1_in_v2
    )
    checkpoint = s.artifact.checkpoint
    findings += empty_table_findings(
        steps, request, checkpoint.entries if checkpoint is not None else None, s.consumer.gpu
    )
    return findings


def _where(run: Run) -> str:
    if run.role == "request":
        return f"the {run.name} request"
    return f"the {run.role} run ({run.name})"


def _step_findings(
    s: Subject,
    plan: ServePlan,
    run: Run,
    effects: _Effects,
    filled: set[int],
    restores: bool,
    stage: Stage,
    *,
    feeds: bool = True,
) -> list[Finding]:
    findings: list[Finding] = []
    code = Code.INIT_FAILED if run.role == "init" else Code.RESTORE_FAILED
    if run.missing:
        names = ", ".join(run.missing[:4])
        findings.append(
            error(
                code if run.role != "request" else Code.REQUEST_FEED,
                f"{_where(run).capitalize()} names {names}, which the graph does not hold: "
                "the run fails.",
                stage=stage,
            )
        )
    if feeds:
        findings += _feed_findings(run, stage)
    findings += own_file_findings(run, s.artifact.asset_files, stage)
    if not run.opens:
        findings += _asset_findings(s, plan, run, effects, stage)
    python = sorted(effects.ops & PYTHON_OPS)
    if python:
        findings.append(
            error(
                Code.REQUEST_PYTHON,
                f"{_where(run).capitalize()} runs {', '.join(python)}: a Python callable "
                "registered only in the process that built the graph. TF Serving and any "
                "fresh process fail it ('could not find the Python function').",
                op=python[0],
                fix=Fix(FixKind.REEXPORT_WITHOUT_OP, op=python[0]),
                stage=stage,
            )
        )
    findings += _kernel_findings(s, run, effects.kinds, stage)
    unfilled = sorted(r for r in effects.reads if r not in filled and r not in effects.fills)
    if unfilled:
        lifted = (
            s.consumer.loader == Loader.SAVED_MODEL_V2
            and s.consumer.lifted_reads_empty
            and all(plan.resources[r].kind == "variable" for r in unfilled)
        )
        # tf.saved_model.load lifts variables: from 2.8 a read of one nothing filled gives
        # an empty tensor instead of an error, so an init run that copies it loads, and
        # the requests then compute with nothing (seen: "Incompatible shapes: [0] vs. [3]")
        when = Stage.REQUEST if lifted else stage
        findings.append(_unfilled(s, plan, run, unfilled, effects, restores, when))
    return findings


def _session_places_graph(s: Subject) -> bool:
    """A Session (the v1 loader, a graph import) places every node of the graph at its
    first run, whether that run needs it or not (GraphOptions.place_pruned_graph is off
    by default), after lowering `If`/`While`/`Case` into it (`lowered_functions`): a
    node with no kernel there fails that run. A plain function call's body is placed
    when a run executes the call. Measured: 2.4 and 2.5 fail the restore of a model
    whose unused branch holds bfloat16 Erf (a `StatelessIf` branch from 2.12 on); 2.21
    fails a run that does not fetch a KthOrderStatistic node; 2.8 fails the restore of
    a graph whose unfetched node is bfloat16 Erfc (tests/fixtures/tf-bites).
    tf.saved_model.load prunes first."""
    return s.consumer.loader != Loader.SAVED_MODEL_V2


def _placed_with_graph(graph: Graph) -> list[int]:
    """The kinds a Session places at its first run: the graph's own nodes and the
    bodies its control flow is lowered from."""
    lowered = lowered_functions(graph)
    return [i for i, k in enumerate(graph.kinds) if k.function is None or k.function in lowered]


def _graph_kernel_findings(s: Subject, graph: Graph, first: Run, stage: Stage) -> list[Finding]:
    return _kernel_findings(s, first, _placed_with_graph(graph), stage, whole_graph=True)


def _kernel_findings(
    s: Subject, run: Run, kinds: list[int], stage: Stage, *, whole_graph: bool = False
) -> list[Finding]:
    """Each op among `kinds` that the consumer registers and has no kernel for (the
    first kind of each op; unregistered ops are the op checks' to report)."""
    registry = s.consumer.registry
    graph = s.graph
    if registry is None or registry.kernels is None or graph is None:
        return []
    functions = set(graph.functions)
    findings: list[Finding] = []
    seen: set[str] = set()
    placed = (
        set(_placed_with_graph(graph)) if _session_places_graph(s) and not whole_graph else set()
    )
    for index in kinds:
        kind = graph.kinds[index]
        if kind.op in seen or kind.op in functions or kind.op not in registry.ops:
            continue
        if index in placed:
            continue  # placed with the whole graph at the first run
        gap = kernel_gap(kind, registry.ops.get(kind.op), registry.kernels, s.consumer.gpu)
        if gap is None:
            continue
        seen.add(kind.op)
        where = kind.where
        outcome = "every request fails" if stage == Stage.REQUEST else "the load fails"
        placement = (
            f"placed with the whole graph at {_where(run)}, whether a request needs it or not"
            if whole_graph
            else f"run by {_where(run)}"
        )
        kind_of_fix = FixKind.USE_GPU_BUILD if gap.gpu_only else FixKind.REEXPORT_WITHOUT_OP
        findings.append(
            error(
                Code.KERNEL_MISSING,
                f"No OpKernel was registered to support Op '{kind.op}' ({where}, {placement}): "
                f"{gap.reason}. {outcome.capitalize()}.",
                op=kind.op,
                fix=Fix(kind_of_fix, op=kind.op),
                stage=stage,
            )
        )
    return findings


def _asset_findings(
    s: Subject, plan: ServePlan, run: Run, effects: _Effects, stage: Stage
) -> list[Finding]:
    """An asset the MetaGraph names that assets/ lacks fails the run that opens it (the
    loader feeds its path whether the file exists or not). The coarse form, for plans
    read before runs recorded which asset each op opens (`Run.opens`)."""
    present = s.artifact.asset_files
    if present is None or not plan.assets or run.role == "request":
        return []
    missing = [a for a in plan.assets if a not in present]
    opens = sorted(effects.ops & ASSET_READING_OPS)
    if not missing or not opens:
        return []
    return [
        error(
            Code.INIT_FAILED,
            f"{_where(run).capitalize()} runs {opens[0]} on the asset files the loader feeds, "
            f"and assets/ lacks {', '.join(missing[:4])}: the load fails ('No such file or "
            "directory').",
            op=opens[0],
            fix=Fix(FixKind.SHIP_ASSETS),
            stage=stage,
        )
    ]


def _feed_findings(run: Run, stage: Stage) -> list[Finding]:
    if not run.unfed:
        return []
    more = len(run.unfed) - 4
    names = ", ".join(run.unfed[:4]) + (f" and {more} more" if more > 0 else "")
    if run.role == "request":
        text = (
            f"Signature {run.name}'s outputs need placeholder(s) {names}, which are not among "
            "its inputs: "
            + (
                "every request fails with 'You must feed a value for placeholder tensor'."
                if stage == Stage.REQUEST
                else "tf.saved_model.load fails ('A SavedModel signature needs an input for "
                "each placeholder the signature's outputs use')."
            )
        )
        fix = Fix(FixKind.FEED_PLACEHOLDER)
        return [error(Code.REQUEST_FEED, text, op="Placeholder", fix=fix, stage=stage)]
    code = Code.INIT_FAILED if run.role == "init" else Code.RESTORE_FAILED
    return [
        error(
            code,
            f"{_where(run).capitalize()} needs placeholder(s) {names}, which the loader does "
            "not feed (it feeds only the asset files and the variables path): the load fails.",
            op="Placeholder",
            stage=stage,
        )
    ]


def _repeated_input_findings(run: Run) -> list[Finding]:
    """tf.saved_model.load of a TF1 SavedModel prunes each signature into a function whose
    inputs are the signature's input tensors (`load_v1_in_v2._extract_signatures`,
    `WrappedFunction.prune`); TF_GraphToFunction refuses a tensor twice among a function's
    inputs (`c_api_function.cc` ProcessInputs). Seen: TFMA's eval export, whose `labels`
    and `features/tips_xf` are one tensor, fails every tf.saved_model.load from 2.3 on."""
    if not run.repeated:
        return []
    names = ", ".join(run.repeated[:4])
    return [
        error(
            Code.REQUEST_FEED,
            f"Signature {run.name} takes tensor(s) {names} as two or more of its inputs: "
            "tf.saved_model.load prunes every signature of a TF1 SavedModel into a function "
            "at load, and a function cannot take one tensor twice ('TF_Output "
            f"{run.repeated[0]} appears more than once in the input list'): the load fails.",
            stage=Stage.LOAD,
        )
    ]


def _unfilled(
    s: Subject,
    plan: ServePlan,
    run: Run,
    unfilled: list[int],
    effects: _Effects,
    restores: bool,
    stage: Stage,
) -> Finding:
    resources = [plan.resources[i] for i in unfilled]
    first = resources[0]
    shown = ", ".join(f"{r.kind} {r.node} ({r.op})" for r in resources[:5])
    if len(resources) > 5:
        shown += f" and {len(resources) - 5} more"
    restored_somewhere = plan.restore is not None and first.kind == "variable"
    if first.kind == "variable" and plan.restore is not None and not restores:
        cause = "variables/ holds no variables.index, so the loader skips the restore"
        fix = Fix(FixKind.SAVE_VARIABLES)
    elif first.kind == "variable" and _tf2_module_pattern(s.meta_graph, plan, restores):
        cause = (
            "the restore fills other variables than the signature reads: variables the "
            "object graph does not track (a Keras 3 model held by a tf.Module and saved "
            "with tf.saved_model.save is one such export); tf.saved_model.load restores "
            "through the object graph and serves it"
        )
        fix = Fix(FixKind.USE_MODEL_EXPORT, loader="saved-model-v2")
    elif first.kind == "variable":
        cause = (
            "the variable is outside the saver's var_list (a local variable, or created "
            "after the saver) and no init op initialises it"
            if restored_somewhere
            else "the MetaGraph has no saver and no init op initialises it"
        )
        fix = Fix(FixKind.ADD_INIT_OP)
    elif first.kind == "table":
        init = plan.init_source or "no init op"
        cause = (
            f"the init op ({init}) does not initialise it: exported without "
            "main_op=tf.compat.v1.tables_initializer() (or legacy_init_op)"
        )
        fix = Fix(FixKind.ADD_INIT_OP)
    else:
        cause = "no init op runs its MakeIterator"
        fix = Fix(FixKind.ADD_INIT_OP)
    reader = effects.reads[unfilled[0]]
    outcome = "every request fails" if stage == Stage.REQUEST else "the load fails"
    fails_with = _FAILS_WITH[first.kind]
    if (
        first.kind == "variable"
        and s.consumer.loader == Loader.SAVED_MODEL_V2
        and s.consumer.lifted_reads_empty
    ):
        # load_v1_in_v2 lifts every variable out of the graph; one nothing filled reads
        # as an empty tensor (seen: "Incompatible shapes: [0] vs. [3]" on 2.12-2.21)
        fails_with = (
            "an error, or computes with an empty tensor (tf.saved_model.load lifts it unfilled)"
        )
    return error(
        Code.RESOURCE_UNINITIALIZED,
        f"{_where(run).capitalize()} reads {shown} ({reader}), which no step before it "
        f"fills: {outcome} with {fails_with}. Likely cause: {cause}.",
        op=first.op,
        fix=fix,
        stage=stage,
    )


def _tf2_module_pattern(meta_graph: MetaGraph | None, plan: ServePlan, restores: bool) -> bool:
    """A TF2 export whose restore fills variables, while the request reads others."""
    return bool(
        meta_graph is not None
        and meta_graph.has_object_graph
        and restores
        and plan.restore is not None
        and plan.restore.uses
    )
