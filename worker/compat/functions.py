"""Functions as TensorFlow sees them: which ones a loader validates, which a request runs.

Measured on real releases (tests/fixtures/tf-real, `unreachable_function*`,
`keras3_module_save`, `function_attr_default_unstripped`):
- the v1 loader (TF Serving's) and a graph import validate only the functions
  the graph can reach: through function-call ops (a node whose op is a library
  function), func-valued attrs (`f` of StatefulPartitionedCall, `then_branch`,
  `body`, lists of funcs) and whatever those call in turn;
- `tf.saved_model.load` instantiates every function in the library;
- the SavedModel's saver functions (the ones holding `SaveV2` / `RestoreV2`)
  are run by the loader (restore) or never by a request (save); every other
  function a top-level call reaches is what a request runs.

Pure over the kind summary: a kind knows the function it sits in, its op and
its attrs, which is all a call graph needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from worker.compat.memo import ObjectTable, per_kind_attrs
from worker.model.artifact import Graph, NodeKind

SAVE_OPS = frozenset({"SaveV2", "SaveSlices", "Save"})
RESTORE_OPS = frozenset({"RestoreV2", "RestoreSlice", "Restore"})


def _func_names(value: Any) -> Iterator[str]:
    """Every function name inside one attr value (func, list of funcs, nested attrs)."""
    if isinstance(value, dict):
        func = value.get("func")
        if isinstance(func, dict):
            name = func.get("name")
            if isinstance(name, str) and name:
                yield name
            yield from _func_names(func.get("attr"))
        elif isinstance(func, list):
            for item in func:
                yield from _func_names({"func": item})
        listed = value.get("list")
        if isinstance(listed, dict):
            yield from _func_names({"func": listed.get("func")})
        for key, inner in value.items():
            if key not in ("func", "list") and isinstance(inner, dict):
                yield from _func_names(inner)


@per_kind_attrs(200_000)
def _named_in(kind: NodeKind) -> tuple[str, ...]:
    """Every function name the kind's attrs hold, remembered per distinct attrs (walking
    nested attr values was the costliest part of a fleet-wide re-check)."""
    return tuple(
        dict.fromkeys(name for value in kind.attrs.values() for name in _func_names(value))
    )


def callees(kind: NodeKind, functions: frozenset[str]) -> set[str]:
    """The library functions one kind calls."""
    called = {kind.op} if kind.op in functions else set()
    called.update(name for name in _named_in(kind) if name in functions)
    return called


@dataclass(frozen=True)
class FunctionScope:
    """Which library functions a graph reaches, and what runs them.

    `reachable`: what the v1 loader and a graph import validate; `restore`: what
    the loader runs while restoring variables; `request`: what a request runs;
    the rest of `reachable` (the saver's save function) runs on no request."""

    reachable: frozenset[str]
    restore: frozenset[str]
    request: frozenset[str]
    calls: dict[str, frozenset[str]]  # function -> functions it calls
    holds: dict[str, frozenset[str]]  # function -> ops in its own body
    top_calls: dict[int, frozenset[str]]  # top-level kind index -> functions it calls


def call_closure(start: Iterable[str], calls: dict[str, frozenset[str]]) -> set[str]:
    """The functions `start` names and every function they call, transitively."""
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(calls.get(name, ()))
    return seen


def function_scope(graph: Graph) -> FunctionScope:
    functions = frozenset(graph.functions)
    calls: dict[str, set[str]] = {name: set() for name in functions}
    holds: dict[str, set[str]] = {name: set() for name in functions}
    top_calls: dict[int, frozenset[str]] = {}  # per top-level kind that calls functions
    for index, kind in enumerate(graph.kinds):
        function = kind.function
        plain = kind.op not in functions and not _named_in(kind)  # calls nothing: most kinds
        if function is None:
            if not plain:
                called = callees(kind, functions)
                if called:
                    top_calls[index] = frozenset(called)
        elif function in calls:
            if not plain:
                calls[function] |= callees(kind, functions)
            holds[function].add(kind.op)
    frozen_calls = {name: frozenset(v) for name, v in calls.items()}
    reachable = call_closure((n for c in top_calls.values() for n in c), frozen_calls)

    def runs_any(start: frozenset[str], ops: frozenset[str]) -> bool:
        return any(holds.get(name, set()) & ops for name in call_closure(start, frozen_calls))

    restore: set[str] = set()
    request: set[str] = set()
    for target in top_calls.values():
        if runs_any(target, RESTORE_OPS):
            restore |= call_closure(target, frozen_calls)
        elif not runs_any(target, SAVE_OPS):
            request |= call_closure(target, frozen_calls)
    return FunctionScope(
        frozenset(reachable),
        frozenset(restore),
        frozenset(request - restore),
        frozen_calls,
        {name: frozenset(v) for name, v in holds.items()},
        top_calls,
    )


# The functional control-flow ops a Session's pre-placement pass lowers into the graph
# (lower_functional_ops.cc: If, Case and While with `_lower_using_switch_merge`), and
# the attrs naming the functions it inlines for them.
LOWERED_OPS = frozenset({"If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile"})
BRANCH_ATTRS = ("then_branch", "else_branch", "branches", "cond", "body")


def lowered_functions(graph: Graph) -> frozenset[str]:
    """The library functions a Session inlines into the graph before it places it: the
    branches and bodies of `If`/`Case`/`While` nodes of the graph, and of those in the
    bodies it inlined, transitively. A plain function call (`PartitionedCall`,
    `StatefulPartitionedCall`, a call by name) is not inlined there:
    LowerFunctionalOpsPass inlines calls only with `do_function_inlining` set, which a
    default Session's OptimizerOptions leave off; its body is instantiated when a run
    executes the call. Measured (tests/fixtures/tf-bites): RFFTND, which no CPU build
    has a kernel for, in the serving tf.function of a TF2 SavedModel: the v1 loader's
    restore run passes in 2.15 and 2.21 and the request fails."""
    functions = frozenset(graph.functions)
    found: set[str] = set()
    todo: list[str | None] = [None]
    done: set[str | None] = set()
    while todo:
        where = todo.pop()
        if where in done:
            continue
        done.add(where)
        for kind in graph.kinds:
            if kind.function != where or kind.op not in LOWERED_OPS:
                continue
            for attr in BRANCH_ATTRS:
                value = kind.attrs.get(attr)
                if value is None:
                    continue
                for name in _func_names(value):
                    if name in functions and name not in found:
                        found.add(name)
                        todo.append(name)
    return frozenset(found)


_SCOPES: ObjectTable[bool, FunctionScope] = ObjectTable("scope_of")


def scope_of(graph: Graph, every_function: bool = False) -> FunctionScope:
    """The graph's function scope, remembered per graph: a fleet checks one model against
    many consumers, and the unsafe-op scan asks too.

    `every_function`: `tf.saved_model.load`, which instantiates (validates at load) every
    function; a request still runs only what the serving signatures call, which the
    graph's own call ops name (a TF2 export's graph calls each signature function)."""
    memo = _SCOPES.of(graph)
    scope = memo.get(every_function)
    if scope is None:
        if every_function:
            scope = replace(scope_of(graph), reachable=frozenset(graph.functions))
        else:
            scope = function_scope(graph)
        memo[every_function] = scope
    return scope
