"""What a SavedModel's own files fix before any request: assertions over constants,
and the asset files the ops of a run open.

Two facts `worker.formats.serve_plan` records per run, so that a rule can say a load
or a request fails without running anything:
- **failing assertions**: an `Assert` the run executes whose condition is computed
  from constants only (`Const`, the identities, comparisons and logical ops, `All` /
  `Any`), and is false. TensorFlow's `AssertOp` fails the run ("assertion failed")
  whenever its scalar condition is false; nothing fed at load or by a request can
  change a value computed from constants alone. The evaluation is narrow on
  purpose: any input it cannot evaluate (a placeholder, `PlaceholderWithDefault`,
  a variable, an op not listed) makes the condition unknown, and an unknown
  condition is never a finding. In a TF1 graph an `Assert` under `tf.cond` runs
  only when its branch is live (`Switch` on a constant predicate decides it, else
  the assertion is left alone); in a function (TF2) the `If` / `StatelessIf`
  branch its constant predicate picks is followed, and `PartitionedCall` /
  `StatefulPartitionedCall` bodies with the call's constant arguments bound.
- **asset opens**: an op that opens a file (`InitializeTableFromTextFile*`,
  `ReadFile`, the file datasets) whose file name is one of the MetaGraph's asset
  tensors (`asset_file_def` or the `saved_model_assets` collection), directly, through
  identities, through a variable the loader assigns from it (TF2 exports keep each
  asset path in a variable that the init op assigns from the fed placeholder), or
  through a function argument. The loader feeds an asset tensor with
  `<export dir>/assets/<filename>` in its restore and init runs (`loader.cc`
  AddAssetsTensorsToInputs, `loader_impl.py` get_asset_tensors); a request feeds
  only its signature's inputs, so there an asset `Const` holds the path written at
  export, on the machine that exported it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from worker.model.serving import FailingAssert, FileOpen
from worker.proto import tensorflow_subset_pb2 as pb

# Ops that open the file named at the given input (their OpDefs).
FILENAME_INPUTS: dict[str, int] = {
    "InitializeTableFromTextFile": 1,
    "InitializeTableFromTextFileV2": 1,
    "ReadFile": 0,
    "TextLineDataset": 0,
    "TFRecordDataset": 0,
    "FixedLengthRecordDataset": 0,
}
IDENTITY_OPS = frozenset({"Identity", "StopGradient", "Snapshot", "PreventGradient"})
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
IF_OPS = frozenset({"If", "StatelessIf"})
COMPARISONS: dict[str, Callable[[object, object], bool]] = {
    "Equal": lambda a, b: a == b,
    "NotEqual": lambda a, b: a != b,
    "Less": lambda a, b: a < b,  # type: ignore[operator]
    "LessEqual": lambda a, b: a <= b,  # type: ignore[operator]
    "Greater": lambda a, b: a > b,  # type: ignore[operator]
    "GreaterEqual": lambda a, b: a >= b,  # type: ignore[operator]
}
LOGICAL: dict[str, Callable[[bool, bool], bool]] = {
    "LogicalAnd": lambda a, b: a and b,
    "LogicalOr": lambda a, b: a or b,
}
# Top-level ops a run's facts start from: the rest of the graph is reached from them.
WATCHED_OPS = frozenset({"Assert", *FILENAME_INPUTS, *CALL_OPS, *IF_OPS})
MAX_ELEMENTS = 1024  # larger constants are not evaluated (an assertion's are small)
MAX_DEPTH = 64  # input chains followed further than this are unknown
MAX_CALL_DEPTH = 6

# DataType enum values (types.proto) -> (repeated field, struct code of tensor_content)
_DECODE: dict[int, tuple[str, str]] = {
    1: ("float_val", "f"),
    2: ("double_val", "d"),
    3: ("int_val", "i"),
    9: ("int64_val", "q"),
    10: ("bool_val", "?"),
    7: ("string_val", ""),
}

Value = tuple[object, ...]  # a tensor's elements, flattened


@dataclass(frozen=True)
class _Asset:
    filename: str  # under assets/
    fed: bool  # the run feeds the shipped path
    path: str  # the path written at export ("" when unknown or fed)


def _elements(tensor: pb.TensorProto) -> Value | None:
    decode = _DECODE.get(tensor.dtype)
    if decode is None:
        return None
    dims = [d.size for d in tensor.tensor_shape.dim]
    if any(d < 0 for d in dims):
        return None
    count = math.prod(dims)
    if count > MAX_ELEMENTS:
        return None
    field, code = decode
    if tensor.tensor_content and code:
        size = struct.calcsize(code)
        if len(tensor.tensor_content) != size * count:
            return None
        return tuple(struct.unpack(f"<{count}{code}", tensor.tensor_content))
    values: list[object] = (
        [bytes(v) for v in tensor.string_val]
        if field == "string_val"
        else list(getattr(tensor, field))
    )
    if not values:
        return None if count else ()
    if len(values) < count:  # TensorFlow repeats the last value to fill the shape
        values += [values[-1]] * (count - len(values))
    return tuple(values[:count]) if count else tuple(values[:1])


def _split(text: str, in_function: bool) -> tuple[str, int] | None:
    """An input's (node, output index); None for a control input. In a function body
    'node:out:2' names output 2 of out-arg 'out' (the ops followed here have one), and
    a bare name is the function's own argument."""
    if text.startswith("^"):
        return None
    parts = text.split(":")
    if in_function:
        return (parts[0], int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else 0)
    if len(parts) == 2 and parts[1].isdigit():
        return parts[0], int(parts[1])
    return text, 0


