"""Facts a check asks again and again, remembered per object: one graph's, one registry's.

A fleet change checks every indexed model against every changed consumer, and
an upload checks one model against 79 releases: most of what a check asks of a
graph (which ops it holds, which ops its edges touch, which kinds a loader
validates) does not depend on the consumer, and most of what it asks of a
registry (which ops it names, which of a producer's OpDefs it defines alike)
does not depend on the model. Each is computed once per object and kept while
the object lives in the cache (the cache holds it, so its id names nothing else).

The gates built on them only ever skip work whose result is known to be empty; what they
let through is checked in full (`tests/compat/test_memo.py` compares both ways).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import NamedTuple, TypeVar

from worker.model.artifact import Edge, Graph, NodeKind, OpDef

_T = TypeVar("_T")
_OP = attrgetter("op")
# Entries per table that holds graphs or artifacts (here and in the checks' own memos):
# a fleet pass needs the current model's only, and a long-lived worker must not keep
# hundreds of large graphs alive for nothing.
HELD_LIMIT = 256
_LIMIT = HELD_LIMIT

Table = dict[Hashable, tuple[tuple[object, ...], object]]
_Table = Table
_D = TypeVar("_D", bound=dict)  # type: ignore[type-arg]
_MEMOS: list[dict] = []  # type: ignore[type-arg]


def remembered(table: _D) -> _D:
    """Declare a module's memo table, so `forget_all` empties it too."""
    _MEMOS.append(table)
    return table


def _memo() -> _Table:
    return remembered({})


def keep(
    table: _Table, key: Hashable, owners: tuple[object, ...], value: _T, limit: int = _LIMIT
) -> _T:
    """Remember `value` under `key`: the ids of `owners` (held by the entry, so no other
    object can take those ids while it stays) and whatever else the value depends on.
    A table holds at most `limit` entries (`HELD_LIMIT` where entries hold graphs). Each
    accessor looks its table up first, inline (`hit[1]` of `table.get(key)`): a hit is
    the hot path."""
    if len(table) >= limit:
        table.clear()
    table[key] = (owners, value)
    return value


def forget_all() -> None:
    """Empty every memo of the checks (a new process's state, for benchmarks and tests)."""
    for table in _MEMOS:
        table.clear()


@dataclass(frozen=True)
class GraphFacts:
    """What a graph holds, whoever reads it."""

    ops: frozenset[str]  # every kind's op, function-call ops included
    library_ops: frozenset[str]  # ops that are not calls of a library function
    sorted_ops: tuple[str, ...]  # `ops`, sorted
    op_set: int  # a number per distinct `sorted_ops`: models of one exporter share it


_GRAPHS = _memo()
_OP_SETS: dict[tuple[str, ...], int] = remembered({})
# Each key holds a model's op names (a kilobyte or so): a long-lived worker keeps ~20 MB.
_OP_SETS_LIMIT = 20_000
_NEXT = [0]  # the last number given (op sets here, identities below): never reused


def graph_facts(graph: Graph) -> GraphFacts:
    hit = _GRAPHS.get(id(graph))
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    ops = frozenset(map(_OP, graph.kinds))
    names = tuple(sorted(ops))
    op_set = _OP_SETS.get(names)
    if op_set is None:
        if len(_OP_SETS) >= _OP_SETS_LIMIT:
            _OP_SETS.clear()
        _NEXT[0] += 1
        op_set = _OP_SETS[names] = _NEXT[0]
    facts = GraphFacts(ops, ops - set(graph.functions), names, op_set)
    return keep(_GRAPHS, id(graph), (graph,), facts)


_AT = _memo()


def edges_at(edges: tuple[Edge, ...]) -> dict[int, tuple[int, ...]]:
    """kind index -> the positions (ascending) of the edges with that kind at either end.
    Keyed on the edges alone: models read from the index share one edges tuple per
    distinct edge list, so this is computed once per distinct edge list."""
    hit = _AT.get(id(edges))
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    found: dict[int, list[int]] = {}
    for position, edge in enumerate(edges):
        found.setdefault(edge.src, []).append(position)
        if edge.dst != edge.src:
            found.setdefault(edge.dst, []).append(position)
    at = {kind: tuple(positions) for kind, positions in found.items()}
    return keep(_AT, id(edges), (edges,), at)


def edges_touching(graph: Graph, ops: Iterable[str]) -> list[int]:
    """The positions (ascending) of the edges with a kind of one of `ops` at either end."""
    at, by_op = edges_at(graph.edges), kinds_by_op(graph)
    return sorted({p for op in ops for kind in by_op.get(op, ()) for p in at.get(kind, ())})


_BY_OP = _memo()


