"""A fleet change re-tags registered versions from their stored reports: the same tags
and report bytes as reading every model again, on SavedModels real TensorFlow wrote
(tf1.15, tf2.4, tf2.21), with the model itself gone; the read rule still refuses what
it refuses; a report that cannot stand for a re-read sends the check to the model."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.mlflow_server import model_directory, tensorflow_mlmodel
from tests.pipeline.test_registered import MemoryRegistry
from tests.pipeline.test_sagemaker_packages import MemoryTaggedRegistry, aws, package
from worker.fleet.checker import Checker
from worker.formats.access import ReadPolicy
from worker.model.registry import RegistryJob
from worker.pipeline.packages import check_model_package
from worker.pipeline.process import ReportLocation
from worker.pipeline.registered import check_model_version
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.s3 import S3ObjectStore

__all__ = ["aws"]  # the moto fixture, shared with the SageMaker package tests

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "tf-real" / "artifacts"
SAVED_MODELS = sorted(
    p
    for p in [*REAL.glob("tf2.21/*"), REAL / "tf1.15/savedmodel_v1", *REAL.glob("tf2.4/new_attr_*")]
    if (p / "saved_model.pb").is_file()
)
LOCATION = ReportLocation("reports", "tfcompat-reports/")
POLICY = ReadPolicy(local_roots=(tempfile.gettempdir(),))
BEFORE = "consumers:\n  - {name: canary, serving: '2.21'}\n  - {name: batch, tensorflow: '2.12'}\n"
AFTER = (
    "consumers:\n"
    "  - {name: canary, serving: '2.21'}\n"
    "  - {name: edge, tensorflow: '1.15', loader: graph-import}\n"
    "  - {name: old-serving, serving: '2.4.1'}\n"
    "  - {name: eager, tensorflow: '2.15', loader: saved-model-v2}\n"
)


def checker_of(tmp_path: Path, name: str, text: str) -> Checker:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return build_checker(Settings(fleet=str(path)))


def job_of(source: Path) -> RegistryJob:
    return RegistryJob("mlflow", f"{source.parent.name}-{source.name}", "1", "d-1")


def checked(
    source: Path, checker: Checker, directory: Path | None = None
) -> tuple[MemoryRegistry, MemoryObjectStore]:
    """A version of `source`'s SavedModel (in `directory`, else a new one), checked under
    `checker`'s fleet."""
    directory = directory or model_directory({"tf2model": source}, tensorflow_mlmodel())
    registry = MemoryRegistry(directory)
    store = MemoryObjectStore()
    outcome = check_model_version(job_of(source), registry, store, checker, LOCATION, POLICY)
    assert outcome.action == "checked" and outcome.source == "read"
    return registry, store


def report_bytes(store: MemoryObjectStore, job: RegistryJob) -> bytes:
    return store.objects[("reports", f"tfcompat-reports/mlflow/{job.name}/{job.version}.json")]


def test_fixtures_cover_several_releases_and_verdicts() -> None:
    assert len(SAVED_MODELS) >= 20
    assert {p.parent.name for p in SAVED_MODELS} == {"tf1.15", "tf2.4", "tf2.21"}


# Re-tag vs re-read: equal tags and equal report bytes, the model never opened.
def test_retag_from_the_stored_report_writes_what_a_re_read_writes(tmp_path: Path) -> None:
    before, after = checker_of(tmp_path, "before", BEFORE), checker_of(tmp_path, "after", AFTER)
    statuses = set()
    for source in SAVED_MODELS:
        job = job_of(source)
        reread_registry, reread_store = checked(source, before)
        retag_registry, retag_store = checked(source, before, reread_registry.directory)
        reread = check_model_version(job, reread_registry, reread_store, after, LOCATION, POLICY)
        shutil.rmtree(retag_registry.directory)  # a re-tag must not need the model
        retag_registry.directory.mkdir()
        retag = check_model_version(
            job, retag_registry, retag_store, after, LOCATION, POLICY, reuse_report=True
        )
        assert (reread.source, retag.source) == ("read", "stored"), source
        assert retag_registry.tags == reread_registry.tags, source
        assert report_bytes(retag_store, job) == report_bytes(reread_store, job), source
        assert retag_registry.writes == reread_registry.writes, source
        statuses.add(retag.status)
    assert {"compatible", "incompatible"} <= statuses


