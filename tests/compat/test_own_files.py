"""What a SavedModel's own files decide (worker.compat.own_files), judged on models real
TensorFlow wrote (tests/fixtures/tf-assets; tests/compat/test_agreement.py holds every
row to what real releases did). These pin the data each finding carries and the
controls that must not fail."""

from __future__ import annotations

import tarfile
from dataclasses import replace
from pathlib import Path

import pytest

from worker.catalog.catalog import load_catalog
from worker.compat.check import check_artifact
from worker.formats.read import read_path, read_source
from worker.formats.source import FileSource
from worker.model.consumer import Loader
from worker.model.findings import Code, FixKind, Stage
from worker.model.verdict import Verdict

ASSETS = Path(__file__).resolve().parents[1] / "fixtures" / "tf-assets" / "artifacts"
V1, V2 = Loader.SAVED_MODEL_V1, Loader.SAVED_MODEL_V2


def _verdict(case: str, loader: Loader, producer: str = "tf2.8", gpu: bool = False) -> Verdict:
    catalog = load_catalog()
    artifact = read_path(str(ASSETS / producer / case))[0]
    consumer = replace(catalog.consumer("2.8", loader), gpu=gpu)
    return check_artifact(artifact, consumer, catalog)


def _first_error(verdict: Verdict) -> tuple[str, str, str | None]:
    found = next(f for f in verdict.findings if f.severity == "error")
    return str(found.code), str(found.stage), found.fix.kind if found.fix else None


# (case, producer, loader) -> (first error code, stage, fix kind); each fails for 2.8
CASES = [
    # an asset deleted after saving, opened by the init run: the load fails
    ("tf1_index_table_legacy_init_asset_deleted", "tf1.15", V1, Code.ASSET_MISSING, Stage.LOAD),
    ("tf1_index_table_main_op_asset_deleted", "tf2.8", V2, Code.ASSET_MISSING, Stage.LOAD),
    ("tf2_static_table_asset_deleted", "tf2.8", V1, Code.ASSET_MISSING, Stage.LOAD),
    ("tf2_static_table_asset_deleted", "tf2.8", V2, Code.ASSET_MISSING, Stage.LOAD),
    ("keras_string_lookup_asset_deleted", "tf2.8", V2, Code.ASSET_MISSING, Stage.LOAD),
    # a TF2 request reading a deleted asset: every request fails
    ("tf2_request_reads_asset_deleted", "tf2.8", V1, Code.ASSET_MISSING, Stage.REQUEST),
    ("tf2_request_reads_asset_deleted", "tf2.8", V2, Code.ASSET_MISSING, Stage.REQUEST),
    # a TF1 request opening the asset tensor's Const: the path written at export
    ("tf1_request_reads_asset_tensor", "tf1.15", V1, Code.ASSET_EXPORT_PATH, Stage.REQUEST),
    ("tf1_request_reads_asset_tensor", "tf2.8", V2, Code.ASSET_EXPORT_PATH, Stage.REQUEST),
    # assertions over constants: in the init run, in a TF2 init function, on a request
    ("tf1_init_assert_false_constant", "tf1.15", V1, Code.ASSERT_FALSE, Stage.LOAD),
    ("tf1_init_assert_constant_compare_guarded", "tf1.15", V1, Code.ASSERT_FALSE, Stage.LOAD),
    ("tf1_init_assert_constant_compare_guarded", "tf2.8", V2, Code.ASSERT_FALSE, Stage.LOAD),
    ("tf2_init_function_assert_false", "tf2.8", V1, Code.ASSERT_FALSE, Stage.LOAD),
    ("tf2_init_function_assert_false", "tf2.8", V2, Code.ASSERT_FALSE, Stage.LOAD),
    ("tf1_request_assert_false_constant", "tf2.8", V1, Code.ASSERT_FALSE, Stage.REQUEST),
    ("tf2_request_assert_false_constant", "tf2.8", V2, Code.ASSERT_FALSE, Stage.REQUEST),
    # a lookup in a table the checkpoint holds empty, its default a Gather index
    ("tf1_empty_table_default_into_gather", "tf1.15", V1, Code.LOOKUP_DEFAULT_INDEX, Stage.REQUEST),
]


