"""What a SavedModel's loader and its requests run, as plain data (no rule in it).

TensorFlow's SavedModel loaders (`tensorflow/cc/saved_model/loader.cc`,
`python/saved_model/loader_impl.py`, `load_v1_in_v2.py`) make up to three
kinds of `Session.run` on a MetaGraph's graph:
- the **restore**: target `saver_def.restore_op_name`, fed
  `saver_def.filename_tensor_name` (the variables path) and the asset tensors;
  skipped when `variables/variables.index` is absent;
- the **init**: target the init op, fed the asset tensors. The init op is the
  output of signature `__saved_model_init_op`, else the one node of collection
  `saved_model_main_op`, else of `legacy_init_op` (more than one node there
  fails the load);
- each **request**: a signature's outputs fetched, its inputs fed.
`tf.saved_model.load` of a TF1 SavedModel (`load_v1_in_v2.py`) runs the same
restore, then the init op or, when there is none, `Scaffold.default_local_init_op`:
the initializers of the `local_variables` and `table_initializer` collections.

A run executes what its targets and fetches need, following data and control
inputs and stopping at fed tensors (`Session` pruning). A `ServePlan` records,
for each run, the top-level node kinds it executes, the placeholders it needs
that nothing feeds, the names it mentions that the graph lacks, and every use
of a resource (variable, table, iterator) by a node it runs. Which uses fill a
resource and which read it is a rule (`worker.compat.serving`), not data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INIT_OP_SIGNATURE = "__saved_model_init_op"
DEFAULT_SIGNATURE = "serving_default"  # what a request that names no signature calls
MAIN_OP_COLLECTION = "saved_model_main_op"
LEGACY_INIT_OP_COLLECTION = "legacy_init_op"


@dataclass(frozen=True)
class ResourceUse:
    """Node kind `kind` takes resource `resource`'s handle (or ref) at input `input`."""

    resource: int  # index into ServePlan.resources
    kind: int  # index into Graph.kinds (a top-level kind)
    input: int


@dataclass(frozen=True)
class FileOpen:
    """An op a run executes that opens the file one of the SavedModel's assets names."""

    op: str  # InitializeTableFromTextFileV2, ReadFile, ...
    node: str  # "node X" or "node X in function F"
    asset: str  # the asset's file name under assets/
    fed: bool  # the run opens the shipped copy (the loader fed its path)
    path: str = ""  # not fed: the path the graph holds, written at export


@dataclass(frozen=True)
class FailingAssert:
    """An Assert a run executes whose condition is computed from constants and false."""

    node: str  # "node X" or "node X in function F"
    condition: str  # the op computing the condition (Const, Equal, All, ...)


@dataclass(frozen=True)
class TableFill:
    """A run's insert into, or import of, a mutable lookup table (MutableHashTable*)."""

    table: str  # the table's node
    op: str  # LookupTableInsertV2, LookupTableImportV2, ...
    restored_key: str = ""  # an import from the saver's RestoreV2: the checkpoint key read


@dataclass(frozen=True)
class DefaultLookup:
    """A lookup in a mutable table whose default value, a negative integer constant,
    flows into an op that takes the lookup's result as an index (GatherV2, ...)."""

    node: str  # the lookup
    table: str  # the table's node
    default: int
    into: str  # the op taking it as indices, and its node


@dataclass(frozen=True)
class Run:
    """One Session.run: the restore, the init, or a request of one signature."""

    role: str  # "restore" | "init" | "request"
    name: str  # the restore op, the init op, or the signature key
    kinds: tuple[int, ...]  # top-level kinds it executes (indices into Graph.kinds)
    unfed: tuple[str, ...] = ()  # placeholders it needs that no feed fills
    missing: tuple[str, ...] = ()  # fetched or fed names the graph lacks
    uses: tuple[ResourceUse, ...] = ()
    opens: tuple[FileOpen, ...] = ()  # ops opening an asset's file (worker.formats.fixed_values)
    asserts: tuple[FailingAssert, ...] = ()  # assertions false on the file's own constants
    fills: tuple[TableFill, ...] = ()  # mutable tables it inserts into or imports
    lookups: tuple[DefaultLookup, ...] = ()  # lookups whose default becomes an index
    repeated: tuple[str, ...] = ()  # a request's tensors two or more of its inputs name


@dataclass(frozen=True)
class Resource:
    """A node that creates a stateful resource a run can find empty."""

    node: str
    op: str  # VariableV2, VarHandleOp, HashTableV2, IteratorV2, ...
    kind: str  # "variable" | "table" | "iterator"


@dataclass(frozen=True)
class ServePlan:
    restore: Run | None  # None: the MetaGraph has no saver
    init: Run | None  # None: no init op
    init_source: str  # where the init op came from ("" when none)
    init_error: str  # why finding the init op fails the load ("" when it does not)
    requests: tuple[Run, ...]  # one per signature, serving_default first
    resources: tuple[Resource, ...]
    assets: tuple[str, ...] = ()  # asset file names the loader feeds
    # What tf.saved_model.load runs when the MetaGraph has no init op (load_v1_in_v2:
    # Scaffold.default_local_init_op: the local variables' and the tables' initializers)
    default_init: Run | None = None

    def request(self, key: str) -> Run | None:
        for run in self.requests:
            if run.name == key:
                return run
        return None


def _run_from_json(d: dict[str, Any]) -> Run:
    return Run(
        role=d["role"],
        name=d["name"],
        kinds=tuple(d["kinds"]),
        unfed=tuple(d["unfed"]),
        missing=tuple(d["missing"]),
        uses=tuple(ResourceUse(**u) for u in d["uses"]),
        opens=tuple(FileOpen(**o) for o in d.get("opens", ())),
        asserts=tuple(FailingAssert(**a) for a in d.get("asserts", ())),
        fills=tuple(TableFill(**f) for f in d.get("fills", ())),
        lookups=tuple(DefaultLookup(**x) for x in d.get("lookups", ())),
        repeated=tuple(d.get("repeated", ())),
    )


def serve_plan_from_json(d: dict[str, Any] | None) -> ServePlan | None:
    """Inverse of `dataclasses.asdict(plan)`; None for metadata written before plans."""
    if d is None:
        return None
    return ServePlan(
        restore=_run_from_json(d["restore"]) if d["restore"] is not None else None,
        init=_run_from_json(d["init"]) if d["init"] is not None else None,
        init_source=d["init_source"],
        init_error=d["init_error"],
        requests=tuple(_run_from_json(r) for r in d["requests"]),
        resources=tuple(Resource(**r) for r in d["resources"]),
        assets=tuple(d.get("assets", ())),
        default_init=_run_from_json(d["default_init"]) if d.get("default_init") else None,
    )
