"""Which attrs a copy may drop, and what that makes of each consumer's verdict.

A plan is decided from the model's own data and each consumer's registry, never
from finding messages:
- an attr a consumer's OpDef lacks is dropped when its value equals the
  producer's default (the model's `stripped_op_list`; for a frozen graph, the
  catalog registry of the release its GraphDef producer number dates): exactly
  what `strip_default_attrs=True` would have done, in graph nodes and in every
  function body;
- an attr measured to change no results (`no-effect-on-results` in the catalog's
  attr table, `catalog/data/attr_effects.json`) is dropped whatever its value;
  one that changes results, or that no one measured, only at its default;
- `_output_shapes` where a consumer's import contradicts it (`import.output-shapes`):
  removed from the top-level nodes of the op the finding names and from every node
  that reads their outputs, directly or not (see `STRIPS_SHAPES`);
- nothing else: no op is dropped, no VersionDef lowered, no value changed.

A drop is kept only when it is safe for every named consumer at once: one that
knows the attr must fill in the same default (or, for an attr with no effect,
have one). The copy's metadata is then simulated (the same node kinds without the
dropped attrs) and checked against each consumer exactly like the original, so
"fixed" means the checks that judge uploads say the copy serves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from packaging.version import Version

from worker.catalog.catalog import Catalog
from worker.compat.check import check_artifact
from worker.compat.subject import select_meta_graph
from worker.model.artifact import Artifact, AttrJSON, Graph, NodeKind, OpDef
from worker.model.consumer import Consumer, Loader
from worker.model.effects import AttrEffect, Effect
from worker.model.findings import Code, Finding, FixKind, Severity
from worker.model.shapes import SHAPE_CHANGED_OPS
from worker.model.verdict import Verdict

PRODUCER_DEFAULT = "producer-default"
NO_EFFECT = str(Effect.NO_EFFECT)
STRIPS_SHAPES = "contradicted-output-shapes"
"""The rule of a drop of `_output_shapes`. The attr is informational: only a graph
import reads it (`GraphConstructor::ValidateShape` in tensorflow/core/common_runtime/
graph_constructor.cc, run when `importing` and `validate_shape`), which merges each
recorded shape into what the node's shape function inferred
(`ShapeRefiner::SetShape`), fails where they contradict, and then removes the attr
from the node (`node->ClearAttr("_output_shapes")`): no kernel, and no graph the
import returns, ever sees it, so removing it changes no results. The merged shape is
what the shape functions of the nodes reading that output see, so a node's recorded
shapes hold only for the inputs its producer had: a node whose recorded shapes are
removed passes its consumer's own inference downstream, where another node's record
can then contradict it (UniqueV2's `y` is rank 1 up to 2.0 and rank 2 from 2.1, and
so is every Identity after it). The copy therefore loses the attr on the op's nodes
and on every node downstream of them; every other node keeps it, with the inputs
its producer recorded it for. Function bodies are instantiated, never imported:
they are left alone."""
OUTPUT_SHAPES = "_output_shapes"

# Findings that stop a consumer serving even when they are only warnings: errors the
# consumer meets when a function first runs (compat.check.deferred_to_call).
_DEFERRED_BLOCKERS = frozenset(
    {
        Code.ATTR_UNKNOWN,
        Code.ATTR_MISSING,
        Code.ATTR_TYPE,
        Code.ATTR_NOT_ALLOWED,
        Code.ATTR_BELOW_MINIMUM,
        Code.OP_NOT_REGISTERED,
        Code.OP_REMOVED,
        Code.OP_CUSTOM,
    }
)


@dataclass(frozen=True)
class Drop:
    """Drop attr `attr` from every `op` node (graph and functions) holding `value`.

    `value` None: any value (an attr measured to change no results)."""

    op: str
    attr: str
    rule: str  # PRODUCER_DEFAULT | NO_EFFECT
    default: str | None = None  # the value as canonical JSON (hashable)

    @classmethod
    def producer_default(cls, op: str, attr: str, value: AttrJSON) -> Drop:
        return cls(op, attr, PRODUCER_DEFAULT, canonical(value))

    @classmethod
    def output_shapes(cls, op: str) -> Drop:
        """`_output_shapes` of `op`'s top-level nodes and of the nodes downstream."""
        return cls(op, OUTPUT_SHAPES, STRIPS_SHAPES)

    @property
    def strips_shapes(self) -> bool:
        return self.rule == STRIPS_SHAPES

    @property
    def value(self) -> AttrJSON | None:
        return None if self.default is None else dict(json.loads(self.default))

    def applies(self, value: AttrJSON) -> bool:
        if self.default is None:
            return True
        # Tensor-valued defaults are never dropped: summaries keep a tensor's dtype and
        # shape only, so the plan could not tell what the rewrite would do.
        return "tensor" not in value and canonical(value) == self.default


