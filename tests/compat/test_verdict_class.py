"""Consumers of one verdict class get the same status and the same errors on a model.

A fleet change checks each model once per class (`worker.fleet.impact.assess`), so a
class that joined two consumers TensorFlow treats differently would hide a break.
Held here against every real fixture and every catalog release with a registry (each
patch release, each loader), and for a fleet policy that bans some releases.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import pytest

from tests.compat.test_memo import fixture_artifacts
from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.compat.kernel_changes import dtype_of
from worker.compat.kernels import kernel_gap
from worker.compat.memo import forget_all, graph_facts, registry_identities
from worker.compat.policy import BannedRelease, Policy
from worker.compat.verdict_class import (
    _KERNELS_DIFFERING,
    _class_of,
    _kernel_gaps_of,
    _kernel_signature,
    _kind_set,
    _typed,
    release_classes,
    verdict_class,
)
from worker.model.artifact import ArgDef, Artifact, Graph, MetaGraph, NodeKind, OpDef, VersionDef
from worker.model.consumer import Consumer, Loader, Registry


def every_consumer() -> list[Consumer]:
    catalog = load_catalog()
    return [
        catalog.consumer(release.version, loader)
        for release in catalog.releases
        if release.registry_version is not None
        for loader in Loader
    ]


def outcome(artifact: Artifact, consumer: Consumer, policy: Policy) -> tuple[str, list[str]]:
    verdict = check_artifact(artifact, consumer, load_catalog(), policy)
    return str(verdict.status), [f.message for f in verdict.findings if f.severity == "error"]


POLICIES = {
    "no policy": Policy(),
    "bans 2.12.0 and 2.17.0": Policy(
        bad_consumers=(
            BannedRelease(1395, "TensorFlow 2.12.0", "a leak"),
            BannedRelease(1882, "TensorFlow 2.17.0", "a crash"),
        )
    ),
}


@pytest.mark.parametrize("policy_name", POLICIES)
def test_consumers_of_one_class_get_the_same_status_and_errors(policy_name: str) -> None:
    policy = POLICIES[policy_name]
    consumers = every_consumer()
    catalog = load_catalog()
    grouped = 0
    for artifact in fixture_artifacts():
        classes: dict[object, list[Consumer]] = defaultdict(list)
        for consumer in consumers:
            key = verdict_class(artifact, consumer, catalog, policy)
            if key is not None:
                classes[key].append(consumer)
        for members in classes.values():
            first = outcome(artifact, members[0], policy)
            for other in members[1:]:
                grouped += 1
                assert outcome(artifact, other, policy) == first, (
                    artifact.path,
                    members[0].name,
                    other.name,
                )
    assert grouped > 10_000  # the classes do join consumers (patch releases, loaders)


def test_no_class_is_promised_for_a_consumer_without_a_registry() -> None:
    catalog = load_catalog()
    (artifact, *_) = fixture_artifacts()
    old = catalog.consumer("1.12")
    assert old.registry is None
    assert verdict_class(artifact, old, catalog) is None


# tf.saved_model.load judges deprecations at its own GraphDef version: two such consumers
# on either side of an op's deprecation must not share a class (nor shared findings).
DEPRECATED = OpDef("OldOp", outputs=(ArgDef("y", type="DT_FLOAT"),), deprecation_version=20)


def v2_consumer(graph_def_version: int, registry: Registry) -> Consumer:
    return Consumer(
        f"v2-{graph_def_version}", "2.99.0", graph_def_version, registry=registry,
        loader=Loader.SAVED_MODEL_V2,
    )  # fmt: skip


def test_consumers_either_side_of_a_deprecation_are_classed_and_judged_apart() -> None:
    forget_all()
    graph = Graph(VersionDef(10), 1, (NodeKind("OldOp", {}, 0, 1, "old"),), ())
    meta = MetaGraph(("serve",), graph, producer_ops={"OldOp": DEPRECATED})
    artifact = Artifact("m", "savedmodel", 0, "", meta_graphs=(meta,))
    registry = Registry({"OldOp": DEPRECATED}, "test")
    before, after = v2_consumer(19, registry), v2_consumer(21, registry)
    assert verdict_class(artifact, before) != verdict_class(artifact, after)
    verdicts = [check_artifact(artifact, c) for c in (before, after, before)]
    assert [v.loads for v in verdicts] == [True, False, True]
    assert "op.deprecated" in str(verdicts[1].to_json())


def test_consumers_that_deprecate_nothing_the_model_uses_share_a_class() -> None:
    graph = Graph(VersionDef(10), 1, (NodeKind("NewOp", {}, 0, 1, "new"),), ())
    meta = MetaGraph(("serve",), graph, producer_ops={})
    artifact = Artifact("m", "savedmodel", 0, "", meta_graphs=(meta,))
    registry = Registry({"NewOp": OpDef("NewOp", outputs=(ArgDef("y", type="DT_FLOAT"),))}, "t")
    assert verdict_class(artifact, v2_consumer(19, registry)) == verdict_class(
        artifact, v2_consumer(21, registry)
    )


def test_a_remembered_class_is_the_class_computed_anew() -> None:
    """Classes are remembered per artifact and consumer profile (the release aside where
    every op is registered): each equals the class computed for that very consumer."""
    catalog = load_catalog()
    consumers = every_consumer()
    forget_all()
    compared = 0
    for artifact in fixture_artifacts()[::2]:
        for consumer in consumers:
            key = verdict_class(artifact, consumer, catalog)
            if key is None:
                continue
            assert key == _class_of(artifact, consumer, catalog, (False, False))[0], (
                artifact.path,
                consumer.name,
            )
            compared += 1
    assert compared > 10_000


def test_release_classes_are_each_release_s_own_class() -> None:
    """An upload's 79 releases, classed in a pass that skips a minor's patch releases
    where it can: each class is the one `verdict_class` gives that release."""
    catalog = load_catalog()
    releases = catalog.range_consumers()
    compared = 0
    forget_all()
    for artifact in fixture_artifacts():
        found = release_classes(artifact, releases, catalog)
        for consumer, key in zip(releases, found, strict=True):
            if verdict_class(artifact, consumer, catalog) is None:
                assert key is None, (artifact.path, consumer.name)
                continue
            fresh = _class_of(artifact, consumer, catalog, (False, False))[0]
            assert key == fresh, (artifact.path, consumer.name)
            compared += 1
    assert compared > 10_000


def test_releases_that_share_a_registry_are_classed_apart_where_an_op_was_removed() -> None:
    """An op the registry lacks is `op.removed` for a release after its last one and
    `op.not-registered` before: one registry, two releases, two classes."""
    forget_all()
    catalog = load_catalog()
    after = catalog.consumer("2.21")
    assert after.registry is not None and "Rpc" not in after.registry.ops
    assert catalog.op_last_release("Rpc") == "2.4.4"
    before = replace(after, name="before", tensorflow="2.4.0")  # same registry object
    graph = Graph(VersionDef(1500), 1, (NodeKind("Rpc", {}, 0, 1, "rpc"),), ())
    artifact = Artifact("m", "graphdef", 0, "", graph=graph)
    classes = [verdict_class(artifact, c, catalog) for c in (after, before, after)]
    assert classes[0] != classes[1] and classes[0] == classes[2]
    codes = [
        {f.code for f in check_artifact(artifact, c, catalog).findings} for c in (after, before)
    ]
    assert "op.removed" in {str(c) for c in codes[0]}
    assert "op.not-registered" in {str(c) for c in codes[1]}


def test_kinds_of_equal_typed_attrs_have_equal_kernel_answers() -> None:
    """A class reads a graph's kernels through one kind per op and typed attrs
    (`_typed`): kinds that share them must get the same kernel gap, reason included, in
    every release, and the same kernel-change dtype, whatever their other attr values."""
    registries = [
        r
        for r in {id(c.registry): c.registry for c in every_consumer()}.values()
        if r is not None and r.kernels is not None
    ]
    groups: dict[tuple[str, object], list[NodeKind]] = defaultdict(list)
    for artifact in fixture_artifacts():
        for graph in artifact.graphs():
            for kind in graph.kinds:
                groups[kind.op, _typed(kind.attrs)].append(kind)
    alike = [kinds for kinds in groups.values() if len({k.key[1] for k in kinds}) > 1]
    assert len(alike) > 50  # kinds that differ in other values (a Const's tensor) do occur
    for kinds in alike:
        assert len({dtype_of(k) for k in kinds}) == 1, kinds[0].op
        for registry in registries[:: max(1, len(registries) // 12)]:
            assert registry is not None and registry.kernels is not None
            op = registry.ops.get(kinds[0].op)
            for gpu in (False, True):
                gaps = {kernel_gap(k, op, registry.kernels, gpu) for k in kinds}
                assert len(gaps) == 1, (kinds[0].op, registry.source, gpu)


def test_kernel_gaps_carried_from_the_release_before_are_the_gaps_found_anew() -> None:
    """Walking the releases in order, a graph's kernel gaps are carried from the registry
    it was last judged by, with only the kinds of the ops the two define otherwise looked
    up again (`_kernel_signature`): each equals the gaps found anew from that registry."""
    forget_all()
    catalog = load_catalog()
    registries = [
        c.registry
        for c in every_consumer()
        if c.loader == Loader.SAVED_MODEL_V1 and c.registry and c.registry.kernels is not None
    ]
    consumers = [replace(catalog.consumer("2.21"), registry=r) for r in registries]
    graphs = [g for a in fixture_artifacts() for g in a.graphs()]
    carried = 0
    for _ in range(2):  # the second time round every pair of registries is asked often
        for graph in graphs:
            for gpu in (False, True):
                before = None
                for consumer in consumers:
                    consumer = replace(consumer, gpu=gpu)
                    registry = consumer.registry
                    assert registry is not None
                    found = _kernel_signature(graph, consumer)
                    fresh = _kernel_gaps_of(graph, _kind_set(graph)[1], registry, gpu)
                    assert found == fresh, (graph.node_count, registry.source, gpu)
                    differing = before and _KERNELS_DIFFERING.get(
                        (*registry_identities(before), *registry_identities(registry))
                    )
                    carried += bool(differing and not graph_facts(graph).ops.isdisjoint(differing))
                    before = registry
    assert carried > 100  # graphs whose ops two next releases define otherwise do occur
