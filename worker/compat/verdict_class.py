"""The fleet's verdict classes: consumers of one class get the same verdict on a model.

A fleet change checks a model once per class, not once per consumer
(`worker.fleet.impact`); `tests/compat/test_verdict_class.py` holds every fixture to
the promise against every release and loader."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from typing import cast

from worker.compat.data_types import data_type_uses
from worker.compat.devices import unplaceable
from worker.compat.kernels import kernel_gap, kernel_gaps
from worker.compat.memo import (
    Identity,
    ObjectTable,
    asked_often,
    graph_facts,
    identity,
    ops_differing,
    per_kind_attrs,
    per_object,
    registry_identities,
    registry_lookup,
    remembered,
)
from worker.compat.objects import revival_gaps
from worker.compat.op_signature import deprecation_key, judged_at, op_signature
from worker.compat.policy import Policy, same_answer_strict
from worker.compat.subject import DEFAULT_POLICY, NO_HISTORY, History, read_graph
from worker.compat.tflite import applies
from worker.compat.versions import check_versions
from worker.compat.xla import holds_xla
from worker.model.artifact import Artifact, AttrJSON, Graph, NodeKind
from worker.model.consumer import Consumer, Loader, Registry, minor

_CLASSES: ObjectTable[Hashable, tuple[Hashable, bool]] = ObjectTable("verdict_class")


def verdict_class(
    artifact: Artifact,
    consumer: Consumer,
    history: History | None = None,
    policy: Policy | None = None,
) -> Hashable | None:
    """Consumers of equal class get verdicts on `artifact` with the same status and the
    same errors, messages included (`tests/compat/test_verdict_class.py` holds every
    fixture to it against every release and loader): a fleet change checks a model once
    per class, not once per consumer. What may differ is information (the forward window
    names the consumer's release) and a banned consumer's warning text.

    The class is what the registry-level checks are shared by (`_registry_findings`)
    plus the outcome of the version rules; None where no class is promised (a Keras file,
    a .tflite file, a consumer without a registry).

    Remembered on the artifact, per what the class reads of the consumer, its release aside
    (the patch releases of a minor share one), unless the consumer's registry lacks an op
    of the graph: whether that op was removed before the release is read then."""
    registry = consumer.registry
    if (
        artifact.format == "tflite"
        or artifact.keras is not None
        or registry is None
        or not applies(artifact, consumer)
    ):
        return None
    history = history or NO_HISTORY
    policy = policy or DEFAULT_POLICY
    key = (identity(history), _consumer_token(consumer, policy))
    memo = _CLASSES.of(artifact)
    hit = memo.get(key)
    if hit is not None:
        if not hit[1]:
            return hit[0]
        hit = memo.get((key, consumer.tensorflow))
        if hit is not None:
            return hit[0]
    banned = policy.banned(consumer.graph_def_version) is not None
    strict = same_answer_strict(consumer, policy)
    found, by_release = _class_of(artifact, consumer, history, (banned, strict))
    memo[key] = (found, by_release)
    if by_release:
        memo[key, consumer.tensorflow] = (found, by_release)
    return found


def release_classes(
    artifact: Artifact, releases: Sequence[Consumer], history: History | None = None
) -> list[Hashable | None]:
    """`verdict_class` of each release (the default policy), in order: an upload's check
    asks it of all 79. A release with its predecessor's consumer token (the patch releases
    of a minor) takes its class, as `verdict_class` would from its memo, unless that class
    read the release (an op of the graph the registry lacks)."""
    found: list[Hashable | None] = []
    shared = identity(history or NO_HISTORY)
    last: tuple[Identity, Hashable] | None = None
    for consumer in releases:
        if (
            last is not None
            and consumer.registry is not None
            and _known_token(consumer, DEFAULT_POLICY) is last[0]
            and applies(artifact, consumer)
        ):
            found.append(last[1])
            continue
        key = verdict_class(artifact, consumer, history)
        found.append(key)
        token = _known_token(consumer, DEFAULT_POLICY) if key is not None else None
        hit = _CLASSES.of(artifact).get((shared, token)) if token is not None else None
        last = (token, key) if token is not None and hit is not None and not hit[1] else None
    return found


# id(consumer), id(policy) -> (that consumer, that policy, its token): kept beside them,
# not on them (a consumer's attributes are read throughout every check, and an instance
# whose __dict__ was asked for reads them slower)
_TOKENS: dict[tuple[int, int], tuple[Consumer, Policy, Identity]] = remembered({})
_TOKEN_OF: dict[Hashable, Identity] = remembered({})


def _known_token(consumer: Consumer, policy: Policy) -> Identity | None:
    hit = _TOKENS.get((id(consumer), id(policy)))
    return hit[2] if hit is not None and hit[0] is consumer and hit[1] is policy else None


def _consumer_token(consumer: Consumer, policy: Policy) -> Identity:
    """One token per distinct value of what a class reads of a consumer under a policy,
    its release aside (`verdict_class`'s memo key with the history's identity), kept per
    consumer and policy: a check at upload asks it of 79 releases."""
    token = _known_token(consumer, policy)
    if token is not None:
        return token
    registry = consumer.registry
    assert registry is not None
    ops, kernels, revived = registry_identities(registry)
    value = (
        ops,
        consumer.loader,
        consumer.rejects_unknown_attrs,
        consumer.validates_library,
        consumer.looks_up_op_list_first,
        consumer.lifted_reads_empty,
        consumer.graph_def_version,
        consumer.graph_def_min_producer,
        consumer.checkpoint_version,
        consumer.checkpoint_min_producer,
        policy.banned(consumer.graph_def_version) is not None,
        same_answer_strict(consumer, policy),
        kernels,
        revived,
        consumer.gpu,
    )
    token = _TOKEN_OF.get(value)
    if token is None:
        if len(_TOKEN_OF) >= 4096:
            _TOKEN_OF.clear()
        token = _TOKEN_OF[value] = Identity()
    if len(_TOKENS) >= 4096:
        _TOKENS.clear()
    _TOKENS[id(consumer), id(policy)] = (consumer, policy, token)
    return token


def _class_of(
    artifact: Artifact, consumer: Consumer, history: History, banned: Hashable
) -> tuple[Hashable, bool]:
    """`verdict_class`, computed; and whether it read the consumer's release."""
    _, graph, tf2_load = read_graph(artifact, consumer)
    versions = graph.versions if graph is not None else None
    graph_versions: object = None
    if versions is not None and not tf2_load:
        gdv, min_producer = consumer.graph_def_version, consumer.graph_def_min_producer
        refused = bool(check_versions(versions, gdv, min_producer))
        graph_versions = (gdv, min_producer) if refused else "accepts"
    checkpoint: object = None
    if artifact.checkpoint is not None:
        ckpt, min_producer = consumer.checkpoint_version, consumer.checkpoint_min_producer
        refused = bool(check_versions(artifact.checkpoint.versions, ckpt, min_producer))
        checkpoint = (ckpt, min_producer) if refused else "accepts"
    _, ids = op_signature(graph, consumer, history)
    deprecation = deprecation_key(graph, consumer, judged_at(artifact, graph, consumer))
    by_release = graph is not None and not isinstance(ids, int)  # some op not registered
    kernels = _kernel_signature(graph, consumer)
    found = (
        identity(history),
        consumer.loader,
        consumer.rejects_unknown_attrs,
        *_loader_traits(artifact, graph, consumer),
        deprecation,
        ids,
        graph_versions,
        checkpoint,
        banned,
        kernels,
        _revival_signature(artifact, consumer),
        _kernel_change_signature(graph, consumer, history),
        _output_shape_signature(graph, consumer, history),
        _xla_signature(graph, consumer, history),
        _data_type_signature(graph, consumer),
        _device_signature(graph, consumer),
    )
    return found, by_release


