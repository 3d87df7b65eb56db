"""What a registry user can make the worker read, against a real `mlflow server`.

MLflow accepts a model version whose `source` is a local path when it lies inside
its run's artifact location, and any user may create an experiment whose artifact
location is any path (`file:///etc`, an NFS share); a version's source may also be
any bucket. The worker reads such a version only as the read rule allows
(`TFCOMPAT_LOCAL_ROOTS`, `TFCOMPAT_BUCKETS`), at registration and at every re-check.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pipeline.mlflow_server import MlflowServer, tensorflow_mlmodel
from tests.pipeline.services import ROOT
from worker.formats.access import ReadPolicy
from worker.model.registry import RegistryJob
from worker.pipeline.process import ReportLocation
from worker.pipeline.registered import check_model_version
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.mlflow import MlflowRegistry

pytestmark = [pytest.mark.services, pytest.mark.slow]

NEW_OP = ROOT / "tests" / "fixtures" / "tf-real" / "artifacts" / "tf2.21" / "new_op"
CHECKER = build_checker(Settings(fleet=str(ROOT / "config" / "fleet.yaml")))
LOCATION = ReportLocation(None, "tfcompat-reports/")


@pytest.fixture(scope="module")
def mlflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    server = MlflowServer(tmp_path_factory.mktemp("mlflow-sources"), {})
    server.start()
    try:
        yield server
    finally:
        server.stop()


def local_version(server: MlflowServer, area: Path) -> tuple[str, str, Path]:
    """A version whose source is a local directory under `area`, registered the way any
    MLflow user can: an experiment whose artifact location is that directory, a run in
    it, the model's files in the run's artifacts. (name, version, model directory)."""
    from mlflow import MlflowClient

    client = MlflowClient(server.url)
    name = f"local-{uuid.uuid4().hex[:8]}"
    experiment = client.create_experiment(name, artifact_location=area.as_uri())
    run = client.create_run(experiment)
    model = Path(run.info.artifact_uri.removeprefix("file://")) / "model"
    shutil.copytree(NEW_OP, model / "tf2model")
    (model / "MLmodel").write_text(tensorflow_mlmodel())
    client.create_registered_model(name)
    version = client.create_model_version(name, model.as_uri(), run_id=run.info.run_id)
    return name, str(version.version), model


def s3_version(server: MlflowServer, source: str) -> tuple[str, str]:
    from mlflow import MlflowClient

    client = MlflowClient(server.url)
    name = f"s3-{uuid.uuid4().hex[:8]}"
    client.create_registered_model(name)
    return name, str(client.create_model_version(name, source).version)


def test_a_local_version_is_never_read_without_local_roots(
    mlflow: MlflowServer, tmp_path: Path
) -> None:
    name, version, _ = local_version(mlflow, tmp_path / "private")
    registry = MlflowRegistry(mlflow.url)
    job = RegistryJob("mlflow", name, version, "d-1")
    outcome = check_model_version(
        job, registry, MemoryObjectStore(), CHECKER, LOCATION, ReadPolicy(tracking_server=True)
    )
    assert outcome.action == "refused" and "TFCOMPAT_LOCAL_ROOTS" in (outcome.error or "")
    assert registry.model_version(name, version).tags == {}


def test_a_local_version_under_an_allowed_root_is_checked(
    mlflow: MlflowServer, tmp_path: Path
) -> None:
    name, version, _ = local_version(mlflow, tmp_path / "shared")
    policy = ReadPolicy(local_roots=(str(tmp_path / "shared"),), tracking_server=True)
    registry = MlflowRegistry(mlflow.url)
    job = RegistryJob("mlflow", name, version, "d-1")
    outcome = check_model_version(job, registry, MemoryObjectStore(), CHECKER, LOCATION, policy)
    assert outcome.action == "checked"
    assert registry.model_version(name, version).tags["tfcompat.status"] == outcome.status


def test_a_local_version_through_a_symlink_out_of_the_root_is_refused(
    mlflow: MlflowServer, tmp_path: Path
) -> None:
    name, version, _ = local_version(mlflow, tmp_path / "private")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "link").symlink_to(tmp_path / "private")
    policy = ReadPolicy(local_roots=(str(tmp_path / "shared"),), tracking_server=True)
    # The same files named through the allowed root are still where they really are.
    registry = MlflowRegistry(mlflow.url)
    real_uri = registry.download_uri(name, version)
    registry.download_uri = lambda n, v: real_uri.replace(  # type: ignore[method-assign]
        str(tmp_path / "private"), str(tmp_path / "shared" / "link")
    )
    job = RegistryJob("mlflow", name, version, "d-1")
    outcome = check_model_version(job, registry, MemoryObjectStore(), CHECKER, LOCATION, policy)
    assert outcome.action == "refused"
    assert registry.model_version(name, version).tags == {}


def test_a_recheck_never_reads_a_version_outside_the_bucket_list(mlflow: MlflowServer) -> None:
    store = MemoryObjectStore()
    for path in sorted(NEW_OP.rglob("*")):
        if path.is_file():
            store.put("secrets", f"model/tf2model/{path.relative_to(NEW_OP)}", path.read_bytes())
    store.put("secrets", "model/MLmodel", tensorflow_mlmodel().encode())
    name, version = s3_version(mlflow, "s3://secrets/model")
    registry = MlflowRegistry(mlflow.url)
    policy = ReadPolicy(("models",), tracking_server=True)
    # what a fleet change's per-version task runs (worker.pipeline.fleet_tasks.check_version)
    job = RegistryJob("mlflow", name, version, "fleet:test")
    outcome = check_model_version(job, registry, store, CHECKER, LOCATION, policy)
    assert outcome.action == "refused"
    assert registry.model_version(name, version).tags == {}
    # No report went into the bucket the model named (the report bucket is unset).
    assert not [key for bucket, key in store.objects if bucket == "secrets" and "report" in key]
