"""A MetaGraph's serve plan: what the loader's restore and init runs and each
signature's request execute, pruned as `Session.run` prunes (see
`worker.model.serving` for the steps and their sources in TensorFlow).

Pruning follows every data and control input from the run's targets and
fetches, and stops at a fed tensor: a fed output is never computed, so its
node runs only if something needs another of its outputs. Resource handles
are followed from the node that creates them through the ops that only pass
a handle on (`Identity`, control-flow `Enter`/`Switch`/`Merge`/...), to the
node that uses them; a reference variable's `Identity` is a read of its value,
so refs pass only through the `Ref*` forms. A resource is created by a top-level node
of a creating op, or by a top-level call of a library function that creates one and
returns its handle: a restored resource's `_creator` (a model built on a loaded
SavedModel, such as a tf.Transform layer, and saved again makes its tables so).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from worker.formats.fixed_values import FixedValues
from worker.formats.graph import TopNodes
from worker.formats.table_facts import TableFacts
from worker.model.serving import (
    DEFAULT_SIGNATURE,
    INIT_OP_SIGNATURE,
    LEGACY_INIT_OP_COLLECTION,
    MAIN_OP_COLLECTION,
    Resource,
    ResourceUse,
    Run,
    ServePlan,
)
from worker.proto import tensorflow_subset_pb2 as pb

ASSETS_COLLECTION = "saved_model_assets"
LOCAL_VARIABLES_COLLECTION = "local_variables"
TABLE_INITIALIZERS_COLLECTION = "table_initializer"

# Nodes that create a resource which holds nothing until a run fills it. Mutable hash
# tables (empty is a valid state), anonymous resources (made and used by one run) and
# one-shot iterators (they fill themselves) are not listed: nothing can find them empty.
RESOURCE_OPS: dict[str, str] = {
    "VariableV2": "variable",
    "Variable": "variable",
    "VarHandleOp": "variable",
    "HashTable": "table",
    "HashTableV2": "table",
    "Iterator": "iterator",
    "IteratorV2": "iterator",
    "MultiDeviceIterator": "iterator",
}
REF_RESOURCE_OPS = frozenset({"VariableV2", "Variable", "HashTable"})  # ref outputs
CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
DT_RESOURCE = 20

# Ops that hand a resource handle on unchanged; for a ref, only the Ref forms do.
HANDLE_PASS_OPS = frozenset(
    {"Identity", "IdentityN", "Enter", "Switch", "Merge", "Exit", "NextIteration"}
)
REF_PASS_OPS = frozenset({"RefIdentity", "RefEnter", "RefSwitch", "RefMerge", "RefExit"})
PLACEHOLDER_OPS = frozenset({"Placeholder", "PlaceholderV2"})


def _tensor(name: str) -> tuple[str, int]:
    """'node:1' -> ('node', 1); 'node' -> ('node', 0); '^node' -> ('node', -1)."""
    if name.startswith("^"):
        return name[1:], -1
    node, sep, output = name.rpartition(":")
    if sep and output.isdigit():
        return node, int(output)
    return name, 0


def _tensor_names(info: pb.TensorInfo) -> list[str]:
    if info.WhichOneof("encoding") == "coo_sparse":
        sparse = info.coo_sparse
        return [
            sparse.values_tensor_name,
            sparse.indices_tensor_name,
            sparse.dense_shape_tensor_name,
        ]
    return [info.name] if info.name else []


def _creators(library: pb.FunctionDefLibrary) -> dict[str, str]:
    """Library functions whose one output is the handle of a resource their body creates,
    through `Identity`s and calls of such functions (a restored resource's `_creator` is
    called by a restored function body): function name -> the creating op."""
    candidates = []
    for function in library.function:
        outputs = function.signature.output_arg
        if len(outputs) == 1 and outputs[0].type == DT_RESOURCE:
            ret = function.ret.get(outputs[0].name, "").split(":")[0]
            body = {node.name: node for node in function.node_def}
            candidates.append((function.signature.name, ret, body))
    found: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for name, ret, body in candidates:
            if name not in found:
                made = _made_by(ret, body, found)
                if made is not None:
                    found[name] = made
                    grew = True
    return found


def _made_by(name: str, body: dict[str, pb.NodeDef], creators: dict[str, str]) -> str | None:
    """The creating op behind the handle node `name` of a function body, or None."""
    seen: set[str] = set()
    while name in body and name not in seen:
        seen.add(name)
        node = body[name]
        if node.op in RESOURCE_OPS:
            return node.op
        called = node.attr["f"].func.name if node.op in CALL_OPS else node.op
        if called in creators:
            return creators[called]
        if node.op not in HANDLE_PASS_OPS:
            return None
        inputs = [i for i in node.input if not i.startswith("^")]
        name = inputs[0].split(":")[0] if inputs else ""
    return None


def created_by_calls(meta_graph: pb.MetaGraphDef) -> dict[str, str]:
    """Top-level call nodes that create a resource: node name -> the creating op."""
    creators = _creators(meta_graph.graph_def.library)
    if not creators:
        return {}
    found: dict[str, str] = {}
    for node in meta_graph.graph_def.node:
        called = node.attr["f"].func.name if node.op in CALL_OPS else node.op
        if called in creators:
            found[node.name] = creators[called]
    return found


class _Pruner:
    def __init__(
        self,
        nodes: TopNodes,
        fixed: FixedValues | None = None,
        created: dict[str, str] | None = None,
    ) -> None:
        self.nodes = nodes
        self.fixed = fixed
        self.tables = TableFacts(fixed) if fixed is not None else None
        self.users: dict[str, list[tuple[str, int]]] = {}
        for name, (_, inputs, _) in nodes.items():
            for position, text in enumerate(i for i in inputs if not i.startswith("^")):
                self.users.setdefault(_tensor(text)[0], []).append((name, position))
        self.resources: list[Resource] = []
        self.resource_uses: list[list[tuple[str, int]]] = []
        created = created or {}
        for name, (op, _, _) in nodes.items():
            made = op if op in RESOURCE_OPS else created.get(name)
            if made is not None:
                self.resources.append(Resource(name, made, RESOURCE_OPS[made]))
                self.resource_uses.append(self._uses(name, op in REF_RESOURCE_OPS))

    def _uses(self, start: str, is_ref: bool) -> list[tuple[str, int]]:
        passing = REF_PASS_OPS if is_ref else HANDLE_PASS_OPS | REF_PASS_OPS
        found: list[tuple[str, int]] = []
        seen = {start}
        todo = [start]
        while todo:
            for user, position in self.users.get(todo.pop(), ()):
                if self.nodes[user][0] in passing:
                    if user not in seen:
                        seen.add(user)
                        todo.append(user)
                else:
                    found.append((user, position))
        return found

    def run(self, role: str, name: str, targets: Iterable[str], feeds: Iterable[str]) -> Run:
        nodes = self.nodes
        fed = {_tensor(t) for t in feeds}
        missing = sorted({node for node, _ in fed if node not in nodes})
        needed: set[str] = set()
        todo: list[str] = []
        for target in targets:
            node, output = _tensor(target)
            if node not in nodes:
                missing.append(target)
            elif (node, output) not in fed:
                todo.append(node)
        while todo:
            node = todo.pop()
            if node in needed:
                continue
            needed.add(node)
            for text in nodes[node][1]:
                source = _tensor(text)
                if source[0] in nodes and source not in fed and source[0] not in needed:
                    todo.append(source[0])
        unfed = sorted(n for n in needed if nodes[n][0] in PLACEHOLDER_OPS)
        uses = [
            ResourceUse(index, nodes[user][2], position)
            for index, found in enumerate(self.resource_uses)
            for user, position in found
            if user in needed
        ]
        opens, asserts = (
            self.fixed.facts(needed, frozenset(node for node, _ in fed))
            if self.fixed is not None
            else ((), ())
        )
        fills, lookups = self.tables.facts(needed) if self.tables is not None else ((), ())
        return Run(
            role=role,
            name=name,
            kinds=tuple(sorted({nodes[n][2] for n in needed})),
            unfed=tuple(unfed),
            missing=tuple(missing),
            uses=tuple(sorted(set(uses), key=lambda u: (u.resource, u.kind, u.input))),
            opens=opens,
            asserts=asserts,
            fills=fills,
            lookups=lookups,
        )


def _repeated(feeds: list[str]) -> tuple[str, ...]:
    """The tensors named by more than one of a signature's inputs ('x' is 'x:0')."""
    seen: set[tuple[str, int]] = set()
    found: list[str] = []
    for name in feeds:
        node, output = _tensor(name)
        if (node, output) in seen and f"{node}:{output}" not in found:
            found.append(f"{node}:{output}")
        seen.add((node, output))
    return tuple(found)


