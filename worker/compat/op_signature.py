"""What the registry-level checks read of a consumer: its OpDefs of the ops a graph
uses, and the GraphDef version deprecations are judged at.

Shared by the checks (`compat.check`, which computes those findings once per distinct
signature) and the fleet's verdict classes (`compat.verdict_class`)."""

from __future__ import annotations

from collections.abc import Hashable

from packaging.version import Version

from worker.compat.memo import graph_facts, identity, registry_lookup
from worker.compat.subject import History
from worker.model.artifact import Artifact, Graph
from worker.model.consumer import Consumer, Loader


def judged_at(artifact: Artifact, graph: Graph | None, consumer: Consumer) -> int | None:
    """The GraphDef version deprecations are judged at.

    tf.saved_model.load imports the graph into a graph of the running binary, so
    its own GraphDef version counts, not the producer's (seen with 2.4 loading a
    producer-12 graph using an op deprecated at 13)."""
    if consumer.loader == Loader.SAVED_MODEL_V2 and artifact.format == "savedmodel":
        return consumer.graph_def_version
    return graph.versions.producer if graph and graph.versions else None


def deprecation_key(graph: Graph | None, consumer: Consumer, version: int | None) -> int | None:
    """The GraphDef version deprecations are judged at, where it can matter: only when the
    consumer deprecates some op the graph uses (else every version judges alike)."""
    registry = consumer.registry
    if graph is None or registry is None:
        return version
    return version if registry_lookup(graph, registry.ops).deprecates else None


def op_signature(
    graph: Graph | None, consumer: Consumer, history: History
) -> tuple[tuple[object, ...], Hashable]:
    """The consumer's OpDef of every op the artifact's graph uses (None where it has none,
    with whether the op was removed before the consumer's release: a different error):
    the OpDefs, and tokens standing for them (`memo.identity`), to key on."""
    registry = consumer.registry
    if registry is None or graph is None:
        return (), ()
    lookup = registry_lookup(graph, registry.ops)
    if lookup.ids is not None:
        return lookup.found, lookup.ids
    found = lookup.found
    release = consumer.tensorflow
    signature: list[object] = []
    for op, defined in zip(graph_facts(graph).sorted_ops, found, strict=True):
        if defined is not None:
            signature.append(defined)
            continue
        last = history.op_last_release(op)
        signature.append(bool(release and last and Version(last) < Version(release)))
    return tuple(signature), tuple(x if isinstance(x, bool) else identity(x) for x in signature)
