"""The loader's steps and the first request, judged on real TensorFlow-written models
(tests/fixtures/tf-serve; tests/compat/test_agreement.py holds every one of them to
what real releases did). These pin the data each finding carries."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path
from worker.model.consumer import Loader
from worker.model.findings import Code, FixKind, Stage
from worker.model.verdict import Verdict

SERVE = Path(__file__).resolve().parents[1] / "fixtures" / "tf-serve" / "artifacts"


def _verdict(case: str, release: str, loader: Loader, producer: str = "tf2.16") -> Verdict:
    catalog = load_catalog()
    artifact = read_path(str(SERVE / producer / case))[0]
    return check_artifact(artifact, catalog.consumer(release, loader), catalog)


def _first_error(verdict: Verdict) -> tuple[str, str, str | None]:
    found = next(f for f in verdict.findings if f.severity == "error")
    return str(found.code), str(found.stage), found.fix.kind if found.fix else None


# (case, release, loader) -> (loads, serves, first error code, stage, fix kind)
CASES = [
    # tags: TF Serving's loader wants exactly {serve}; tf.saved_model.load wants one MetaGraph
    (
        "tags_serve_gpu",
        "2.21",
        Loader.SAVED_MODEL_V1,
        (False, False, Code.SAVED_MODEL_TAGS, Stage.LOAD, FixKind.EXPORT_SERVE_TAG),
    ),
    (
        "tags_two_meta_graphs",
        "2.21",
        Loader.SAVED_MODEL_V2,
        (False, False, Code.SAVED_MODEL_TAGS, Stage.LOAD, FixKind.LOAD_WITH_TAGS),
    ),
    # tables: no init op; tf.saved_model.load runs the default local init op instead
    (
        "table_no_init",
        "2.21",
        Loader.SAVED_MODEL_V1,
        (True, False, Code.RESOURCE_UNINITIALIZED, Stage.REQUEST, FixKind.ADD_INIT_OP),
    ),
    (
        "table_init_op_forgets_tables",
        "2.21",
        Loader.SAVED_MODEL_V2,
        (True, False, Code.RESOURCE_UNINITIALIZED, Stage.REQUEST, FixKind.ADD_INIT_OP),
    ),
    # feeds: a request error for the v1 loader, a load error for tf.saved_model.load
    (
        "unfed_placeholder",
        "2.21",
        Loader.SAVED_MODEL_V1,
        (True, False, Code.REQUEST_FEED, Stage.REQUEST, FixKind.FEED_PLACEHOLDER),
    ),
    (
        "unfed_in_second_signature",
        "2.21",
        Loader.SAVED_MODEL_V2,
        (False, False, Code.REQUEST_FEED, Stage.LOAD, FixKind.FEED_PLACEHOLDER),
    ),
    # init ops that cannot run fail the load
    (
        "init_collection_two_ops",
        "2.21",
        Loader.SAVED_MODEL_V1,
        (False, False, Code.INIT_FAILED, Stage.LOAD, FixKind.ADD_INIT_OP),
    ),
    # Python callables never run in another process
    (
        "py_func_on_request",
        "2.21",
        Loader.SAVED_MODEL_V1,
        (True, False, Code.REQUEST_PYTHON, Stage.REQUEST, FixKind.REEXPORT_WITHOUT_OP),
    ),
    # kernels: a Session places the whole graph at the restore
    (
        "kernel_off_request",
        "2.5",
        Loader.SAVED_MODEL_V1,
        (False, False, Code.KERNEL_MISSING, Stage.LOAD, FixKind.REEXPORT_WITHOUT_OP),
    ),
]


@pytest.mark.parametrize(("case", "release", "loader", "expected"), CASES)
def test_each_step_fails_as_tensorflow_fails_it(
    case: str, release: str, loader: Loader, expected: tuple[object, ...]
) -> None:
    verdict = _verdict(case, release, loader)
    loads, serves, code, stage, fix = expected
    assert (verdict.loads, verdict.serves) == (loads, serves)
    assert _first_error(verdict) == (str(code), str(stage), fix)


# What serves: the same families with the step done right.
@pytest.mark.parametrize(
    "case",
    [
        "table_main_op",
        "table_legacy_init_op",
        "vocab_asset_main_op",
        "local_variable_main_op",
        "placeholder_with_default",
        "py_func_off_request",
        "iterator_main_op",
    ],
)
@pytest.mark.parametrize("loader", [Loader.SAVED_MODEL_V1, Loader.SAVED_MODEL_V2])
def test_a_step_done_right_serves(case: str, loader: Loader) -> None:
    verdict = _verdict(case, "2.21", loader)
    assert verdict.serves, [f.message for f in verdict.findings]


def test_tf_saved_model_load_fills_tables_without_an_init_op() -> None:
    # load_v1_in_v2 runs Scaffold.default_local_init_op when the MetaGraph has no init op
    assert _verdict("table_no_init", "2.21", Loader.SAVED_MODEL_V2).serves


def test_an_unfilled_resource_names_itself_and_the_run_that_reads_it() -> None:
    verdict = _verdict("variable_outside_saver", "2.21", Loader.SAVED_MODEL_V1)
    finding = next(f for f in verdict.findings if f.code == Code.RESOURCE_UNINITIALIZED)
    assert "variable b (VarHandleOp)" in finding.message
    assert "serving_default request" in finding.message
    assert finding.op == "VarHandleOp"