def _assets(meta_graph: pb.MetaGraphDef) -> list[pb.AssetFileDef]:
    """The asset files the loader feeds: `asset_file_def` (TF2 writers), else the
    `saved_model_assets` collection of TF1 writers (loader.cc GetAssetFileDefs)."""
    if meta_graph.asset_file_def:
        return list(meta_graph.asset_file_def)
    found = []
    collection = meta_graph.collection_def.get(ASSETS_COLLECTION)
    if collection is not None and collection.WhichOneof("kind") == "any_list":
        for item in collection.any_list.value:
            asset = pb.AssetFileDef()
            try:
                asset.ParseFromString(item.value)
            except Exception:  # a malformed entry fails the load: no tensor to feed
                continue
            found.append(asset)
    return found


def _default_init_targets(meta_graph: pb.MetaGraphDef) -> list[str]:
    """Scaffold.default_local_init_op's targets: every local variable's initializer and
    every op of the `table_initializer` collection, as import_meta_graph restores them."""
    targets: list[str] = []
    local = meta_graph.collection_def.get(LOCAL_VARIABLES_COLLECTION)
    if local is not None and local.WhichOneof("kind") == "bytes_list":
        for raw in local.bytes_list.value:
            variable = pb.VariableDef()
            try:
                variable.ParseFromString(raw)
            except Exception:  # import_meta_graph fails on it: no initializer to run
                continue
            if variable.initializer_name:
                targets.append(variable.initializer_name)
    tables = meta_graph.collection_def.get(TABLE_INITIALIZERS_COLLECTION)
    if tables is not None and tables.WhichOneof("kind") == "node_list":
        targets += list(tables.node_list.value)
    return targets


