"""What a run's own constants and assets decide (worker.formats.fixed_values), on small
MetaGraphs written node by node: the narrow edges of the evaluation. The families on
real TensorFlow-written SavedModels are in tests/formats/test_serve_plan.py and the
agreement matrix (tests/fixtures/tf-assets)."""

from __future__ import annotations

from worker.formats.graph import graph_nodes_from_message
from worker.formats.serve_plan import serve_plan
from worker.model.serving import Run, ServePlan
from worker.proto import tensorflow_subset_pb2 as pb

BOOL, INT32, FLOAT, STRING = 10, 3, 1, 7


def _node(graph: pb.GraphDef, name: str, op: str, *inputs: str) -> pb.NodeDef:
    node = graph.node.add(name=name, op=op)
    node.input.extend(inputs)
    return node


def _const(graph: pb.GraphDef, name: str, dtype: int, *values: object) -> None:
    tensor = _node(graph, name, "Const").attr["value"].tensor
    tensor.dtype = dtype
    if len(values) != 1:
        tensor.tensor_shape.dim.add(size=len(values))
    field = {BOOL: "bool_val", INT32: "int_val", FLOAT: "float_val", STRING: "string_val"}[dtype]
    getattr(tensor, field).extend(values)


def _plan(graph: pb.GraphDef, init: str = "", assets: dict[str, str] | None = None) -> ServePlan:
    meta = pb.MetaGraphDef()
    meta.graph_def.CopyFrom(graph)
    if init:
        meta.collection_def["saved_model_main_op"].node_list.value.append(init)
    for tensor, filename in (assets or {}).items():
        meta.asset_file_def.add(filename=filename).tensor_info.name = tensor
    signature = meta.signature_def["serving_default"]
    signature.inputs["x"].name = "x:0"
    signature.outputs["y"].name = "y:0"
    _, nodes = graph_nodes_from_message(meta.graph_def)
    return serve_plan(meta, nodes)


def _init(plan: ServePlan) -> Run:
    assert plan.init is not None
    return plan.init


def _graph_with_assert(*condition: tuple[str, str, tuple[str, ...]]) -> pb.GraphDef:
    graph = pb.GraphDef()
    _node(graph, "x", "Placeholder")
    _node(graph, "y", "Identity", "x")
    for name, op, inputs in condition:
        _node(graph, name, op, *inputs)
    _node(graph, "check", "Assert", "cond", "x")
    _node(graph, "init", "NoOp", "^check")
    return graph


# Conditions computed from constants only: false is a finding, true or unknown is not.
def test_an_assert_on_a_false_constant_fails_the_init_run() -> None:
    graph = _graph_with_assert()
    _const(graph, "cond", BOOL, False)
    assert [a.node for a in _init(_plan(graph, "init")).asserts] == ["node check"]


def test_a_comparison_of_constants_is_evaluated() -> None:
    graph = _graph_with_assert(
        ("less", "Less", ("five", "three")), ("cond", "All", ("less", "axis"))
    )
    _const(graph, "five", FLOAT, 5.0, 1.0)
    _const(graph, "three", FLOAT, 3.0)
    _const(graph, "axis", INT32, 0)
    asserts = _init(_plan(graph, "init")).asserts
    assert [(a.node, a.condition) for a in asserts] == [("node check", "All")]


def test_a_true_condition_is_no_finding() -> None:
    graph = _graph_with_assert(("cond", "Equal", ("one", "one_again")))
    _const(graph, "one", INT32, 1)
    _const(graph, "one_again", INT32, 1)
    assert _init(_plan(graph, "init")).asserts == ()


def test_a_condition_a_caller_can_feed_is_unknown() -> None:
    graph = _graph_with_assert(("cond", "PlaceholderWithDefault", ("default",)))
    _const(graph, "default", BOOL, False)
    assert _init(_plan(graph, "init")).asserts == ()


def test_a_condition_through_an_op_not_evaluated_is_unknown() -> None:
    graph = _graph_with_assert(("cond", "Cast", ("zero",)))
    _const(graph, "zero", INT32, 0)
    assert _init(_plan(graph, "init")).asserts == ()


def test_an_assert_that_no_run_executes_is_no_finding() -> None:
    graph = _graph_with_assert()
    _const(graph, "cond", BOOL, False)
    plan = _plan(graph)  # no init op: nothing runs `check`
    assert plan.init is None and plan.requests[0].asserts == ()


# tf.cond in a TF1 graph: the Assert runs only in the live branch.
def _guarded(pred: bool) -> pb.GraphDef:
    graph = pb.GraphDef()
    _node(graph, "x", "Placeholder")
    _node(graph, "y", "Identity", "x")
    _const(graph, "cond", BOOL, pred)
    _node(graph, "switch", "Switch", "cond", "cond")
    _node(graph, "check", "Assert", "switch:0", "x")  # the false branch
    _node(graph, "init", "NoOp", "^check")
    return graph


def test_an_assert_in_the_live_branch_of_a_constant_switch_fails() -> None:
    assert len(_init(_plan(_guarded(False), "init")).asserts) == 1


def test_an_assert_in_the_dead_branch_of_a_constant_switch_never_runs() -> None:
    assert _init(_plan(_guarded(True), "init")).asserts == ()


# Assets: the loader feeds them in its init run; a request executes the Const.
def _asset_graph(read_at_request: bool) -> pb.GraphDef:
    graph = pb.GraphDef()
    _node(graph, "x", "Placeholder")
    _const(graph, "vocab_path", STRING, b"/tmp/export/vocab.txt")
    _node(graph, "table", "HashTableV2")
    _node(graph, "fill", "InitializeTableFromTextFileV2", "table", "vocab_path")
    _node(graph, "init", "NoOp", "^fill")
    if read_at_request:
        _node(graph, "contents", "ReadFile", "vocab_path")
        _node(graph, "y", "StringJoin", "x", "contents")
    else:
        _node(graph, "y", "Identity", "x")
    return graph


def test_the_init_run_opens_the_shipped_asset() -> None:
    plan = _plan(_asset_graph(False), "init", {"vocab_path:0": "vocab.txt"})
    [opened] = _init(plan).opens
    assert (opened.op, opened.asset, opened.fed) == (
        "InitializeTableFromTextFileV2",
        "vocab.txt",
        True,
    )
    assert plan.requests[0].opens == ()


def test_a_request_opens_the_path_written_at_export() -> None:
    plan = _plan(_asset_graph(True), "init", {"vocab_path:0": "vocab.txt"})
    [opened] = plan.requests[0].opens
    assert (opened.op, opened.fed, opened.path) == ("ReadFile", False, "/tmp/export/vocab.txt")


def test_a_file_name_the_request_feeds_is_no_asset_open() -> None:
    graph = pb.GraphDef()
    _node(graph, "x", "Placeholder")
    _node(graph, "y", "ReadFile", "x")
    _const(graph, "vocab_path", STRING, b"/tmp/export/vocab.txt")
    assert _plan(graph, assets={"vocab_path:0": "vocab.txt"}).requests[0].opens == ()
