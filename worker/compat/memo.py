"""Facts a check asks again and again, remembered: one graph's, one registry's.

A fleet change checks every indexed model against every changed consumer, and
an upload checks one model against 79 releases: most of what a check asks of a
graph (which ops it holds, which ops its edges touch, which kinds a loader
validates) does not depend on the consumer, and most of what it asks of a
registry (which ops it names, which of a producer's OpDefs it defines alike)
does not depend on the model. Each is computed once and kept in one of two ways,
neither of which a reused `id()` can fool:

- a fact about one graph or one artifact is kept on that object (`per_object`,
  `ObjectTable`), as `functools.cached_property` keeps its value: it lives and
  dies with the object, so it needs no limit and holds nothing longer;
- a fact that joins several objects (a model's ops in a registry, a kind under
  an OpDef) is kept in a bounded module table (`remembered`) whose keys name
  objects by `identity(obj)`, a token standing for that one object. A token is
  never reused: a key that holds one matches that object only, whatever
  becomes of it; an object that outlives its token's table gets a new token.

An object keeps its token on itself when it has attributes of its own (OpDefs, the
catalog, a catalog registry's ops). Those without (a manifest's ops, a producer's op
list, an edge list: dicts and tuples shared by many models) are the one place an id is read:
`HeldTokens` holds each such object beside its token, so its id names nothing else
while the entry stays, and a bounded table per kind keeps a churn of op lists from
pushing the registries' tokens out. What is kept on a graph or an artifact costs
memory while the object lives (the fleet bench's batches of 1,000 models hold it
together) and nothing after.

The gates built on them only ever skip work whose result is known to be empty; what they
let through is checked in full (`tests/compat/test_memo.py` compares both ways).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from operator import attrgetter, methodcaller
from typing import Any, Generic, NamedTuple, TypeVar

from worker.model.artifact import Edge, Graph, NodeKind, OpDef
from worker.model.consumer import Registry

_K = TypeVar("_K", bound=Hashable)
_O = TypeVar("_O")
_T = TypeVar("_T")
_D = TypeVar("_D", bound=dict[Any, Any])
_OP = attrgetter("op")
_MEMOS: list[dict[Any, Any]] = []


def remembered(table: _D) -> _D:
    """Declare a module's memo table, so `forget_all` empties it too."""
    _MEMOS.append(table)
    return table


# The attribute names the memos kept on objects use now: `forget_all` moves them all to
# new names, so what was kept before is never read again (it goes with its object).
_ON_OBJECTS: list[tuple[list[str], str]] = []
_GENERATION = [0]


def _on_object(base: str) -> list[str]:
    name = [f"_memo{_GENERATION[0]}_{base}"]
    _ON_OBJECTS.append((name, base))
    return name


def forget_all() -> None:
    """A new process's state, for benchmarks and tests: every memo table emptied, every
    token table forgotten, and what is kept on objects never read again."""
    for table in _MEMOS:
        table.clear()
    _GENERATION[0] += 1
    for name, base in _ON_OBJECTS:
        name[0] = f"_memo{_GENERATION[0]}_{base}"


class Identity:
    """Stands for one object in memo keys: hashed and compared as itself (in C, as fast as
    an int), and made anew for every object, so it never stands for another."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<Identity {id(self):#x}>"


class HeldTokens:
    """Tokens for objects that keep no attributes of their own (a dict, a tuple, a
    registry with __slots__): each entry holds its object, so its id names nothing else
    while the entry stays. Past `limit` entries the table starts afresh: an object met
    again gets a new token, and keys holding its old one match nothing any more."""

    __slots__ = ("_entries", "limit")

    def __init__(self, limit: int) -> None:
        self._entries: dict[int, tuple[object, Identity]] = remembered({})
        self.limit = limit

    def __len__(self) -> int:
        return len(self._entries)

    def __call__(self, obj: object) -> Identity:
        held = self._entries.get(id(obj))
        if held is not None and held[0] is obj:
            return held[1]
        if len(self._entries) >= self.limit:
            self._entries.clear()
        token = Identity()
        self._entries[id(obj)] = (obj, token)
        return token


# Registries, kernel tables and the like: few, and held by the catalog anyway.
_LASTING = HeldTokens(1024)
_IDENTITY = "_memo_identity"


def identity(obj: object) -> Identity:
    """The token standing for `obj` in memo keys: kept on the object where it has
    attributes of its own (an OpDef, a graph, the catalog), else held (`HeldTokens`)
    among the long-lived ones (registries). Objects made per pass, shared by models
    and without attributes (op lists, edge lists) have tables of their own below, so
    they never push a registry's token out."""
    attrs = getattr(obj, "__dict__", None)
    if type(attrs) is dict:
        found: Identity | None = attrs.get(_IDENTITY)
        if found is None:
            found = attrs[_IDENTITY] = Identity()
        return found
    return _LASTING(obj)