def _init_op(meta_graph: pb.MetaGraphDef) -> tuple[str, str, str]:
    """(init op name, where it came from, why finding it fails) as loader.cc GetInitOp."""
    signature = meta_graph.signature_def.get(INIT_OP_SIGNATURE)
    if signature is not None:
        output = signature.outputs.get(INIT_OP_SIGNATURE)
        name = output.name if output is not None else ""
        return name, f"signature {INIT_OP_SIGNATURE}", ""
    for key in (MAIN_OP_COLLECTION, LEGACY_INIT_OP_COLLECTION):
        collection = meta_graph.collection_def.get(key)
        if collection is None:
            continue
        values = (
            list(collection.node_list.value) if collection.WhichOneof("kind") == "node_list" else []
        )
        if len(values) != 1:
            return "", f"collection {key}", f"collection {key} holds {len(values)} ops, not one"
        return values[0], f"collection {key}", ""
    return "", "", ""


def serve_plan(meta_graph: pb.MetaGraphDef, nodes: TopNodes) -> ServePlan:
    """The runs of one MetaGraph, from its graph's top-level nodes."""
    assets = _assets(meta_graph)
    asset_feeds = [name for a in assets for name in _tensor_names(a.tensor_info)]
    asset_tensors = {n: a.filename for a in assets for n in _tensor_names(a.tensor_info)}
    ops = {name: op for name, (op, _, _) in nodes.items()}
    pruner = _Pruner(
        nodes, FixedValues(meta_graph, asset_tensors, ops), created_by_calls(meta_graph)
    )
    restore = None
    saver = meta_graph.saver_def
    if meta_graph.HasField("saver_def") and saver.restore_op_name:
        restore = pruner.run(
            "restore",
            saver.restore_op_name,
            [saver.restore_op_name],
            [saver.filename_tensor_name, *asset_feeds],
        )
    init_name, init_source, init_error = _init_op(meta_graph)
    init = pruner.run("init", init_name, [init_name], asset_feeds) if init_name else None
    default_targets = _default_init_targets(meta_graph)
    default_init = (
        pruner.run("init", "default_local_init_op", default_targets, asset_feeds)
        if default_targets
        else None
    )
    keys = sorted(k for k in meta_graph.signature_def if k != INIT_OP_SIGNATURE)
    keys.sort(key=lambda k: k != DEFAULT_SIGNATURE)
    requests = []
    for key in keys:
        signature = meta_graph.signature_def[key]
        outputs, inputs = signature.outputs, signature.inputs
        fetches = [n for k in sorted(outputs) for n in _tensor_names(outputs[k])]
        feeds = [n for k in sorted(inputs) for n in _tensor_names(inputs[k])]
        run = pruner.run("request", key, fetches, feeds)
        requests.append(replace(run, repeated=_repeated(feeds)))
    return ServePlan(
        restore=restore,
        init=init,
        init_source=init_source,
        init_error=init_error,
        requests=tuple(requests),
        resources=tuple(pruner.resources),
        assets=tuple(sorted({a.filename for a in assets})),
        default_init=default_init,
    )