def canonical(value: AttrJSON) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Rewrite:
    """A drop with its reach in one artifact."""

    drop: Drop
    graph_nodes: int
    function_nodes: int

    def to_json(self) -> dict[str, object]:
        return {
            "op": self.drop.op,
            "attr": self.drop.attr,
            "rule": self.drop.rule,
            "value": self.drop.value,
            "graph_nodes": self.graph_nodes,
            "function_nodes": self.function_nodes,
        }


def blocks_serving(finding: Finding) -> bool:
    return finding.severity == Severity.ERROR or finding.code in _DEFERRED_BLOCKERS


def serves(verdict: Verdict) -> bool | None:
    """Whether the consumer loads the artifact and answers a request with it.

    Uses the verdict's own `serves` where the verdict has one; otherwise: loads, and
    no error is only deferred to the first call."""
    known = getattr(verdict, "serves", None)
    if isinstance(known, bool):
        return known
    if verdict.consumer.registry is None and verdict.loads:
        return None  # only version numbers were checked
    return not any(blocks_serving(f) for f in verdict.findings)


@dataclass(frozen=True)
class ConsumerFix:
    """One consumer: its verdict on the original and on the planned copy."""

    consumer: Consumer
    before: Verdict
    after: Verdict
    needs: tuple[Drop, ...]  # the drops that concern this consumer
    instead: tuple[str, ...]  # what to do when no safe rewrite makes it serve

    @property
    def serves_before(self) -> bool | None:
        return serves(self.before)

    @property
    def serves_after(self) -> bool | None:
        return serves(self.after)

    @property
    def state(self) -> str:
        """'serves' (as it is), 'fixed' (the copy serves), 'unfixable', or 'unknown'."""
        if self.serves_before:
            return "serves"
        if self.serves_after:
            return "fixed"
        if self.serves_after is None:
            return "unknown"
        return "unfixable"

    @property
    def loader(self) -> str:
        """How this consumer reads this artifact, as `check` names it (a GraphDef is
        imported, whatever the consumer's SavedModel loader)."""
        return self.before.loader or str(self.consumer.loader)

    @property
    def blockers(self) -> tuple[Finding, ...]:
        """What still stops the consumer serving the copy."""
        return tuple(f for f in self.after.findings if blocks_serving(f))

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.consumer.name,
            "tensorflow": self.consumer.tensorflow,
            "loader": self.loader,
            "state": self.state,
            "serves": self.serves_before,
            "serves_copy": self.serves_after,
            "rewrites": [f"{d.op}.{d.attr}" for d in self.needs],
            "blockers": [f.to_json() for f in self.blockers],
            "instead": list(self.instead),
        }


@dataclass(frozen=True)
class FixPlan:
    artifact: Artifact
    rewrites: tuple[Rewrite, ...]
    consumers: tuple[ConsumerFix, ...]
    copy: Artifact  # the copy's metadata, as the rewrite will leave it
    # Top-level nodes the written copy holds without `_output_shapes`: the stripped ops'
    # and every node downstream of them (None: not rewritten yet, or nothing stripped)
    shapes_stripped: int | None = None

    @property
    def drops(self) -> tuple[Drop, ...]:
        return tuple(r.drop for r in self.rewrites)

    @property
    def writable(self) -> bool:
        """Every consumer serves the copy (some may already serve the original)."""
        return all(c.state in ("serves", "fixed") for c in self.consumers)

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {
            "path": self.artifact.path,
            "format": self.artifact.format,
            "writable": self.writable,
            "rewrites": [r.to_json() for r in self.rewrites],
            "consumers": [c.to_json() for c in self.consumers],
        }
        if any(d.strips_shapes for d in self.drops):
            found["output_shapes_stripped"] = self.shapes_stripped
        return found


# --- producer defaults -------------------------------------------------------------------


def producer_release_ops(catalog: Catalog, producer: int) -> Mapping[str, OpDef]:
    """The registry of the first catalog release built at or after GraphDef version
    `producer` (the newest when none is): it has every attr the producer had, and
    TensorFlow never changes an attr's default."""
    with_registry = [r for r in catalog.releases if r.registry_version is not None]
    if not with_registry:
        return {}
    later = [r for r in with_registry if r.graph_def_version >= producer]
    release = min(later, key=lambda r: r.graph_def_version) if later else with_registry[-1]
    registry = catalog.registry(release)
    return registry.ops if registry else {}