_ATTRS = attrgetter("__dict__")
_TOKEN = methodcaller("get", _IDENTITY)


def identities(objs: tuple[object, ...]) -> tuple[Identity, ...]:
    """`identity` of each: where each keeps its token on itself (OpDefs, once asked), in
    one pass at C speed (a fleet pass asks it of every model's OpDefs in each registry)."""
    try:
        found: tuple[Any, ...] = tuple(map(_TOKEN, map(_ATTRS, objs)))
    except AttributeError:  # one keeps no attributes of its own
        return tuple(map(identity, objs))
    return found if all(found) else tuple(map(identity, objs))


def per_kind_attrs(limit: int) -> Callable[[Callable[[NodeKind], _T]], Callable[[NodeKind], _T]]:
    """Remember what `compute` finds of a kind per its attrs' canonical text
    (`NodeKind.key`): thousands of models repeat the same kinds, and a fleet change reads
    every model's kinds anew. The table holds at most `limit` entries (emptied when full:
    a long-lived worker meets ever new kinds) and `forget_all` empties it."""

    def wrap(compute: Callable[[NodeKind], _T]) -> Callable[[NodeKind], _T]:
        table: dict[str, _T] = remembered({})

        @functools.wraps(compute)
        def kept(kind: NodeKind) -> _T:
            text = kind.key[1]
            try:
                return table[text]
            except KeyError:
                if len(table) >= limit:
                    table.clear()
                found = table[text] = compute(kind)
                return found

        return kept

    return wrap


def per_object(compute: Callable[[_O], _T]) -> Callable[[_O], _T]:
    """`compute(obj)` once per object, kept on the object (its `__dict__`, as
    `functools.cached_property` keeps a value; the object must have one, as our frozen
    dataclasses do). `compute` must read only the object, and never return None."""
    name = _on_object(f"{compute.__module__}.{compute.__qualname__}")

    @functools.wraps(compute)
    def remembered_on(obj: _O) -> _T:
        attrs = obj.__dict__
        found: _T | None = attrs.get(name[0])
        if found is None:
            found = attrs[name[0]] = compute(obj)
        return found

    return remembered_on


@per_object
def registry_identities(registry: Registry) -> tuple[Identity, Identity, Identity]:
    """`identity` of a registry's ops, kernel table and revived types, kept on it."""
    return identity(registry.ops), identity(registry.kernels), identity(registry.revived)


class ObjectTable(Generic[_K, _T]):
    """A table per object, kept on the object (see `per_object`): facts about it that
    also depend on a few values, e.g. a graph's kinds in scope per set of functions."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = _on_object(name)

    def of(self, obj: object) -> dict[_K, _T]:
        attrs = obj.__dict__
        name = self._name[0]
        found: dict[_K, _T] | None = attrs.get(name)
        if found is None:
            found = attrs[name] = {}
        return found


class OpSet(Identity):
    """Stands for one distinct sorted list of op names: models of one exporter share it."""

    __slots__ = ()


@dataclass(frozen=True)
class GraphFacts:
    """What a graph holds, whoever reads it."""

    ops: frozenset[str]  # every kind's op, function-call ops included
    library_ops: frozenset[str]  # ops that are not calls of a library function
    sorted_ops: tuple[str, ...]  # `ops`, sorted
    op_set: OpSet  # one per distinct `sorted_ops` (while `_OP_SETS` keeps it)


_OP_SETS: dict[tuple[str, ...], OpSet] = remembered({})
# Each key holds a model's op names (a kilobyte or so): a long-lived worker keeps ~20 MB.
_OP_SETS_LIMIT = 20_000


@per_object
def graph_facts(graph: Graph) -> GraphFacts:
    ops = frozenset(map(_OP, graph.kinds))
    names = tuple(sorted(ops))
    op_set = _OP_SETS.get(names)
    if op_set is None:
        if len(_OP_SETS) >= _OP_SETS_LIMIT:
            _OP_SETS.clear()
        op_set = _OP_SETS[names] = OpSet()
    return GraphFacts(ops, ops - set(graph.functions), names, op_set)


# Edge lists held for their tokens: each can be large (a graph's distinct edges), so few.
_EDGE_LISTS = HeldTokens(256)
_AT: dict[Identity, dict[int, tuple[int, ...]]] = remembered({})
_AT_LIMIT = 256


def edges_at(edges: tuple[Edge, ...]) -> dict[int, tuple[int, ...]]:
    """kind index -> the positions (ascending) of the edges with that kind at either end.
    Keyed on the edges alone: models read from the index share one edges tuple per
    distinct edge list, so this is computed once per distinct edge list."""
    key = _EDGE_LISTS(edges)
    found = _AT.get(key)
    if found is not None:
        return found
    positions_of: dict[int, list[int]] = {}
    for position, edge in enumerate(edges):
        positions_of.setdefault(edge.src, []).append(position)
        if edge.dst != edge.src:
            positions_of.setdefault(edge.dst, []).append(position)
    if len(_AT) >= _AT_LIMIT:
        _AT.clear()
    at = _AT[key] = {kind: tuple(positions) for kind, positions in positions_of.items()}
    return at


def edges_touching(graph: Graph, ops: Iterable[str]) -> list[int]:
    """The positions (ascending) of the edges with a kind of one of `ops` at either end."""
    at, by_op = edges_at(graph.edges), kinds_by_op(graph)
    return sorted({p for op in ops for kind in by_op.get(op, ()) for p in at.get(kind, ())})


@per_object
def kinds_by_op(graph: Graph) -> dict[str, list[int]]:
    """op -> the indexes of the graph's kinds of that op (anywhere)."""
    found: dict[str, list[int]] = {}
    for index, kind in enumerate(graph.kinds):
        found.setdefault(kind.op, []).append(index)
    return found


