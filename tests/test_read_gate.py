"""No path around the read rule (DESIGN.md "Trust boundary").

Every place in the worker's adapters and tasks (worker/pipeline, worker/ingest,
worker/sinks) that opens a reader of models (a local `DirectoryTree`, an object
store tree, the MLflow proxied tree, a SageMaker package's model data, which is an
object store tree) must be inside a function that asks the rule
(`worker.formats.access.decide*`, or `worker.ingest.gate.gate*`) or that is handed
its allowed `Decision`. The object store's own definitions of those readers are the
only exceptions, each named below with its reason. The checks that take a policy
take it without a default, so no caller can leave it out.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("worker/pipeline", "worker/ingest", "worker/sinks")

READERS = {
    "DirectoryTree",
    "ProxiedTree",
    "S3Tree",
    "tree",  # ObjectStore.tree
    "model_tree",  # ObjectStore.model_tree and sinks.s3.model_tree
    "read_s3_artifacts",
}
"""Calls that open (or hand back) a reader of model bytes. (`event_tree` and
`open_model_tree` are not: they decide themselves, from a required policy or the
allowed `Decision`, and this test checks them like any other function.)"""

RULE = {"decide", "decide_object", "gate", "gate_object"}
"""Calls that ask the read rule."""

DEFINITIONS = {
    # The ObjectStore port's adapters: they build the tree a gated caller asked for.
    ("worker/sinks/s3.py", "S3ObjectStore.tree"),
    ("worker/sinks/s3.py", "S3ObjectStore.model_tree"),
    ("worker/sinks/s3.py", "model_tree"),
    ("worker/sinks/memory.py", "MemoryObjectStore.model_tree"),
    # `tfcompat inspect|check s3://...`: the CLI user's own read, with their credentials;
    # no event or registry names it (worker/cli is not a worker entry point).
    ("worker/sinks/s3.py", "read_s3_artifacts"),
}


def called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def annotation_names(function: ast.FunctionDef) -> set[str]:
    args = function.args
    found = set()
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.annotation is not None:
            found |= {n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name)}
            found |= {
                n.value
                for n in ast.walk(arg.annotation)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
    return found


def ungated_readers() -> list[str]:
    """`path:line qualified-name calls reader` for every reader opened outside the rule."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            tree = ast.parse(path.read_text(), relative)
            found += ungated_in(tree, relative)
    return found


def ungated_in(tree: ast.Module, relative: str) -> list[str]:
    found = []

    def visit(node: ast.AST, scope: list[str], gated: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, [*scope, child.name], gated)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = ".".join([*scope, child.name])
                calls = {called_name(c) for c in ast.walk(child) if isinstance(c, ast.Call)}
                asks = bool(calls & RULE) or "Decision" in annotation_names(child)  # type: ignore[arg-type]
                defined = (relative, name) in DEFINITIONS
                visit(child, [*scope, child.name], gated or asks or defined)
            elif isinstance(child, ast.Call) and called_name(child) in READERS and not gated:
                where = ".".join(scope) or "<module>"
                found.append(f"{relative}:{child.lineno} {where} calls {called_name(child)}")
                visit(child, scope, gated)
            else:
                visit(child, scope, gated)

    visit(tree, [], False)
    return found


def test_every_reader_of_models_is_opened_behind_the_read_rule() -> None:
    assert ungated_readers() == []


def test_the_walk_finds_a_reader_opened_without_the_rule() -> None:
    # The check itself can fail: a task that opens a tree without asking is reported.
    source = "def sneaky(store):\n    return store.tree('secrets', '')\n"
    assert ungated_in(ast.parse(source), "worker/pipeline/x.py") == [
        "worker/pipeline/x.py:2 sneaky calls tree"
    ]
    gated = "def fine(policy, store):\n    decide(policy, 'u')\n    return store.tree('b', '')\n"
    assert ungated_in(ast.parse(gated), "worker/pipeline/x.py") == []


@pytest.mark.parametrize(
    ("module", "function"),
    [
        ("worker.pipeline.registered", "check_model_version"),
        ("worker.pipeline.registered", "report_place"),
        ("worker.pipeline.registered", "record"),
        ("worker.pipeline.packages", "check_model_package"),
        ("worker.pipeline.process", "process_event"),
        ("worker.pipeline.process", "event_tree"),
        ("worker.pipeline.fixes", "write_fixed_copies"),
        ("worker.pipeline.fixes", "fix_hook"),
    ],
)
def test_the_checks_take_the_read_policy_without_a_default(module: str, function: str) -> None:
    import importlib

    signature = inspect.signature(getattr(importlib.import_module(module), function))
    policy = signature.parameters["policy"]
    assert policy.default is inspect.Parameter.empty