def producer_defaults(artifact: Artifact, catalog: Catalog) -> tuple[dict[str, OpDef], str]:
    """The producer's OpDefs and where they come from."""
    meta_graph = select_meta_graph(artifact.meta_graphs)
    ops: dict[str, OpDef] = dict(meta_graph.producer_ops) if meta_graph else {}
    source = "stripped_op_list" if ops else ""
    graph = meta_graph.graph if meta_graph else artifact.graph
    if graph is not None and graph.versions is not None:
        missing = {k.op for k in graph.kinds} - set(ops)
        if missing:
            fallback = producer_release_ops(catalog, graph.versions.producer)
            ops.update({name: fallback[name] for name in missing if name in fallback})
            source = (source + " + " if source else "") + "catalog"
    return ops, source


# --- planning ----------------------------------------------------------------------------


def _all_kinds(artifact: Artifact) -> Iterable[NodeKind]:
    for graph in artifact.graphs():
        yield from graph.kinds


def candidate_drops(
    artifact: Artifact,
    consumer: Consumer,
    producer_ops: Mapping[str, OpDef],
    effect_of: Callable[[str, str], AttrEffect | None],
) -> set[Drop]:
    """Attrs on the artifact's nodes that the consumer's OpDef lacks and a drop covers:
    any value of an attr measured to change no results, else only the default."""
    if consumer.registry is None:
        return set()
    found: set[Drop] = set()
    for kind in _all_kinds(artifact):
        op = consumer.registry.ops.get(kind.op)
        if op is None:
            continue  # not registered: no attr drop helps
        for name, value in kind.attrs.items():
            if name in op.attr_map:
                continue
            producer_op = producer_ops.get(kind.op)
            effect = effect_of(kind.op, name)
            if (
                effect is not None
                and effect.effect == Effect.NO_EFFECT
                and producer_op is not None
                and not types_an_arg(producer_op, name)
            ):
                found.add(Drop(kind.op, name, NO_EFFECT))
                continue
            attr = producer_op.attr(name) if producer_op else None
            if attr is None or attr.default is None:
                continue
            drop = Drop.producer_default(kind.op, name, attr.default)
            if drop.applies(value):
                found.add(drop)
    return found


def types_an_arg(op: OpDef, attr: str) -> bool:
    """Whether the attr sets the type of one of the op's inputs or outputs. Such an attr
    at another value than its default types the node's edges otherwise: without it the
    consumer types them by the default, and the import fails on the edge ('Input 2 of
    node TensorListGetItem was passed int64 ... incompatible with expected int32',
    measured in 1.14-2.20 on copies dropping a non-default Tshape). Its measured
    effect on results does not cover that, so only its default is dropped."""
    return any(attr in (arg.type_attr, arg.type_list_attr) for arg in (*op.inputs, *op.outputs))


def shape_strips(verdict: Verdict) -> set[Drop]:
    """The `_output_shapes` drops the consumer's `import.output-shapes` findings ask for."""
    return {
        Drop.output_shapes(f.fix.op)
        for f in verdict.findings
        if f.code == Code.OUTPUT_SHAPES
        and f.fix is not None
        and f.fix.kind == FixKind.STRIP_OUTPUT_SHAPES
        and f.fix.op
    }


def safe_for(drop: Drop, ops: Mapping[str, OpDef]) -> bool:
    """Whether a node without the attr means the same to a binary with these OpDefs."""
    if drop.strips_shapes:
        return True  # informational: what an import reads of it is cleared after
    op = ops.get(drop.op)
    attr = op.attr(drop.attr) if op else None
    if attr is None:
        return True  # it lacks the attr (or the op): the drop is what it needs
    if drop.rule == NO_EFFECT:
        return attr.default is not None
    return attr.default is not None and canonical(attr.default) == drop.default


def without(artifact: Artifact, drops: Sequence[Drop]) -> Artifact:
    """The artifact's metadata as a copy without the dropped attrs would read."""
    by_key = {(d.op, d.attr): d for d in drops if not d.strips_shapes}
    if not drops:
        return artifact

    def strip_attrs(graph: Graph) -> Graph:
        kinds = []
        for kind in graph.kinds:
            attrs = {
                name: value
                for name, value in kind.attrs.items()
                if not ((d := by_key.get((kind.op, name))) and d.applies(value))
            }
            kinds.append(kind if len(attrs) == len(kind.attrs) else replace(kind, attrs=attrs))
        return replace(graph, kinds=tuple(kinds))

    stripped_ops = {d.op for d in drops if d.strips_shapes}

    def strip(graph: Graph) -> Graph:
        graph = strip_attrs(graph)
        if not stripped_ops or not graph.shaped_nodes:
            return graph
        # The nodes downstream of the op's lose their record too, which the summary
        # cannot tell (it has no node names): they are kept, judged on the inputs their
        # producer recorded, so the copy's simulated findings are never fewer than its
        # real ones.
        kept = tuple(n for n in graph.shaped_nodes if n.op not in stripped_ops)
        return replace(graph, shaped_nodes=kept)

    meta_graphs = tuple(replace(m, graph=strip(m.graph)) for m in artifact.meta_graphs)
    graph = strip(artifact.graph) if artifact.graph is not None else None
    return replace(artifact, meta_graphs=meta_graphs, graph=graph)