_KINDS: ObjectTable[tuple[frozenset[str], bool], list[NodeKind]] = ObjectTable("kinds_in_scope")


def kinds_in_scope(graph: Graph, reachable: frozenset[str], top_level: bool) -> list[NodeKind]:
    """The kinds a loader validates: the top-level graph's (unless `top_level` is false)
    and those of the functions in `reachable`. Callers must not change the list."""
    memo = _KINDS.of(graph)
    found = memo.get((reachable, top_level))
    if found is None:
        found = memo[reachable, top_level] = [
            k for k in graph.kinds if (k.function is None and top_level) or k.function in reachable
        ]
    return found


_REQUEST: ObjectTable[tuple[frozenset[str], bool], frozenset[str]] = ObjectTable("ops_in")


def ops_in(graph: Graph, functions: frozenset[str], top_level: bool) -> frozenset[str]:
    """The ops of `kinds_in_scope(graph, functions, top_level)`."""
    memo = _REQUEST.of(graph)
    found = memo.get((functions, top_level))
    if found is None:
        found = memo[functions, top_level] = frozenset(
            map(_OP, kinds_in_scope(graph, functions, top_level))
        )
    return found


_NAMES: dict[Identity, frozenset[str]] = remembered({})
_NAMES_LIMIT = 1024


def registered_names(ops: Mapping[str, OpDef]) -> frozenset[str]:
    """The op names a registry defines (membership without converting any OpDef)."""
    key = identity(ops)
    found = _NAMES.get(key)
    if found is None:
        if len(_NAMES) >= _NAMES_LIMIT:
            _NAMES.clear()
        found = _NAMES[key] = frozenset(ops)
    return found


class Lookup(NamedTuple):
    """A graph's ops in one registry (a tuple: one is built per model and registry)."""

    found: tuple[OpDef | None, ...]  # the OpDef of each sorted op; None: not registered
    # when all are registered, a number standing for their identities (keys that equal
    # OpDefs of different registries share: registries share their OpDef objects, and
    # equal identities get equal numbers); None otherwise
    ids: int | None
    deprecates: bool  # some OpDef has a deprecation version


# Keyed by the graph's op set, not the graph: models of one exporter share their ops, so
# a fleet pass looks each op set up once per registry.
_LOOKUPS: dict[tuple[OpSet, Identity], Lookup] = remembered({})
_LOOKUPS_LIMIT = 8192


def registry_lookup(graph: Graph, ops: Mapping[str, OpDef]) -> Lookup:
    """The registry's OpDefs of `graph_facts(graph).sorted_ops`, remembered per op set
    and registry."""
    facts = graph_facts(graph)
    key = (facts.op_set, identity(ops))
    hit = _LOOKUPS.get(key)
    if hit is not None:
        return hit
    last = _LOOKED_UP.get(facts.op_set)
    if last is not None:
        differing = ops_differing(last[0], ops)
        if differing is not None and facts.ops.isdisjoint(differing):
            # the registries define every op of the graph alike: the same OpDefs
            _remember_lookup(key, facts.op_set, ops, last[1])
            return last[1]
    names = facts.sorted_ops
    get_many = getattr(ops, "get_many", None)  # the catalog's registries batch it
    found: tuple[OpDef | None, ...] = (
        get_many(names) if get_many is not None else tuple(map(ops.get, names))
    )
    # `all`: an OpDef is true, None false (`None in found` called OpDef.__eq__ per op)
    ids = _number(identities(found)) if all(found) else None
    versions = {op.deprecation_version for op in found if op is not None}
    deprecates = bool(versions) and versions != {None}
    lookup = Lookup(found, ids, deprecates)
    _remember_lookup(key, facts.op_set, ops, lookup)
    return lookup