def kinds_by_op(graph: Graph) -> dict[str, list[int]]:
    """op -> the indexes of the graph's kinds of that op (anywhere)."""
    hit = _BY_OP.get(id(graph))
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    found: dict[str, list[int]] = {}
    for index, kind in enumerate(graph.kinds):
        found.setdefault(kind.op, []).append(index)
    return keep(_BY_OP, id(graph), (graph,), found)


_KINDS = _memo()


def kinds_in_scope(graph: Graph, reachable: frozenset[str], top_level: bool) -> list[NodeKind]:
    """The kinds a loader validates: the top-level graph's (unless `top_level` is false)
    and those of the functions in `reachable`. Callers must not change the list."""
    key = (id(graph), id(reachable), top_level)
    hit = _KINDS.get(key)
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    kinds = [
        k for k in graph.kinds if (k.function is None and top_level) or k.function in reachable
    ]
    return keep(_KINDS, key, (graph, reachable), kinds)


_REQUEST = _memo()


def ops_in(graph: Graph, functions: frozenset[str], top_level: bool) -> frozenset[str]:
    """The ops of `kinds_in_scope(graph, functions, top_level)`."""
    key = (id(graph), id(functions), top_level)
    hit = _REQUEST.get(key)
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    ops = frozenset(map(_OP, kinds_in_scope(graph, functions, top_level)))
    return keep(_REQUEST, key, (graph, functions), ops)


_NAMES = _memo()


def registered_names(ops: Mapping[str, OpDef]) -> frozenset[str]:
    """The op names a registry defines (membership without converting any OpDef)."""
    hit = _NAMES.get(id(ops))
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    return keep(_NAMES, id(ops), (ops,), frozenset(ops))


_LOOKUPS = _memo()
# Keyed by the graph's op set, not the graph: models of one exporter share their ops, so
# a fleet pass looks each op set up once per registry. Entries hold only the registry
# and its OpDefs, which the registry holds anyway.
_LOOKUPS_LIMIT = 8192


class Lookup(NamedTuple):
    """A graph's ops in one registry (a tuple: one is built per model and registry)."""

    found: tuple[OpDef | None, ...]  # the OpDef of each sorted op; None: not registered
    # when all are registered, a number standing for their identities (keys that equal
    # OpDefs of different registries share: registries share their OpDef objects, and
    # equal identities get equal numbers); None otherwise
    ids: int | None
    deprecates: bool  # some OpDef has a deprecation version


def registry_lookup(graph: Graph, ops: Mapping[str, OpDef]) -> Lookup:
    """The registry's OpDefs of `graph_facts(graph).sorted_ops`, remembered per op set
    and registry."""
    facts = graph_facts(graph)
    key = (facts.op_set, id(ops))
    hit = _LOOKUPS.get(key)
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    names = facts.sorted_ops
    get_many = getattr(ops, "get_many", None)  # the catalog's registries batch it
    found: tuple[OpDef | None, ...] = (
        get_many(names) if get_many is not None else tuple(map(ops.get, names))
    )
    # `all`: an OpDef is true, None false (`None in found` called OpDef.__eq__ per op)
    ids = _number(tuple(map(id, found))) if all(found) else None
    versions = {op.deprecation_version for op in found if op is not None}
    deprecates = bool(versions) and versions != {None}
    return keep(_LOOKUPS, key, (ops,), Lookup(found, ids, deprecates), _LOOKUPS_LIMIT)


_NUMBERS: dict[tuple[int, ...], int] = remembered({})


def _number(identities: tuple[int, ...]) -> int:
    """A small number per distinct tuple of identities: keys hash it instead of the tuple.
    Never reused, so a number names one tuple even after the table is emptied."""
    found = _NUMBERS.get(identities)
    if found is None:
        if len(_NUMBERS) >= 200_000:
            _NUMBERS.clear()
        _NEXT[0] += 1
        found = _NUMBERS[identities] = _NEXT[0]
    return found


_CHANGED = _memo()
# Its entries hold a producer's op list and a registry, both shared by many models (the
# index decodes one op list per distinct list): a fleet pass meets each pair again and
# again, and at `HELD_LIMIT` it computed a pair four times over (bench/fleet_impact.py).
_CHANGED_LIMIT = 4096  # an upload judges ~30 registries: ~130 models' op lists held


def changed_against(
    producer_ops: Mapping[str, OpDef],
    ops: Mapping[str, OpDef],
    same: Callable[[OpDef, OpDef], bool],
) -> frozenset[str]:
    """The ops of a producer's op list that a registry lacks or defines otherwise."""
    key = (id(producer_ops), id(ops))
    hit = _CHANGED.get(key)
    if hit is not None:
        return hit[1]  # type: ignore[return-value]
    changed = set()
    for name, theirs in producer_ops.items():
        mine = ops.get(name)
        if mine is None or not same(mine, theirs):
            changed.add(name)
    return keep(_CHANGED, key, (producer_ops, ops), frozenset(changed), _CHANGED_LIMIT)