def _loader_traits(
    artifact: Artifact, graph: Graph | None, consumer: Consumer
) -> tuple[bool | None, bool | None, bool | None]:
    """What the consumer's loader does that the artifact can meet, None where it cannot:
    checking function bodies at load (`order.place`: findings in a library function), the
    stripped op list looked up first (`order.phases`: a SavedModel), a lifted variable
    read unfilled (`runs`: tf.saved_model.load). A frozen graph without functions meets
    none, so releases that differ only there (1.13-1.15, 2.5-2.8) are of one class."""
    return (
        consumer.validates_library if graph is not None and graph.functions else None,
        consumer.looks_up_op_list_first if artifact.format == "savedmodel" else None,
        consumer.lifted_reads_empty if consumer.loader == Loader.SAVED_MODEL_V2 else None,
    )


def _device_signature(graph: Graph | None, consumer: Consumer) -> Hashable:
    """Which top-level pins the consumer cannot place (`device.unavailable` reads `gpu`)."""
    if graph is None or not graph.devices:
        return None
    return tuple(unplaceable(p.device, consumer.gpu) for p in graph.devices if p.function is None)


def _data_type_signature(graph: Graph | None, consumer: Consumer) -> Hashable:
    """What the consumer's DataType enum says of the graph's newer types, and its minor
    (the int4 Cast kernel is judged by release: `worker.compat.data_types`)."""
    registry = consumer.registry
    if graph is None or registry is None or registry.data_types is None:
        return None
    uses = data_type_uses(graph)
    if not uses:
        return None
    types = registry.data_types
    names = sorted({name for _, _, name in uses})
    release = minor(consumer.tensorflow) if consumer.tensorflow else None
    return ("dtypes", release, tuple((n, types.lacks(n), types.unmeasured(n)) for n in names))