@pytest.mark.parametrize(("case", "producer", "loader", "code", "stage"), CASES)
def test_what_the_files_fix_fails_where_tensorflow_fails(
    case: str, producer: str, loader: Loader, code: Code, stage: Stage
) -> None:
    verdict = _verdict(case, loader, producer)
    assert verdict.loads is (stage != Stage.LOAD) and verdict.serves is False
    assert _first_error(verdict)[:2] == (str(code), str(stage))


# Controls: what the files leave open must not fail.
@pytest.mark.parametrize(
    "case",
    [
        "tf1_unread_asset_deleted",  # declared, deleted, opened by nothing
        "tf2_unread_asset_deleted",
        "tf1_request_reads_fed_path",  # the request feeds the file name
        "tf2_request_reads_asset_present",
        "tf1_init_assert_true_constant_guarded",
        "tf2_init_function_assert_true",
        "tf1_request_assert_on_input",  # the condition reads the request's input
        "tf2_request_assert_on_input",
        "tf1_table_filled_by_request",  # the request inserts before it looks up
        "tf1_index_table_legacy_init",
        "tf2_static_table_from_file",
    ],
)
@pytest.mark.parametrize("loader", [V1, V2])
def test_what_the_files_leave_open_serves(case: str, loader: Loader) -> None:
    verdict = _verdict(case, loader)
    assert verdict.serves, [f.message for f in verdict.findings]


def test_a_missing_asset_names_the_op_and_the_file() -> None:
    verdict = _verdict("tf2_static_table_asset_deleted", V1)
    finding = next(f for f in verdict.findings if f.code == Code.ASSET_MISSING)
    assert finding.op == "InitializeTableFromTextFileV2"
    assert "asset vocab.txt" in finding.message and "init run" in finding.message
    assert finding.fix is not None and finding.fix.kind == FixKind.SHIP_ASSETS


def test_a_request_reading_the_export_path_names_it() -> None:
    verdict = _verdict("tf1_request_reads_asset_tensor", V1, "tf1.15")
    finding = next(f for f in verdict.findings if f.code == Code.ASSET_EXPORT_PATH)
    assert finding.op == "ReadFile" and "notes.txt" in finding.message
    assert finding.fix is not None and finding.fix.kind == FixKind.READ_ASSET_AT_INIT


def test_a_gpu_consumer_is_not_told_the_gather_fails() -> None:
    # GPU Gather kernels answer zeros for an index out of range
    verdict = _verdict("tf1_empty_table_default_into_gather", V1, "tf1.15", gpu=True)
    assert not any(f.code == Code.LOOKUP_DEFAULT_INDEX for f in verdict.findings)


# Where the listing decides: an archive lists every member; a lone blob says nothing.
def test_an_archive_without_the_asset_fails_the_load(tmp_path: Path) -> None:
    model = ASSETS / "tf2.8" / "tf2_static_table_asset_deleted"
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(model, arcname="model/1")
    catalog = load_catalog()
    [artifact] = read_path(str(archive))
    assert artifact.asset_files == ()
    verdict = check_artifact(artifact, catalog.consumer("2.8", V1), catalog)
    assert verdict.loads is False and _first_error(verdict)[0] == Code.ASSET_MISSING


def test_a_lone_saved_model_blob_is_not_told_its_assets_are_missing() -> None:
    model = ASSETS / "tf2.8" / "tf2_static_table_asset_deleted" / "saved_model.pb"
    [artifact] = read_source(FileSource(model), "bucket/model/1/saved_model.pb")
    assert artifact.asset_files is None
    catalog = load_catalog()
    verdict = check_artifact(artifact, catalog.consumer("2.8", V1), catalog)
    assert not any(f.code == Code.ASSET_MISSING for f in verdict.findings)
