"""What a consumer actually reads of an artifact, after its loader acted.

Which graph a consumer reads, and what its loader does first, follows
TensorFlow's loaders (the fixture matrices show each case):
- SavedModel loaders (and import_meta_graph) use the MetaGraph tagged `serve`
  and drop unknown attrs whose value is the producer's default (from
  `stripped_op_list`) from the graph's nodes, never inside functions;
- the v1 loader and a graph import validate the functions the graph reaches,
  `tf.saved_model.load` every function (`worker.compat.functions`);
- `tf.saved_model.load` judges deprecations at the running binary's GraphDef
  version, and on a TF2 SavedModel (one with an object graph) ignores the
  VersionDef and the top-level graph;
- a frozen GraphDef is imported as it is, whatever the consumer's SavedModel
  loader: its verdict names the loader that applies (`graph-import`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from worker.compat.functions import FunctionScope, scope_of
from worker.compat.memo import kinds_in_scope
from worker.compat.policy import Policy
from worker.model.artifact import Artifact, AttrJSON, Graph, MetaGraph, NodeKind, OpDef, VersionDef
from worker.model.consumer import Consumer, Loader
from worker.model.effects import AttrEffect, KernelChange, KernelNondeterminism
from worker.model.findings import Finding
from worker.model.keras import KerasObjects, LayerConfigTable
from worker.model.shapes import ShapeCase
from worker.model.xla import XlaCallModuleSupport

SERVING_TAG = "serve"
DEFAULT_POLICY = Policy()


class History(Protocol):
    """What the release catalog knows beyond one consumer (for messages and fixes)."""

    def op_introduced(self, op: str) -> str | None:
        """The first known release that registers `op`; None if none does."""
        ...

    def attr_introduced(self, op: str, attr: str) -> str | None: ...

    def attr_default(self, op: str, attr: str) -> AttrJSON | None:
        """The attr's default in the newest release that has it (for graphs that carry
        no op list of their own: frozen GraphDefs)."""
        ...

    def op_last_release(self, op: str) -> str | None:
        """The last known release that registers `op` (for removed ops)."""
        ...

    def attr_effect(self, op: str, attr: str) -> AttrEffect | None:
        """What the attr does to the op's results, as measured; None: not measured."""
        ...

    def kernel_change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        """How the op's kernel in `release` differs from the newest, as measured."""
        ...

    def kernel_nondeterminism(
        self, op: str, dtype: str, release: str
    ) -> KernelNondeterminism | None:
        """Whether two runs of (op, dtype) in one session of `release` answered otherwise."""
        ...

    def kernel_changed_ops(self) -> frozenset[str]:
        """Every op `kernel_change` knows a change of, or `kernel_nondeterminism` knows to
        answer otherwise from run to run (in some release and dtype)."""
        ...

    def kernel_dtypes(self, op: str, attrs: Mapping[str, AttrJSON]) -> list[str]:
        """The keys a node of `op` with `attrs` is measured under (none: no table)."""
        ...

    def kernel_measured(self, op: str, dtype: str) -> bool | None:
        """Whether (op, dtype) was run and compared across releases; None: no table."""
        ...

    def kernel_unbuildable(self, op: str) -> str | None:
        """Why the kernel sweep could not run `op` (None: it ran, or no table)."""
        ...

    def kernel_release_measured(self, release: str) -> bool | None:
        """Whether the kernel sweep ran in the release's minor; None: no table."""
        ...

    def shape_cases(self, op: str, release: str) -> tuple[ShapeCase, ...] | None:
        """What `release`'s shape function of `op` infers, as measured; None: not measured."""
        ...

    def xla_call_module(self, release: str) -> XlaCallModuleSupport | None:
        """What `release`'s XlaCallModule runs, as measured; None: not measured."""
        ...

    def xla_call_module_releases(self) -> tuple[XlaCallModuleSupport, ...]:
        """Every release whose XlaCallModule was measured, oldest first."""
        ...

    def producer_date(self, graph_def_version: int) -> dt.date | None: ...

    def upgrade_target(self, versions: VersionDef, current: int) -> str | None:
        """The oldest known release newer than `current` that accepts `versions`."""
        ...

    def keras_tables(self, keras: str | None, tensorflow: str | None) -> list[KerasObjects]:
        """What each Keras the consumer may run deserializes by name (none: not known)."""
        ...

    def keras_layer_configs(
        self, keras: str | None, tensorflow: str | None
    ) -> list[LayerConfigTable]:
        """What each Keras 3 the consumer may run does with Keras 2 H5 layer configs
        (none: not known)."""
        ...


class NoHistory:
    def op_introduced(self, op: str) -> str | None:
        return None

    def attr_introduced(self, op: str, attr: str) -> str | None:
        return None

    def attr_default(self, op: str, attr: str) -> AttrJSON | None:
        return None

    def op_last_release(self, op: str) -> str | None:
        return None

    def attr_effect(self, op: str, attr: str) -> AttrEffect | None:
        return None

    def kernel_change(self, op: str, dtype: str, release: str) -> KernelChange | None:
        return None

    def kernel_nondeterminism(
        self, op: str, dtype: str, release: str
    ) -> KernelNondeterminism | None:
        return None

    def kernel_changed_ops(self) -> frozenset[str]:
        return frozenset()

    def kernel_dtypes(self, op: str, attrs: Mapping[str, AttrJSON]) -> list[str]:
        return []

    def kernel_measured(self, op: str, dtype: str) -> bool | None:
        return None

    def kernel_unbuildable(self, op: str) -> str | None:
        return None

    def kernel_release_measured(self, release: str) -> bool | None:
        return None

    def shape_cases(self, op: str, release: str) -> tuple[ShapeCase, ...] | None:
        return None

    def xla_call_module(self, release: str) -> XlaCallModuleSupport | None:
        return None

    def xla_call_module_releases(self) -> tuple[XlaCallModuleSupport, ...]:
        return ()

    def producer_date(self, graph_def_version: int) -> dt.date | None:
        return None

    def upgrade_target(self, versions: VersionDef, current: int) -> str | None:
        return None

    def keras_tables(self, keras: str | None, tensorflow: str | None) -> list[KerasObjects]:
        return []

    def keras_layer_configs(
        self, keras: str | None, tensorflow: str | None
    ) -> list[LayerConfigTable]:
        return []