def _xla_signature(graph: Graph | None, consumer: Consumer, history: History) -> Hashable:
    """What the consumer's release's XlaCallModule runs, as measured (`xla.*` findings
    read the release, which the registry does not say: 2.16 and 2.19 share the OpDef
    and read different StableHLO modules), for graphs that hold one."""
    if graph is None or consumer.tensorflow is None:
        return None
    if not holds_xla(graph):
        return None
    return ("xla", history.xla_call_module(consumer.tensorflow))


def _output_shape_signature(graph: Graph | None, consumer: Consumer, history: History) -> Hashable:
    """What the consumer's release infers for the graph's nodes that carry recorded
    shapes (`import.output-shapes` reads the release's measured shape functions, which
    the registry does not say: 2.1 and 2.2 share FusedBatchNormGrad's OpDef and not its
    shapes), and whether it imports the graph at all."""
    if graph is None or not graph.shaped_nodes or consumer.tensorflow is None:
        return None
    measured = []
    for op in sorted({n.op for n in graph.shaped_nodes}):
        cases = history.shape_cases(op, consumer.tensorflow)
        measured.append((op, tuple((c.case_id, c.outputs) for c in cases or ())))
    return (consumer.tf_serving, tuple(measured))


def _kernel_change_signature(graph: Graph | None, consumer: Consumer, history: History) -> Hashable:
    """Which of the graph's (op, dtype) pairs the catalog measured to compute otherwise in
    the consumer's release (`kernel.changed` reads the release, which the registry alone
    does not say: 2.3 and 2.4 can share every OpDef of a model and differ in Max), or to
    answer otherwise from run to run there (`kernel.nondeterministic`).
    Only pairs of an op with a measured change are asked of the release, found once per
    distinct set of kinds and history (`_changed_pairs`): a fleet change asks this of
    every model for each release it checks, and few ops have a measured change."""
    if graph is None or consumer.tensorflow is None:
        return None
    pairs = _changed_pairs(graph, history)
    if not pairs:
        return ()
    number = _kind_set(graph)[0]
    key = (number, identity(history), consumer.tensorflow)
    hit = _KERNEL_CHANGES.get(key)
    if hit is not None:
        return hit
    release = consumer.tensorflow
    # a change's severity and the outputs it touches decide the finding, so they key it;
    # so does a pair measured nondeterministic there (`kernel.nondeterministic`) and on
    # which inputs, and the release its message and fix name
    found = tuple(
        (p, c.met_on, c.outputs)
        for p in pairs
        if (c := history.kernel_change(p[0], p[1], release)) is not None
    ) + tuple(
        ("nondeterministic", p, n.met_on, n.release, n.steady_from, n.outputs)
        for p in pairs
        if (n := history.kernel_nondeterminism(p[0], p[1], release)) is not None
    )
    if len(_KERNEL_CHANGES) >= _KERNEL_GAPS_LIMIT:
        _KERNEL_CHANGES.clear()
    _KERNEL_CHANGES[key] = found
    return found