# The registry an op set was last looked up in, and that lookup: releases come in order (an
# upload's 79, a fleet's), and next to each other they mostly define a model's ops alike
# (`ops_differing`).
_LOOKED_UP: dict[OpSet, tuple[Mapping[str, OpDef], Lookup]] = remembered({})


def _remember_lookup(
    key: tuple[OpSet, Identity], op_set: OpSet, ops: Mapping[str, OpDef], lookup: Lookup
) -> None:
    if len(_LOOKUPS) >= _LOOKUPS_LIMIT:
        _LOOKUPS.clear()
        _LOOKED_UP.clear()
    _LOOKUPS[key] = lookup
    _LOOKED_UP[op_set] = (ops, lookup)


_DIFFERING: dict[tuple[Identity, Identity], frozenset[str] | None] = remembered({})
_ASKED: dict[tuple[Identity, ...], int] = remembered({})
PATIENCE = 16  # asks of a pair of registries before their difference is worked out


def asked_often(key: tuple[Identity, ...], patience: int = PATIENCE) -> bool:
    """Whether the pair `key` names has now been asked about `patience` times: a pass over
    two registries (a tenth of a millisecond) pays only where many models ask of the
    pair (a fleet change, a long-lived worker), not in a one-off check of one model."""
    asked = _ASKED.get(key, 0) + 1
    if asked >= patience:
        return True
    if len(_ASKED) >= 4096:
        _ASKED.clear()
    _ASKED[key] = asked
    return False


def ops_differing(
    ops: Mapping[str, OpDef], other: Mapping[str, OpDef], patience: int = PATIENCE
) -> frozenset[str] | None:
    """The op names two registries define otherwise (`RegistryOps.differing`), once per
    pair once asked about `patience` times (`asked_often`); None when not known (not
    yet, or a registry of another kind, e.g. a manifest's): a graph none of whose ops is
    among them finds the same OpDef objects in both."""
    if ops is other:
        return frozenset()
    key = (identity(ops), identity(other))
    if key in _DIFFERING:
        return _DIFFERING[key]
    if not asked_often(key, patience):
        return None
    differing = getattr(ops, "differing", None)
    found = differing(other) if differing is not None else None
    if len(_DIFFERING) >= 4096:
        _DIFFERING.clear()
    _DIFFERING[key] = found
    return found


_NUMBERS: dict[tuple[Identity, ...], int] = remembered({})
_NUMBERS_LIMIT = 200_000
_NEXT = [0]  # the last number given: never reused


def _number(identities: tuple[Identity, ...]) -> int:
    """A small number per distinct tuple of identities: keys hash it instead of the tuple.
    Never reused, so a number names one tuple even after the table is emptied."""
    found = _NUMBERS.get(identities)
    if found is None:
        if len(_NUMBERS) >= _NUMBERS_LIMIT:
            _NUMBERS.clear()
        _NEXT[0] += 1
        found = _NUMBERS[identities] = _NEXT[0]
    return found


# Keyed by a producer's op list and a registry, both shared by many models (the index
# decodes one op list per distinct list): a fleet pass meets each pair again and again.
_OP_LISTS = HeldTokens(4096)  # a few hundred OpDef references each
_CHANGED: dict[tuple[Identity, Identity], frozenset[str]] = remembered({})
_CHANGED_LIMIT = 4096  # an upload judges ~30 registries: ~130 models' op lists


def changed_against(
    producer_ops: Mapping[str, OpDef],
    ops: Mapping[str, OpDef],
    same: Callable[[OpDef, OpDef], bool],
) -> frozenset[str]:
    """The ops of a producer's op list that a registry lacks or defines otherwise."""
    key = (_OP_LISTS(producer_ops), identity(ops))
    found = _CHANGED.get(key)
    if found is not None:
        return found
    changed = set()
    for name, theirs in producer_ops.items():
        mine = ops.get(name)
        if mine is None or not same(mine, theirs):
            changed.add(name)
    if len(_CHANGED) >= _CHANGED_LIMIT:
        _CHANGED.clear()
    found = _CHANGED[key] = frozenset(changed)
    return found
