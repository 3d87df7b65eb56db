"""What a SavedModel's own files decide: a run that cannot succeed whatever the
consumer, because of what the export wrote (or left out).

From the serve plan's per-run facts (`worker.formats.fixed_values`):
- **an asset the MetaGraph declares and assets/ lacks**, opened by an op the run
  executes: the loader feeds `<dir>/assets/<filename>` whether the file exists or not
  (`loader.cc` AddAssetsTensorsToInputs; `tf.saved_model.load` restores an `Asset`
  with that path), and `InitializeTableFromTextFileV2` / `ReadFile` fail "No such file
  or directory". An init run fails the load (the v1 loader's `RunInitOp`;
  `tf.saved_model.load` runs every restored resource's `_initialize` at load); a
  request that opens it fails every request;
- **a request that opens an asset by the path written at export**: a TF1 export's
  asset tensor is a `Const` holding the exporting machine's path, and only the
  loader's restore and init runs feed it; a request executes the `Const`, so it opens
  a file that was never shipped (TF2 exports keep the path in a variable the init
  run assigns, which this is not);
- **an `Assert` whose condition is false on constants alone**: `AssertOp` fails
  ("assertion failed") on every run that executes it, at load in an init run, on
  every request in a request's.
- **a lookup in a mutable table nothing fills, whose default becomes an index**:
  `MutableHashTable` starts empty; the saver's restore imports what the checkpoint
  holds (`<table>-keys`), and only an insert fills it otherwise. A table the
  checkpoint holds empty, that no init run and no request inserts into, answers every
  lookup with its default; a negative default taken as a `GatherV2` index fails the
  CPU kernel ("indices[0] = -1 is not in [0, N)") on every request. GPU kernels
  answer zeros: no finding for a GPU consumer.
Only facts the file fixes are findings: an asset path fed by the request, a present
asset, or a condition that reads anything not constant says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from worker.model.findings import Code, Finding, Fix, FixKind, Stage, error
from worker.model.serving import Run


def _where(run: Run) -> str:
    if run.role == "request":
        return f"the {run.name} request"
    return f"the {run.role} run ({run.name})"


def missing_asset_findings(
    run: Run, present: tuple[str, ...] | None, stage: Stage
) -> list[Finding]:
    """Ops of `run` that open a shipped asset path whose file assets/ lacks."""
    if present is None:
        return []  # the directory was not seen whole: whether assets/ holds it is unknown
    shipped = set(present)
    missing = [o for o in run.opens if o.fed and o.asset not in shipped]
    if not missing:
        return []
    first = missing[0]
    files = ", ".join(sorted({o.asset for o in missing}))
    outcome = "every request fails" if stage == Stage.REQUEST else "the load fails"
    return [
        error(
            Code.ASSET_MISSING,
            f"{_where(run).capitalize()} runs {first.op} ({first.node}) on asset "
            f"{first.asset}, which the SavedModel declares and assets/ does not hold "
            f"(missing: {files}): {outcome} ('No such file or directory').",
            op=first.op,
            fix=Fix(FixKind.SHIP_ASSETS),
            stage=stage,
        )
    ]


def export_path_findings(run: Run, stage: Stage) -> list[Finding]:
    """A request op opening an asset through the unfed asset tensor (a TF1 `Const`)."""
    if run.role != "request":
        return []
    unfed = [o for o in run.opens if not o.fed]
    if not unfed:
        return []
    first = unfed[0]
    path = f" {first.path!r}" if first.path else ""
    return [
        error(
            Code.ASSET_EXPORT_PATH,
            f"{_where(run).capitalize()} runs {first.op} ({first.node}) on asset "
            f"{first.asset} through its asset tensor, which only the loader's restore and "
            f"init runs feed: a request opens the path written at export{path}, not the "
            "shipped copy, and fails wherever that path does not exist.",
            op=first.op,
            fix=Fix(FixKind.READ_ASSET_AT_INIT, op=first.op),
            stage=stage,
        )
    ]


def failing_assert_findings(run: Run, stage: Stage) -> list[Finding]:
    if not run.asserts:
        return []
    first = run.asserts[0]
    more = f" (and {len(run.asserts) - 1} more)" if len(run.asserts) > 1 else ""
    outcome = "every request fails" if stage == Stage.REQUEST else "the load fails"
    return [
        error(
            Code.ASSERT_FALSE,
            f"{_where(run).capitalize()} runs Assert ({first.node}){more}, whose condition "
            f"({first.condition}) is computed from the graph's constants and is false: "
            f"{outcome} ('assertion failed').",
            op="Assert",
            fix=Fix(FixKind.REEXPORT_WITHOUT_OP, op="Assert"),
            stage=stage,
        )
    ]


def own_file_findings(run: Run, present: tuple[str, ...] | None, stage: Stage) -> list[Finding]:
    """Every fact of `run` that the SavedModel's files decide, in the order the run
    meets them (an init run opens its files before a later assertion is reached is
    not known: both are reported)."""
    return [
        *missing_asset_findings(run, present, stage),
        *export_path_findings(run, stage),
        *failing_assert_findings(run, stage),
    ]


def empty_table_findings(
    before: Sequence[Run],
    request: Run,
    entries: Mapping[str, tuple[str, tuple[int, ...]]] | None,
    gpu: bool,
) -> list[Finding]:
    """Lookups of `request` whose default becomes an index, in a table that the runs
    `before` it and the request leave empty (a restore's import counts as empty only
    when the checkpoint lists its keys with no row)."""
    if not request.lookups or gpu:
        return []
    fills = [f for run in (*before, request) for f in run.fills]
    for lookup in request.lookups:
        mine = [f for f in fills if f.table == lookup.table]
        if any(not f.restored_key for f in mine):
            continue  # an insert (or an import from elsewhere) may fill it
        restored = [entries.get(f.restored_key) if entries is not None else None for f in mine]
        if any(r is None or not r[1] or r[1][0] != 0 for r in restored):
            continue  # restored with rows, or from a key the checkpoint does not list
        state = (
            "the checkpoint holds it empty and nothing inserts into it"
            if mine
            else "nothing fills it"
        )
        return [
            error(
                Code.LOOKUP_DEFAULT_INDEX,
                f"The {request.name} request looks up table {lookup.table} ({lookup.node}), "
                f"which is empty when the request runs ({state}): every lookup answers the "
                f"default {lookup.default}, which {lookup.into} takes as an index and "
                f"refuses ('indices[0] = {lookup.default} is not in [0, N)'): every request "
                "fails on CPU.",
                op=lookup.into.split(" ", 1)[0],
                fix=Fix(FixKind.ADD_INIT_OP),
                stage=Stage.REQUEST,
            )
        ]
    return []