def _changed_pairs(graph: Graph, history: History) -> tuple[tuple[str, str], ...]:
    """The graph's (op, dtype) pairs, sorted, whose op has a measured kernel change in
    some release (`History.kernel_changed_ops`): what `_kernel_change_signature` asks of
    each release. Remembered per distinct set of kinds and history, so a model's kinds
    are read once, not once per release."""
    number, kinds = _kind_set(graph)
    key = (number, identity(history))
    hit = _CHANGED_PAIRS.get(key)
    if hit is not None:
        return hit
    changed = history.kernel_changed_ops()
    # the keys a kind is measured under read only its attrs' types, which the kind set's
    # typed key holds
    found = tuple(
        sorted(
            {
                (k.op, d)
                for k in kinds
                if k.op in changed
                for d in history.kernel_dtypes(k.op, k.attrs)
            }
        )
    )
    if len(_CHANGED_PAIRS) >= _KERNEL_GAPS_LIMIT:
        _CHANGED_PAIRS.clear()
    _CHANGED_PAIRS[key] = found
    return found


# (gpu, (op, typed attrs, reason) of each kind without a kernel): `_kernel_signature`
_Gaps = tuple[bool, frozenset[tuple[str, Hashable, str]]]


def _kernel_signature(graph: Graph | None, consumer: Consumer) -> Hashable:
    """Which of the graph's kinds (op and attrs) the consumer has no kernel for, and
    whether it has a GPU: what kernel findings read of the consumer (two releases whose
    tables differ only in types the model does not use are of one class). Remembered
    per distinct set of kinds and kernel table: models of one exporter share both."""
    registry = consumer.registry
    if graph is None or registry is None or registry.kernels is None:
        return None
    kinds = _kind_set(graph)
    ops_token, kernels_token, _ = registry_identities(registry)
    key = (kinds[0], kernels_token, ops_token, consumer.gpu)
    hit = _KERNEL_GAPS.get(key)
    if hit is not None:
        return hit
    if len(_KERNEL_GAPS) >= _KERNEL_GAPS_LIMIT:
        _KERNEL_GAPS.clear()
    # The registry this graph was last judged by, with GPU or without: releases come in
    # order (an upload's 79, a fleet's), and next to each other they mostly define the
    # graph's ops and kernels alike, which makes the gaps equal.
    judged = _JUDGED_KERNELS.of(graph)
    last = judged.get(consumer.gpu)
    kept: tuple[frozenset[str], _Gaps] | None = None
    if last is not None:
        differing = _kernels_differing(last[0], registry)
        if differing is not None:
            if graph_facts(graph).ops.isdisjoint(differing):
                judged[consumer.gpu] = (registry, last[1])
                _KERNEL_GAPS[key] = last[1]
                return last[1]
            kept = (differing, cast(_Gaps, last[1]))
    found = _KERNEL_GAPS[key] = _kernel_gaps_of(graph, kinds[1], registry, consumer.gpu, kept)
    judged[consumer.gpu] = (registry, found)
    return found


def _kernel_gaps_of(
    graph: Graph,
    kinds: tuple[NodeKind, ...],
    registry: Registry,
    gpu: bool,
    kept: tuple[frozenset[str], _Gaps] | None = None,
) -> _Gaps:
    """`_kernel_signature`, computed; with `kept`, the ops another registry defines or
    has kernels for otherwise (`_kernels_differing`) and the gaps found under it, only
    the kinds of those ops are looked up: a kind of any other op finds the same OpDef
    and kernels in both, so the same gap (next releases differ in one or two of a
    model's twenty-odd ops)."""
    kernels = registry.kernels
    assert kernels is not None
    memo = kernel_gaps(kernels, gpu)
    # the registry's OpDef of each op, as the op signature looked them up (None: the op
    # is not registered, and no kernel is looked up for it)
    found = registry_lookup(graph, registry.ops).found
    defined = dict(zip(graph_facts(graph).sorted_ops, found, strict=True))
    same: frozenset[tuple[str, Hashable, str]] = frozenset()
    if kept is not None:
        differing, (_, before) = kept
        same = frozenset(m for m in before if m[0] not in differing)
        kinds = tuple(k for k in kinds if k.op in differing)
    gaps = []
    for kind in kinds:
        op = defined[kind.op]
        if op is None:
            continue
        at = (kind.op, kind.key[1], identity(op))
        gap = memo[at] if at in memo else kernel_gap(kind, op, kernels, gpu, memo)
        if gap:
            gaps.append((kind, gap))
    # the reason too: the message says which types the consumer's kernels take
    missing = same.union((kind.op, _typed(kind.attrs), gap.reason) for kind, gap in gaps)
    return (gpu, missing)