NO_HISTORY = NoHistory()


def effective_loader(artifact: Artifact, consumer: Consumer) -> str:
    """The loader that applies to this artifact in this consumer (what a verdict names)."""
    if artifact.format == "graphdef":
        return str(Loader.GRAPH_IMPORT)
    if artifact.format == "checkpoint":
        return "checkpoint"
    if artifact.format == "metagraph":
        return "import-meta-graph"
    if artifact.keras is not None:
        return "keras-load-model"  # keras.models.load_model, whatever the SavedModel loader
    return str(consumer.loader)


@dataclass
class Subject:
    """What a consumer reads of an artifact: the graph, the kinds in scope, the functions."""

    artifact: Artifact
    consumer: Consumer
    history: History
    graph: Graph | None = None
    meta_graph: MetaGraph | None = None
    kinds: list[NodeKind] = field(default_factory=list)
    scope: FunctionScope | None = None
    check_graph_versions: bool = True
    drops_graph_defaults: bool = False
    tf2_load: bool = False  # tf.saved_model.load of a TF2 SavedModel
    policy: Policy = DEFAULT_POLICY
    reported_nodes: set[tuple[str, str | None, str]] = field(default_factory=set)
    edges: list[tuple[Finding, str | None]] | None = None  # edge findings, once per check
    # node findings (their function, checked at load?), once per check, not yet placed
    nodes: list[tuple[Finding, str | None, bool]] | None = None

    @property
    def loader(self) -> str:
        return effective_loader(self.artifact, self.consumer)

    @property
    def is_saved_model(self) -> bool:
        return self.artifact.format == "savedmodel"

    @property
    def producer_ops(self) -> dict[str, OpDef]:
        return self.meta_graph.producer_ops if self.meta_graph else {}

    @property
    def instantiates_at_load(self) -> bool:
        """Function bodies' attrs are checked at load (tf.saved_model.load), not at call."""
        return self.consumer.loader == Loader.SAVED_MODEL_V2 and self.is_saved_model


def serving_meta_graph(meta_graphs: tuple[MetaGraph, ...]) -> MetaGraph | None:
    """The MetaGraph TF Serving and the v1 loader load: the one whose tag set is exactly
    {serve} (loader.cc FindMetaGraphDef compares sets; {serve, gpu} is not it)."""
    for meta_graph in meta_graphs:
        if set(meta_graph.tags) == {SERVING_TAG}:
            return meta_graph
    return None


def select_meta_graph(
    meta_graphs: tuple[MetaGraph, ...], loader: str | None = None
) -> MetaGraph | None:
    """The MetaGraph a loader reads. The v1 loader reads only the exact {serve} set (none:
    it fails, `saved-model.tags`); `tf.saved_model.load` without `tags=` reads the only
    one (several: it fails); a graph import takes the first. Without a loader (messages,
    fixes): the serving one, else one holding `serve`, else the first."""
    if not meta_graphs:
        return None
    if loader == Loader.SAVED_MODEL_V1:
        return serving_meta_graph(meta_graphs)
    if loader == Loader.GRAPH_IMPORT:
        return meta_graphs[0]
    found = serving_meta_graph(meta_graphs)
    if found is not None:
        return found
    for meta_graph in meta_graphs:
        if SERVING_TAG in meta_graph.tags:
            return meta_graph
    return meta_graphs[0]


def read_graph(
    artifact: Artifact, consumer: Consumer
) -> tuple[MetaGraph | None, Graph | None, bool]:
    """(the MetaGraph, the graph the consumer reads, whether tf.saved_model.load reads a
    TF2 SavedModel: functions only, no VersionDef)."""
    if artifact.format not in ("savedmodel", "metagraph"):
        return None, artifact.graph, False
    loader = consumer.loader if artifact.format == "savedmodel" else None
    meta_graph = select_meta_graph(artifact.meta_graphs, loader)
    if meta_graph is None:
        return None, None, False
    v2 = consumer.loader == Loader.SAVED_MODEL_V2 and artifact.format == "savedmodel"
    return meta_graph, meta_graph.graph, v2 and meta_graph.has_object_graph


def subject_for(artifact: Artifact, consumer: Consumer, history: History) -> Subject:
    subject = Subject(artifact, consumer, history)
    subject.meta_graph, subject.graph, subject.tf2_load = read_graph(artifact, consumer)
    if artifact.format in ("savedmodel", "metagraph"):
        # The SavedModel loaders drop default-valued unknown attrs from graph nodes.
        subject.drops_graph_defaults = (
            consumer.loader != Loader.GRAPH_IMPORT or artifact.format == "metagraph"
        )
        subject.check_graph_versions = not subject.tf2_load
    graph = subject.graph
    if graph is None:
        return subject
    subject.scope = scope_of(graph, subject.instantiates_at_load)
    subject.kinds = kinds_in_scope(graph, subject.scope.reachable, not subject.tf2_load)
    return subject