def test_a_refused_source_is_not_retagged_from_its_report(tmp_path: Path) -> None:
    before, after = checker_of(tmp_path, "before", BEFORE), checker_of(tmp_path, "after", AFTER)
    source = REAL / "tf2.21" / "new_op"
    registry, store = checked(source, before)
    tags = dict(registry.tags)
    outcome = check_model_version(
        job_of(source), registry, store, after, LOCATION, ReadPolicy(), reuse_report=True
    )
    assert outcome.action == "refused" and registry.tags == tags


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda d: d.update(format="tfcompat-report/1"), id="older-format"),
        pytest.param(lambda d: d["model_version"].update(artifact_uri="/elsewhere"), id="source"),
        pytest.param(lambda d: d["artifacts"][0].pop("metadata"), id="no-metadata"),
        pytest.param(lambda d: d["artifacts"][0]["metadata"].pop("format"), id="bad-metadata"),
    ],
)
def test_a_report_that_cannot_stand_for_the_model_sends_the_check_to_it(
    tmp_path: Path, spoil: object
) -> None:
    before, after = checker_of(tmp_path, "before", BEFORE), checker_of(tmp_path, "after", AFTER)
    source = REAL / "tf2.21" / "new_op"
    job = job_of(source)
    registry, store = checked(source, before)
    key = ("reports", f"tfcompat-reports/mlflow/{job.name}/{job.version}.json")
    document = json.loads(store.objects[key])
    spoil(document)  # type: ignore[operator]
    store.objects[key] = json.dumps(document).encode()
    outcome = check_model_version(job, registry, store, after, LOCATION, POLICY, reuse_report=True)
    assert outcome.action == "checked" and outcome.source == "read"
    reread_registry, reread_store = checked(source, before, registry.directory)
    check_model_version(job, reread_registry, reread_store, after, LOCATION, POLICY)
    assert registry.tags == reread_registry.tags
    assert report_bytes(store, job) == report_bytes(reread_store, job)


def test_a_missing_report_sends_the_check_to_the_model(tmp_path: Path) -> None:
    before, after = checker_of(tmp_path, "before", BEFORE), checker_of(tmp_path, "after", AFTER)
    source = REAL / "tf2.21" / "savedmodel_v2"
    registry, store = checked(source, before)
    store.objects.clear()
    outcome = check_model_version(
        job_of(source), registry, store, after, LOCATION, POLICY, reuse_report=True
    )
    assert outcome.source == "read" and outcome.action == "checked"


# SageMaker: the package's archive read by a fleet change only when its report cannot do.
def test_a_package_is_retagged_from_its_report_as_a_re_read_tags_it(
    tmp_path: Path, aws: tuple[Any, Any]
) -> None:
    s3, sm = aws
    before, after = checker_of(tmp_path, "before", BEFORE), checker_of(tmp_path, "after", AFTER)
    arn = package(sm, "2.4.1")
    job = RegistryJob("sagemaker", "ranking", arn, "e-1")
    store = S3ObjectStore(s3, Settings())
    policy = ReadPolicy(("models",))
    key = f"tfcompat-reports/sagemaker/ranking/{arn}.json"

    def check(registry: MemoryTaggedRegistry, checker: Checker, reuse: bool) -> str:
        outcome = check_model_package(
            job, registry, store, checker, LOCATION, policy, reuse_report=reuse
        )
        assert outcome.action == "checked"
        return outcome.source

    reread = MemoryTaggedRegistry(sm)
    assert (check(reread, before, False), check(reread, after, False)) == ("read", "read")
    reread_report = s3.get_object(Bucket="reports", Key=key)["Body"].read()
    retag = MemoryTaggedRegistry(sm)
    check(retag, before, False)
    s3.delete_object(Bucket="models", Key="ranking/1/model.tar.gz")  # not needed any more
    assert check(retag, after, True) == "stored"
    assert retag.package_tags == reread.package_tags
    assert retag.package_tags["tfcompat.consumer.sagemaker-image"] == "incompatible"
    assert s3.get_object(Bucket="reports", Key=key)["Body"].read() == reread_report
    refused = check_model_package(
        job, retag, store, after, LOCATION, ReadPolicy(("other",)), reuse_report=True
    )
    assert refused.action == "refused"