_JUDGED_KERNELS: ObjectTable[bool, tuple[Registry, Hashable]] = ObjectTable("judged_kernels")
_KERNELS_DIFFERING: dict[tuple[Identity, ...], frozenset[str] | None] = remembered({})


def _kernels_differing(registry: Registry, other: Registry) -> frozenset[str] | None:
    """The ops whose OpDef or kernel table differ between two registries, once per pair
    once asked about often (`memo.asked_often`); None when not known (not yet, or a
    manifest's registry): a graph none of whose ops is among them has the same kernel
    gaps in both. The catalog's releases share a kernel table object where they have the same table
    (`worker.catalog.kernels`), so another object counts as another table."""
    key = (*registry_identities(registry), *registry_identities(other))
    if key in _KERNELS_DIFFERING:
        return _KERNELS_DIFFERING[key]
    if not asked_often(key):
        return None
    found = ops_differing(registry.ops, other.ops, patience=1)
    mine, theirs = registry.kernels, other.kernels
    if found is not None and mine is not None and theirs is not None and mine is not theirs:
        found = found | {
            op for op in mine.keys() | theirs.keys() if mine.get(op) is not theirs.get(op)
        }
    elif mine is not theirs:
        found = None
    if len(_KERNELS_DIFFERING) >= 1024:
        _KERNELS_DIFFERING.clear()
    _KERNELS_DIFFERING[key] = found
    return found


@per_object
def _kind_set(graph: Graph) -> tuple[int, tuple[NodeKind, ...]]:
    """A number per distinct set of (op, typed attrs) the graph's kinds hold, and one kind
    of each: what a kernel lookup and a kernel change read of a graph (which attrs a node
    sets and the types they hold, not their other values: a Const's tensor makes no
    other kernel, so models that differ in their constants share the number)."""
    distinct: dict[tuple[str, Hashable], NodeKind] = {}
    for kind in graph.kinds:
        distinct.setdefault((kind.op, _typed_kind(kind)), kind)
    names = frozenset(distinct)
    number = _KIND_SET_NUMBERS.get(names)
    if number is None:
        if len(_KIND_SET_NUMBERS) >= 20_000:
            _KIND_SET_NUMBERS.clear()
        number = _KIND_SET_NUMBERS[names] = next(_KIND_SET_COUNTER)  # never reused
    return number, tuple(distinct.values())


@per_kind_attrs(100_000)
def _typed_kind(kind: NodeKind) -> Hashable:
    """`_typed` of the kind's attrs, per their canonical text (`NodeKind.key`)."""
    return _typed(kind.attrs)


def _typed(attrs: Mapping[str, AttrJSON]) -> Hashable:
    """Every attr's name, with the types its value holds: all that `kernel_gap` (its
    type constraints, with the OpDef's default for an attr not set) and `dtype_of` read
    of a kind's attrs."""
    return tuple(sorted((name, _held_types(value)) for name, value in attrs.items()))


def _held_types(value: AttrJSON) -> Hashable:
    listed = value.get("list")
    types = listed.get("type") if isinstance(listed, dict) else None
    return (value.get("type"), tuple(types) if isinstance(types, list) else None)


_KIND_SET_NUMBERS: dict[frozenset[tuple[str, Hashable]], int] = remembered({})
_KIND_SET_COUNTER = itertools.count(1)
_KERNEL_GAPS: dict[tuple[int, Identity, Identity, bool], Hashable] = remembered({})
_KERNEL_GAPS_LIMIT = 8192
_KERNEL_CHANGES: dict[tuple[int, Identity, str], Hashable] = remembered({})
_CHANGED_PAIRS: dict[tuple[int, Identity], tuple[tuple[str, str], ...]] = remembered({})


def _revival_signature(artifact: Artifact, consumer: Consumer) -> Hashable:
    """Whether tf.saved_model.load revives each object that needs it (object findings)."""
    registry = consumer.registry
    if registry is None or registry.revived is None or consumer.loader != Loader.SAVED_MODEL_V2:
        return None
    return tuple(
        (obj.node, why)
        for m in artifact.meta_graphs
        for obj, why in revival_gaps(m, registry.revived)
    )