class _Body:
    """The top-level graph, or one function body with its arguments bound."""

    def __init__(
        self,
        nodes: dict[str, pb.NodeDef],
        function: str | None,
        args: dict[str, object],
    ) -> None:
        self.nodes = nodes
        self.function = function
        self.args = args  # argument name -> a Value, an _Asset or None (unknown)

    def where(self, node: str) -> str:
        return f"node {node}" + (f" in function {self.function}" if self.function else "")


class FixedValues:
    """The evaluator over one MetaGraph: built once, asked once per run."""

    def __init__(
        self, meta_graph: pb.MetaGraphDef, asset_tensors: dict[str, str], ops: dict[str, str]
    ) -> None:
        """`ops`: each top-level node's op, known from the pruner: a run that executes no
        op this module looks at costs nothing more (the NodeDefs are indexed only once
        a run needs them, so a large TF1 graph without such ops is never walked twice)."""
        self._graph = meta_graph.graph_def
        self.ops = ops
        self.functions = {f.signature.name: f for f in self._graph.library.function}
        self._function_nodes: dict[str, dict[str, pb.NodeDef]] = {}
        # asset tensor node -> its file name under assets/
        self.asset_nodes = {(_split(t, False) or (t, 0))[0]: f for t, f in asset_tensors.items()}
        op_set = set(ops.values())
        self.has_switch = bool(op_set & {"Switch", "RefSwitch"})
        self.looked_at = (
            frozenset(op_set & (WATCHED_OPS | frozenset(self.functions)))
            if self.asset_nodes or "Assert" in op_set or self.functions
            else frozenset({"Assert"} & op_set)
        )
        self._live: dict[tuple[str, int | None], bool | None] = {}
        self._top: _Body | None = None
        self._asset_variables: dict[str, str] | None = None

    @property
    def top(self) -> _Body:
        if self._top is None:
            self._top = _Body({n.name: n for n in self._graph.node}, None, {})
        return self._top

    @property
    def asset_variables(self) -> dict[str, str]:
        """Variable node -> the asset an AssignVariableOp writes into it (TF2 exports)."""
        if self._asset_variables is None:
            found: dict[str, str] = {}
            if self.asset_nodes:
                for name, op in self.ops.items():
                    node = self.top.nodes[name]
                    if op == "AssignVariableOp" and len(node.input) >= 2:
                        variable = self._source(self.top, node.input[0], 0)
                        value = self._source(self.top, node.input[1], 0)
                        if variable is not None and value in self.asset_nodes:
                            found[variable] = self.asset_nodes[value]
            self._asset_variables = found
        return self._asset_variables

    # ------------------------------------------------------------- plumbing
    def _body_nodes(self, name: str) -> dict[str, pb.NodeDef]:
        found = self._function_nodes.get(name)
        if found is None:
            found = {n.name: n for n in self.functions[name].node_def}
            self._function_nodes[name] = found
        return found

    def _source(self, body: _Body, text: str, depth: int) -> str | None:
        """The node an input comes from, through identities (None: control input, or
        a function argument)."""
        split = _split(text, body.function is not None)
        if split is None or depth > MAX_DEPTH:
            return None
        node = body.nodes.get(split[0])
        if node is None:
            return None
        if node.op in IDENTITY_OPS and node.input:
            return self._source(body, node.input[0], depth + 1) or node.name
        return node.name

    def _callees(self, node: pb.NodeDef, body: _Body) -> list[tuple[str, list[str]]]:
        """(function, the inputs bound to its arguments) a call node runs; for `If` only
        the branch its predicate picks, when the predicate is a known constant."""
        if node.op in CALL_OPS:
            name = node.attr["f"].func.name if "f" in node.attr else ""
            return [(name, list(node.input))] if name in self.functions else []
        if node.op in IF_OPS and node.input:
            pred = self.value(body, node.input[0], 0)
            if not isinstance(pred, tuple) or len(pred) != 1:
                return []
            branch = "then_branch" if pred[0] else "else_branch"
            name = node.attr[branch].func.name if branch in node.attr else ""
            return [(name, list(node.input[1:]))] if name in self.functions else []
        if node.op in self.functions:
            return [(node.op, list(node.input))]
        return []

    def _bind(
        self, body: _Body, function: str, inputs: list[str], get: Callable[[_Body, str], object]
    ) -> _Body:
        signature = self.functions[function].signature
        data = [i for i in inputs if not i.startswith("^")]
        args = {
            arg.name: get(body, data[i]) if i < len(data) else None
            for i, arg in enumerate(signature.input_arg)
        }
        return _Body(self._body_nodes(function), function, args)

    # ------------------------------------------------------------- values
    def value(self, body: _Body, text: str, depth: int) -> Value | None:
        """The elements of a tensor computed from constants only; None when unknown."""
        split = _split(text, body.function is not None)
        if split is None or depth > MAX_DEPTH:
            return None
        name, output = split
        node = body.nodes.get(name)
        if node is None:
            found = body.args.get(name)
            return found if isinstance(found, tuple) else None
        op = node.op
        inputs = [i for i in node.input if not i.startswith("^")]
        if op == "Const" and "value" in node.attr:
            return _elements(node.attr["value"].tensor)
        if op in IDENTITY_OPS or (op in ("Switch", "RefSwitch") and body.function is None):
            return self.value(body, inputs[0], depth + 1) if inputs else None
        if op == "IdentityN" and output < len(inputs):
            return self.value(body, inputs[output], depth + 1)
        if op == "LogicalNot" and inputs:
            a = self.value(body, inputs[0], depth + 1)
            return None if a is None else tuple(not x for x in a)
        if (op in COMPARISONS or op in LOGICAL) and len(inputs) == 2:
            a = self.value(body, inputs[0], depth + 1)
            b = self.value(body, inputs[1], depth + 1)
            if a is None or b is None or not a or not b:
                return None
            if len(a) != len(b) and len(a) != 1 and len(b) != 1:
                return None
            n = max(len(a), len(b))
            pairs = [(a[i if len(a) > 1 else 0], b[i if len(b) > 1 else 0]) for i in range(n)]
            try:
                if op in LOGICAL:
                    return tuple(LOGICAL[op](bool(x), bool(y)) for x, y in pairs)
                return tuple(COMPARISONS[op](x, y) for x, y in pairs)
            except TypeError:
                return None
        if op in ("All", "Any") and inputs:
            a = self.value(body, inputs[0], depth + 1)
            if a is None:
                return None
            return (all(bool(x) for x in a),) if op == "All" else (any(bool(x) for x in a),)
        return None

    def live(self, body: _Body, name: str, depth: int, output: int | None = None) -> bool | None:
        """Whether a top-level node (or one output of a Switch) runs, as the executor
        passes deadness: True, False, or None when it depends on what is not constant.
        Function bodies (TF2 control flow is `If`, whose branch is chosen at the call)
        and graphs without Switch are always live."""
        if body.function is not None or not self.has_switch:
            return True
        key = (name, output)
        if key not in self._live:
            self._live[key] = None  # a cycle (a loop's NextIteration) reads as unknown
            self._live[key] = self._live_node(body, name, depth, output)
        return self._live[key]

    def _live_node(self, body: _Body, name: str, depth: int, output: int | None) -> bool | None:
        node = body.nodes.get(name)
        if node is None or depth > MAX_DEPTH:
            return None
        if node.op in ("Switch", "RefSwitch") and output is not None:
            if len(node.input) < 2:
                return None
            pred = self.value(body, node.input[1], depth + 1)
            if pred is None or len(pred) != 1:
                return None
            if bool(pred[0]) != bool(output):
                return False
        results = []
        for text in node.input:
            if text.startswith("^"):
                source, out = text[1:], None
                if body.nodes.get(source) is not None and body.nodes[source].op in (
                    "Switch",
                    "RefSwitch",
                ):
                    return None  # a Switch's control edge: deadness not followed
            else:
                split = _split(text, False)
                if split is None:
                    continue
                source, out = split
            results.append(self.live(body, source, depth + 1, out))
        if node.op in ("Merge", "RefMerge"):
            return True if any(r is True for r in results) else None
        if any(r is False for r in results):
            return False
        return True if all(r is True for r in results) else None

    # ------------------------------------------------------------- assets
    def asset(self, body: _Body, text: str, fed: frozenset[str], depth: int) -> _Asset | None:
        """The asset a file-name tensor holds, or None."""
        split = _split(text, body.function is not None)
        if split is None or depth > MAX_DEPTH:
            return None
        name = split[0]
        node = body.nodes.get(name)
        if node is None:
            found = body.args.get(name)
            return found if isinstance(found, _Asset) else None
        inputs = [i for i in node.input if not i.startswith("^")]
        if body.function is None and name in self.asset_nodes:
            filename = self.asset_nodes[name]
            if name in fed:
                return _Asset(filename, True, "")
            held = self.value(body, name, 0) if node.op == "Const" else None
            path = held[0] if held and isinstance(held[0], bytes) else b""
            return _Asset(filename, False, path.decode("utf-8", "replace"))
        if node.op in IDENTITY_OPS and inputs:
            return self.asset(body, inputs[0], fed, depth + 1)
        if node.op == "ReadVariableOp" and inputs and body.function is None:
            variable = self._source(body, inputs[0], depth + 1)
            if variable in self.asset_variables:
                # assigned from the fed asset placeholder by the loader's init run
                return _Asset(self.asset_variables[variable], True, "")
        return None

    # ------------------------------------------------------------- per run
    def facts(
        self, needed: Iterable[str], fed: frozenset[str]
    ) -> tuple[tuple[FileOpen, ...], tuple[FailingAssert, ...]]:
        """The asset opens and failing assertions of a run executing `needed`."""
        opens: dict[tuple[str, str], FileOpen] = {}
        asserts: dict[str, FailingAssert] = {}
        seen: set[tuple[str, tuple[object, ...]]] = set()

        def scan(body: _Body, names: Iterable[str], depth: int) -> None:
            for name in sorted(names):
                node = body.nodes[name]
                index = FILENAME_INPUTS.get(node.op)
                inputs = [i for i in node.input if not i.startswith("^")]
                if index is not None and index < len(inputs):
                    found = self.asset(body, inputs[index], fed, 0)
                    if found is not None:
                        where = body.where(name)
                        opens[(where, found.filename)] = FileOpen(
                            node.op, where, found.filename, found.fed, found.path
                        )
                if node.op == "Assert" and inputs:
                    condition = self.value(body, inputs[0], 0)
                    if (
                        condition is not None
                        and len(condition) == 1
                        and not condition[0]
                        and self.live(body, name, 0) is True
                    ):
                        where = body.where(name)
                        source = body.nodes.get((_split(inputs[0], True) or ("", 0))[0])
                        asserts[where] = FailingAssert(where, source.op if source else "argument")
                if depth >= MAX_CALL_DEPTH:
                    continue
                if body.function is None and self.live(body, name, 0) is False:
                    continue
                for function, call_inputs in self._callees(node, body):
                    inner_values = self._bind(
                        body, function, call_inputs, lambda b, t: self.value(b, t, 0)
                    )
                    inner_assets = self._bind(
                        body, function, call_inputs, lambda b, t: self.asset(b, t, fed, 0)
                    )
                    args = {
                        k: inner_values.args[k]
                        if inner_values.args[k] is not None
                        else inner_assets.args[k]
                        for k in inner_values.args
                    }
                    key = (function, tuple(repr(args[k]) for k in sorted(args)))
                    if key in seen:
                        continue
                    seen.add(key)
                    inner = _Body(inner_values.nodes, function, args)
                    scan(inner, list(inner.nodes), depth + 1)

        if not self.looked_at:
            return (), ()  # the graph holds no op a fact starts from
        watched = [n for n in needed if self.ops.get(n) in self.looked_at]
        if watched:
            scan(self.top, watched, 0)
        return (
            tuple(opens[k] for k in sorted(opens)),
            tuple(asserts[k] for k in sorted(asserts)),
        )