def reach(artifact: Artifact, drop: Drop) -> Rewrite:
    if drop.strips_shapes:
        seeds = sum(n.count for g in artifact.graphs() for n in g.shaped_nodes if n.op == drop.op)
        return Rewrite(drop, seeds, 0)
    graph_nodes = function_nodes = 0
    for kind in _all_kinds(artifact):
        if kind.op == drop.op and drop.attr in kind.attrs and drop.applies(kind.attrs[drop.attr]):
            if kind.function is None:
                graph_nodes += kind.count
            else:
                function_nodes += kind.count
    return Rewrite(drop, graph_nodes, function_nodes)


def plan_fix(
    artifact: Artifact, consumers: Sequence[Consumer], catalog: Catalog, advise: bool = True
) -> FixPlan:
    """What a copy for these consumers drops, and each consumer's verdict on it.

    `advise`: say what to do instead for an unfixable consumer (costs a check per
    newer release)."""
    producer_ops, _source = producer_defaults(artifact, catalog)
    befores = {c.name: check_artifact(artifact, c, catalog) for c in consumers}
    wanted: dict[str, set[Drop]] = {
        c.name: candidate_drops(artifact, c, producer_ops, catalog.attr_effect)
        | shape_strips(befores[c.name])
        for c in consumers
    }
    registries = [c.registry.ops for c in consumers if c.registry is not None]
    safe: list[Drop] = []
    afters = befores
    copy = artifact
    # `_output_shapes` a consumer contradicts can show only once an upstream record is
    # gone (the simulation keeps records the rewrite removes downstream): strip those
    # ops too, until none is new. At most one round per op whose shapes were measured.
    for _round in range(1 + len(SHAPE_CHANGED_OPS)):
        union = set().union(*wanted.values()) if wanted else set()
        chosen = sorted(
            (d for d in union if all(safe_for(d, ops) for ops in [producer_ops, *registries])),
            key=lambda d: (d.op, d.attr),
        )
        if chosen == safe:
            break
        safe = chosen
        copy = without(artifact, safe)
        afters = {c.name: check_artifact(copy, c, catalog) for c in consumers}
        more = {c.name: shape_strips(afters[c.name]) - wanted[c.name] for c in consumers}
        if not any(more.values()):
            break
        for name, drops in more.items():
            wanted[name] |= drops
    fixes = []
    for consumer in consumers:
        before, after = befores[consumer.name], afters[consumer.name]
        needs = tuple(d for d in safe if d in wanted[consumer.name])
        fix = ConsumerFix(consumer, before, after, needs, ())
        if advise and fix.state == "unfixable":
            fix = replace(fix, instead=advice(fix, copy, catalog))
        fixes.append(fix)
    rewrites = tuple(reach(artifact, d) for d in safe)
    return FixPlan(artifact, rewrites, tuple(fixes), copy)


def advice(fix: ConsumerFix, copy: Artifact, catalog: Catalog) -> tuple[str, ...]:
    """What to do instead, when no safe rewrite makes the consumer serve the model."""
    lines = [f"{f.code}: {f.message}" for f in fix.blockers]
    upgrade = oldest_serving_release(copy, fix.consumer, catalog)
    if upgrade is not None:
        lines.append(
            f"upgrade {fix.consumer.name} to TensorFlow >= {upgrade} "
            f"(the oldest release that serves the model"
            + (" with the safe rewrites)" if fix.needs else ")")
        )
    else:
        lines.append("no known TensorFlow release serves this model with this loader")
    return tuple(lines)


def oldest_serving_release(artifact: Artifact, consumer: Consumer, catalog: Catalog) -> str | None:
    """The oldest catalog release newer than the consumer's that serves `artifact` with
    the consumer's loader."""
    loader: Loader = consumer.loader
    for release_consumer in catalog.range_consumers():
        assert release_consumer.tensorflow is not None
        if not _newer(release_consumer, consumer):
            continue
        candidate = replace(release_consumer, loader=loader)
        if serves(check_artifact(artifact, candidate, catalog)):
            return candidate.tensorflow
    return None


def _newer(release: Consumer, consumer: Consumer) -> bool:
    """GraphDef versions do not order releases (2.0.4 has 119, 1.15.5 134): compare
    release numbers when the consumer has one."""
    assert release.tensorflow is not None
    if consumer.tensorflow is None:
        return release.graph_def_version > consumer.graph_def_version
    return Version(release.tensorflow) > Version(consumer.tensorflow)
