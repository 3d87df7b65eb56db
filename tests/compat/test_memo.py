"""The checks' memos change no verdict: a check with every memo warm (filled by other
models holding the same kinds under other names) equals the same check in a fresh
process, finding for finding, message for message, on every real fixture."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from tests.truth import FIXTURE_SETS, artifacts_doc, read_artifacts
from worker.catalog.catalog import load_catalog
from worker.compat import memo
from worker.compat.check import check_artifact
from worker.compat.memo import forget_all
from worker.compat.nodes import NodeContext, check_node_kind
from worker.model.artifact import ArgDef, Artifact, AttrDef, Graph, MetaGraph, NodeKind, OpDef
from worker.model.consumer import Loader
from worker.model.verdict import Verdict

# Releases on both sides of every loader behaviour: 1.15 (unknown attrs fatal), 2.4 (the
# last to reject them), 2.12 and 2.21 (ignore them; the newest registry).
RELEASES = ("1.15", "2.4", "2.12", "2.21")


def renamed_graph(graph: Graph, prefix: str) -> Graph:
    kinds = tuple(replace(k, example=f"{prefix}{k.example}") for k in graph.kinds)
    return replace(graph, kinds=kinds)


def renamed(artifact: Artifact, prefix: str) -> Artifact:
    """The same model with other node names (new objects: no memo keyed on identity hits)."""
    return replace(
        artifact,
        graph=renamed_graph(artifact.graph, prefix) if artifact.graph is not None else None,
        meta_graphs=tuple(
            MetaGraph(**{**vars(m), "graph": renamed_graph(m.graph, prefix)})
            for m in artifact.meta_graphs
        ),
    )


def fixture_artifacts() -> list[Artifact]:
    found: list[Artifact] = []
    for fixture_set in FIXTURE_SETS:
        for artifact_id in sorted(artifacts_doc(fixture_set)):
            found += read_artifacts(fixture_set, artifact_id)
    return [a for a in found if a.format != "tflite"]


def as_data(verdict: Verdict) -> object:
    return verdict.to_json()


@pytest.mark.parametrize("release", RELEASES)
def test_warm_memos_give_the_verdicts_of_a_fresh_process(release: str) -> None:
    catalog = load_catalog()
    consumers = [catalog.consumer(release, loader) for loader in Loader]
    artifacts = fixture_artifacts()
    assert len(artifacts) > 150
    forget_all()
    for artifact in artifacts:  # other models, same kinds: fill every memo first
        other = renamed(artifact, "other/")
        for consumer in consumers:
            check_artifact(other, consumer, catalog)
    warm = [as_data(check_artifact(a, c, catalog)) for a in artifacts for c in consumers]
    fresh = []
    for artifact in artifacts:
        for consumer in consumers:
            forget_all()  # and a copy of the model, so nothing kept on it is warm either
            fresh.append(as_data(check_artifact(renamed(artifact, ""), consumer, catalog)))
    differing = [(w, f) for w, f in zip(warm, fresh, strict=True) if w != f]
    assert not differing, differing[:2]
    # the warm pass named each model's own nodes, never the model that filled the memo
    assert not any("other/" in str(w) or "\\x00" in repr(w) for w in warm)


# One kind, two models: the memo keeps one template; each model reads its own names.
NEEDS_N = OpDef(
    "ConcatV2",
    inputs=(ArgDef("values", type_attr="T", number_attr="N"), ArgDef("axis", type_attr="Tidx")),
    outputs=(ArgDef("output", type_attr="T"),),
    attrs=(AttrDef("N", "int", has_minimum=True, minimum=2), AttrDef("T", "type")),
)


@pytest.mark.parametrize(
    "first, second",
    [
        (("a/concat", None), ("b/concat", None)),
        (("a/concat", "fn_1"), ("b/concat", "fn_2")),
    ],
)
def test_a_remembered_finding_names_each_models_own_node_and_function(
    first: tuple[str, str | None], second: tuple[str, str | None]
) -> None:
    forget_all()
    ctx = NodeContext(False, False, None, False)
    attrs = {"N": {"i": "1"}, "T": {"type": "DT_FLOAT"}, "Tidx": {"type": "DT_INT32"}}
    messages = []
    for example, function in (first, second):
        kind = NodeKind("ConcatV2", attrs, 2, 1, example, function)
        (missing_or_low, *rest) = check_node_kind(kind, NEEDS_N, None, ctx)
        messages.append(" ".join(f.message for f in (missing_or_low, *rest)))
    for (example, function), message in zip((first, second), messages, strict=True):
        assert f"node {example}" in message
        if function:
            assert f"in function {function}" in message
        assert "\x00" not in message
    assert "a/concat" not in messages[1]


def test_op_set_lookups_stay_bounded_and_right_over_many_models(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lookups are shared by models with one op set; a long-lived worker meets ever new
    ones: every table stays within its limit, and each answer is the registry's."""
    monkeypatch.setattr(memo, "_OP_SETS_LIMIT", 10)
    monkeypatch.setattr(memo, "_LOOKUPS_LIMIT", 5)
    memo.forget_all()
    registry = load_catalog().consumer("2.21").registry
    assert registry is not None
    names = sorted(registry.ops)[:60]
    for n in range(50):
        ops = [names[n], names[n + 1], "NoSuchOp"] if n % 2 else [names[n], names[n + 3]]
        graph = Graph(None, len(ops), tuple(NodeKind(op, {}, 0, 1, op) for op in ops), ())
        twin = Graph(None, len(ops), tuple(NodeKind(op, {}, 0, 1, "x") for op in ops), ())
        lookup = memo.registry_lookup(graph, registry.ops)
        assert memo.registry_lookup(twin, registry.ops) is lookup  # one op set, one lookup
        assert lookup.found == tuple(registry.ops.get(op) for op in sorted(set(ops)))
        assert (lookup.ids is None) == ("NoSuchOp" in ops)
        assert len(memo._OP_SETS) <= 10 and len(memo._LOOKUPS) <= 5


# Memo keys name objects by token: one per object, equal objects included.
@pytest.mark.parametrize(
    "make",
    [
        lambda: OpDef("A"),  # attributes of its own: the token lives on it
        lambda: {"A": NEEDS_N},  # none: the token table holds it
    ],
)
def test_a_token_stands_for_one_object_and_not_for_its_equals(make: Callable[[], object]) -> None:
    one, other = make(), make()
    assert one == other
    assert memo.identity(one) is memo.identity(one)
    assert memo.identity(one) is not memo.identity(other)


def test_an_object_a_token_table_let_go_never_gets_a_token_another_had() -> None:
    """Past its limit a table forgets what it held; objects then die and their addresses
    are reused: each new object still gets a token of its own."""
    tokens = memo.HeldTokens(3)
    seen = set()
    for n in range(50):
        ops = {f"Op{n}": NEEDS_N}  # a new object each time, dropped at the next
        token = tokens(ops)
        assert token not in seen and tokens(ops) is token
        seen.add(token)
        assert len(tokens) <= 3
