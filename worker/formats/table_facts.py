"""Mutable lookup tables in a TF1 graph: what fills them, and lookups whose default
value becomes an index.

A `MutableHashTable` starts empty and stays so until a run inserts into it
(`LookupTableInsertV2`) or imports into it (`LookupTableImportV2`: the saver's
restore, from the checkpoint's `<table>-keys` / `-values`). A lookup of a missing key
returns the default value (`LookupTableFindV2`'s third input); when the default is a
negative integer and the result is a `GatherV2` / `Gather` / `ResourceGather`
index, the CPU kernel fails "indices[0] = -1 is not in [0, N)" on every such key
(the GPU kernels answer zeros instead). The reader records, per run, the fills and
such lookups of the top-level graph; whether the table is empty when the request
reads it is the rule's (`worker.compat.own_files`), from the checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable

from worker.formats.fixed_values import FixedValues
from worker.model.serving import DefaultLookup, TableFill
from worker.proto import tensorflow_subset_pb2 as pb

MUTABLE_TABLE_OPS = frozenset(
    {
        "MutableHashTable",
        "MutableHashTableV2",
        "MutableHashTableOfTensors",
        "MutableHashTableOfTensorsV2",
        "MutableDenseHashTable",
        "MutableDenseHashTableV2",
    }
)
FILL_OPS = frozenset(
    {"LookupTableInsert", "LookupTableInsertV2", "LookupTableImport", "LookupTableImportV2"}
)
FIND_OPS = frozenset({"LookupTableFind", "LookupTableFindV2"})
# Ops taking an index at the given input, whose CPU kernel refuses one out of range.
INDEX_INPUTS: dict[str, int] = {"GatherV2": 1, "Gather": 1, "ResourceGather": 1}
PASS_OPS = frozenset({"Identity", "StopGradient", "Snapshot"})


class TableFacts:
    """Built once per MetaGraph over its top-level nodes; asked once per run."""

    def __init__(self, fixed: FixedValues) -> None:
        self.fixed = fixed
        self.has_tables = not MUTABLE_TABLE_OPS.isdisjoint(fixed.ops.values())
        self.users: dict[str, list[tuple[str, int]]] = {}
        self.nodes: dict[str, pb.NodeDef] = fixed.top.nodes if self.has_tables else {}
        if self.has_tables:
            for node in self.nodes.values():
                data = [i for i in node.input if not i.startswith("^")]
                for position, text in enumerate(data):
                    source, _, output = text.partition(":")
                    if output in ("", "0"):
                        self.users.setdefault(source, []).append((node.name, position))

    def _table(self, text: str) -> str | None:
        name = self.fixed._source(self.fixed.top, text, 0)
        node = self.nodes.get(name or "")
        return node.name if node is not None and node.op in MUTABLE_TABLE_OPS else None

    def _restored_key(self, text: str) -> str:
        """The checkpoint key an import's keys input reads ('' when not the saver's)."""
        name, _, output = text.partition(":")
        node = self.nodes.get(name)
        if node is None or node.op != "RestoreV2" or len(node.input) < 2:
            return ""
        names = self.fixed.value(self.fixed.top, node.input[1], 0)
        index = int(output) if output.isdigit() else 0
        found = names[index] if names is not None and index < len(names) else None
        return found.decode("utf-8", "replace") if isinstance(found, bytes) else ""

    def _index_user(self, name: str) -> str:
        """The first op taking `name`'s output 0 as an index, through identities."""
        todo, seen = [name], {name}
        while todo:
            for user, position in self.users.get(todo.pop(), ()):
                op = self.nodes[user].op
                if INDEX_INPUTS.get(op) == position:
                    return f"{op} (node {user})"
                if op in PASS_OPS and user not in seen:
                    seen.add(user)
                    todo.append(user)
        return ""

    def facts(
        self, needed: Iterable[str]
    ) -> tuple[tuple[TableFill, ...], tuple[DefaultLookup, ...]]:
        if not self.has_tables:
            return (), ()
        fills: list[TableFill] = []
        lookups: list[DefaultLookup] = []
        ops = self.fixed.ops
        for name in sorted(n for n in needed if ops.get(n) in FILL_OPS or ops.get(n) in FIND_OPS):
            node: pb.NodeDef | None = self.nodes.get(name)
            if node is None or not node.input:
                continue
            data = [i for i in node.input if not i.startswith("^")]
            table = self._table(data[0]) if data else None
            if table is None:
                continue
            if node.op in FILL_OPS:
                key = self._restored_key(data[1]) if "Import" in node.op and len(data) > 1 else ""
                fills.append(TableFill(table, node.op, key))
            elif node.op in FIND_OPS and len(data) >= 3:
                default = self.fixed.value(self.fixed.top, data[2], 0) or ()
                ints = [v for v in default if isinstance(v, int) and not isinstance(v, bool)]
                if not ints or len(ints) != len(default) or max(ints) >= 0:
                    continue
                into = self._index_user(name)
                if into:
                    lookups.append(DefaultLookup(name, table, ints[0], into))
        return tuple(fills), tuple(lookups)
