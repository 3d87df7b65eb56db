"""Copies without the `_output_shapes` a consumer's import contradicts (`import.output-shapes`).

The rewrite removes the attr from the named op's top-level nodes and from every node
downstream of them, nowhere else; `tools/fixtures/verify_shape_fixes.py` loaded every
such copy of the fixture sets in the release that failed the original
(`shape_fixes.json`), and the copies rebuilt here must get the verdicts real
TensorFlow gave them.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import text_format

from tests.truth import LOADERS, REAL, REAL_CACHE, SHAPES, read_artifacts
from worker.catalog.catalog import load_catalog
from worker.cli.fix import _consumers
from worker.compat.check import check_artifact
from worker.fix.local import build_copy, write_copy
from worker.fix.plan import OUTPUT_SHAPES, STRIPS_SHAPES, Drop, plan_fix, safe_for
from worker.fix.rewrite import downstream, render, rewrite_message
from worker.fix.text import rewrite_text
from worker.formats.read import read_path
from worker.formats.source import BytesSource
from worker.model.findings import Code
from worker.proto import tensorflow_subset_pb2 as pb

UNIQUE = Drop.output_shapes("UniqueV2")


def test_downstream_follows_data_inputs_only() -> None:
    nodes = [
        ("x", "Placeholder", []),
        ("u", "UniqueV2", ["x", "axis"]),
        ("sum", "Sum", ["u:0", "axis"]),
        ("idx", "Identity", ["u:1"]),
        ("after", "NoOp", ["^u"]),  # a control input carries no shape
        ("mul", "Mul", ["sum", "x"]),
        ("other", "Const", []),
    ]
    assert downstream(nodes, {"UniqueV2"}) == {"u", "sum", "idx", "mul"}
    assert downstream(nodes, {"Conv2D"}) == set()


def _shapes(*dims: list[int]) -> pb.AttrValue:
    value = pb.AttrValue()
    for shape in dims:
        proto = value.list.shape.add()
        for size in shape:
            proto.dim.add().size = size
    return value


def _graph() -> pb.GraphDef:
    graph = pb.GraphDef()
    for name, op, inputs in [
        ("x", "Placeholder", []),
        ("u", "UniqueV2", ["x", "axis"]),
        ("sum", "Sum", ["u", "axis"]),
        ("after", "NoOp", ["^u"]),
        ("axis", "Const", []),
    ]:
        node = graph.node.add(name=name, op=op, input=inputs)
        node.attr[OUTPUT_SHAPES].CopyFrom(_shapes([-1, 3]))
        node.attr["T"].type = pb.DT_FLOAT
    function = graph.library.function.add()
    function.signature.name = "f"
    inner = function.node_def.add(name="u", op="UniqueV2", input=["a"])
    inner.attr[OUTPUT_SHAPES].CopyFrom(_shapes([-1]))
    graph.versions.producer = 134
    return graph


def _without_shapes(graph: pb.GraphDef) -> tuple[set[str], bool]:
    """The top-level nodes without `_output_shapes`, and whether the function kept its."""
    top = {n.name for n in graph.node if OUTPUT_SHAPES not in n.attr}
    return top, OUTPUT_SHAPES in graph.library.function[0].node_def[0].attr


def test_the_wire_rewrite_strips_the_op_and_what_reads_it_and_nothing_else() -> None:
    original = _graph()
    source = BytesSource("g.pb", original.SerializeToString())
    edit = rewrite_message(source, "graph", [UNIQUE])
    assert edit is not None
    copy = pb.GraphDef.FromString(render(source, edit.pieces))
    assert _without_shapes(copy) == ({"u", "sum"}, True)
    assert all(n.attr["T"].type == pb.DT_FLOAT for n in copy.node)  # other attrs stay
    assert sorted(a for _, a, _ in edit.removed) == [OUTPUT_SHAPES] * 2


def test_the_text_rewrite_strips_the_same_nodes() -> None:
    text = text_format.MessageToString(_graph()).encode()
    result, stripped = rewrite_text(BytesSource("g.pbtxt", text), "graph", [UNIQUE])
    assert result is not None and stripped == 2
    copy = text_format.Parse(result.decode(), pb.GraphDef())
    assert _without_shapes(copy) == ({"u", "sum"}, True)


def test_an_output_shapes_drop_is_safe_for_every_binary() -> None:
    assert UNIQUE.rule == STRIPS_SHAPES and UNIQUE.strips_shapes
    assert safe_for(UNIQUE, {})


# (fixture, release, the drops the plan must hold)
CASES = [
    ("tf1.15/unique_axis_meta", "2.4", {"UniqueV2._output_shapes"}),
    ("tf1.13/layers_bn_trained_savedmodel", "2.12", {"FusedBatchNormGrad._output_shapes"}),
    ("tf1.15/fused_bn_inference_grad_meta", "2.16", {"FusedBatchNormGradV3._output_shapes"}),
    ("tf2.12/fused_bn_inference_grad_meta", "1.15", {"FusedBatchNormGradV3._output_shapes"}),
]


@pytest.mark.parametrize(("fixture", "release", "drops"), CASES)
def test_a_contradicted_record_is_fixed(fixture: str, release: str, drops: set[str]) -> None:
    catalog = load_catalog()
    (artifact,) = read_artifacts(SHAPES, fixture)
    plan = plan_fix(artifact, [catalog.consumer(release)], catalog)
    (fix,) = plan.consumers
    assert Code.OUTPUT_SHAPES in {f.code for f in fix.before.findings}
    assert fix.state == "fixed", [f.message for f in fix.blockers]
    assert drops <= {f"{d.op}.{d.attr}" for d in plan.drops}


def test_musicnn_is_fixed_for_every_release_that_fails_it(tmp_path: Path) -> None:
    # A TF 1.12 `.meta` musicnn 0.1.0 ships: its inference-mode FusedBatchNormGrad
    # records reserve spaces of [C], which 2.2 and later infer as [0].
    (artifact,) = read_artifacts(REAL, "musicnn-0.1.0/MTT_musicnn")
    catalog = load_catalog()
    consumers = [catalog.consumer(r) for r in ("2.4", "2.12", "2.21")]
    plan = plan_fix(artifact, consumers, catalog)
    assert [c.state for c in plan.consumers] == ["fixed"] * 3
    model = REAL_CACHE / "musicnn-0.1.0" / "MTT_musicnn" / ".meta"
    copy, _ = build_copy(str(model), consumers, catalog)
    (written,) = copy.plans
    assert written.shapes_stripped == 336  # of 2,896 nodes: 18 gradients and what reads them
    out = tmp_path / "model.meta"
    write_copy(copy, str(out), False, force=False)
    (fixed,) = read_path(str(out))
    for consumer in consumers:
        verdict = check_artifact(fixed, consumer, catalog)
        assert verdict.serves, [f.message for f in verdict.findings]
    assert json.loads(json.dumps(written.to_json()))["output_shapes_stripped"] == 336


def test_a_serving_binary_is_not_asked_to_strip_anything() -> None:
    # TF Serving's C++ loader builds the graph without an import: no finding, no rewrite
    catalog = load_catalog()
    (artifact,) = read_artifacts(SHAPES, "tf1.13/layers_bn_trained_savedmodel")
    serving = _consumers(["serving==2.12"])
    plan = plan_fix(artifact, serving, catalog)
    assert not any(d.strips_shapes for d in plan.drops)


# --- agreement with what real TensorFlow did with the copies ------------------------


@cache
def _entries() -> list[tuple[Path, str, dict[str, Any]]]:
    found = []
    for fixture_set in (SHAPES, REAL):
        path = fixture_set / "shape_fixes.json"
        for key, entry in json.loads(path.read_text()).items():
            found.append((fixture_set, key, entry))
    return found


# Copies real TensorFlow imported and then failed to run, where the checks say they
# serve, each with why. Strict: an entry that starts to agree fails.
KNOWN_MISSES = {
    f"{producer}/unique_axis_meta#fixed-for-tf1.15": (
        "1.15's UniqueV2 shape function gives `y` rank 1 along an axis where its kernel "
        "returns a matrix: the copy imports, and the run fails as 1.15's own export of the "
        "graph does ('Unable to broadcast tensor of shape [1,3] to tensor of shape [2,1]', "
        "tests/compat/test_agreement.py KNOWN_MISSES)"
    )
    for producer in ("tf2.4", "tf2.8", "tf2.12")
}


def test_every_contradicted_record_real_tensorflow_met_was_fixed_and_verified() -> None:
    entries = {k: e for _, k, e in _entries()}
    assert len(entries) >= 109
    assert all(e["state"] == "written" for e in entries.values())
    loads = [(k, lo) for k, e in entries.items() for lo in e["loaders"].values()]
    assert all(lo["ok"] for _, lo in loads)  # every copy imports
    assert {k for k, lo in loads if not lo["ran"]} == set(KNOWN_MISSES)
    # The reference's own release returns the original's outputs from every copy it runs.
    assert all(lo["copy_in_reference_release_equal"] for _, lo in loads if lo["ran"])


@pytest.mark.parametrize(
    ("fixture_set", "key", "entry"), _entries(), ids=[k for _, k, _ in _entries()]
)
def test_the_rebuilt_copy_gets_the_verdicts_real_tensorflow_gave(
    fixture_set: Path, key: str, entry: dict[str, Any], tmp_path: Path
) -> None:
    doc = {a["id"]: a for a in json.loads((fixture_set / "artifacts.json").read_text())}
    read_artifacts(fixture_set, entry["artifact"])  # fetches a real model when absent
    item = doc[entry["artifact"]]
    model = (REAL_CACHE if item.get("cache") else fixture_set) / item["load_path"]
    if item["format"] == "savedmodel" and not model.is_dir():
        model = model.parent
    catalog = load_catalog()
    copy, is_dir = build_copy(str(model), _consumers(entry["for"]), catalog)
    assert copy.writable, key
    assert sorted({f"{d.op}.{d.attr}" for p in copy.plans for d in p.drops}) == entry["rewrites"]
    assert sum(p.shapes_stripped or 0 for p in copy.plans) == entry["output_shapes_stripped"]
    out = tmp_path / ("copy" if is_dir else model.name)
    write_copy(copy, str(out), is_dir, force=False)
    version = next(s.split("==")[1].split("@")[0] for s in entry["for"])
    for loader, result in entry["loaders"].items():
        consumer = catalog.consumer(version, LOADERS[loader])
        verdicts = [check_artifact(a, consumer, catalog) for a in read_path(str(out))]
        assert all(v.loads for v in verdicts) == result["ok"], (loader, key)
        serves = all(v.serves for v in verdicts)
        assert (serves == result["ran"]) != (key in KNOWN_MISSES), (loader, key)
