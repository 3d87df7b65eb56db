"""One registered version's check as a plain function over ports: an in-memory registry
whose download URI is a local MLflow model directory (real TensorFlow files), the
in-memory object store for reports, and the Slack port recorded."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.pipeline.mlflow_server import model_directory, pyfunc_mlmodel, tensorflow_mlmodel
from worker.errors import TransientError
from worker.formats.access import ReadPolicy
from worker.model.registry import RegistryJob
from worker.notify.dispatch import MemoryNotifier
from worker.once import MemoryClaims
from worker.pipeline.process import ReportLocation
from worker.pipeline.registered import check_model_version, notify_version_owner
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.mlflow import ModelVersion

ROOT = Path(__file__).resolve().parents[2]
TF221 = ROOT / "tests" / "fixtures" / "tf-real" / "artifacts" / "tf2.21"
SETTINGS = Settings(fleet=str(ROOT / "config" / "fleet.yaml"))
LOCATION = ReportLocation("reports", "tfcompat-reports/")
# model_directory() makes its models under the temporary directory: the one local root.
POLICY = ReadPolicy(local_roots=(tempfile.gettempdir(),))


@dataclass
class MemoryRegistry:
    """One model version whose files are a local directory."""

    directory: Path
    status: str = "READY"
    tags: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str | None]] = field(default_factory=list)
    base_url: str = "http://mlflow.test"

    def model_version(self, name: str, version: str) -> ModelVersion:
        return ModelVersion(name, version, self.status, "models:/m-1", None, dict(self.tags))

    def download_uri(self, name: str, version: str) -> str:
        return str(self.directory)

    def set_tag(self, name: str, version: str, key: str, value: str) -> None:
        self.tags[key] = value
        self.writes.append((key, value))

    def delete_tag(self, name: str, version: str, key: str) -> None:
        del self.tags[key]
        self.writes.append((key, None))

    def list_artifacts(self, path: str) -> list[tuple[str, bool, int]]:
        raise AssertionError("a local directory is read without the proxy")

    def read_artifact(self, path: str, offset: int, length: int) -> tuple[bytes, bool]:
        raise AssertionError("a local directory is read without the proxy")


JOB = RegistryJob("mlflow", "ranking-dnn", "7", "d-1")


def new_op_registry(**kw: object) -> MemoryRegistry:
    directory = model_directory({"tf2model": TF221 / "new_op"}, tensorflow_mlmodel())
    return MemoryRegistry(directory, **kw)  # type: ignore[arg-type]


def test_a_checked_version_gets_our_tags_and_its_report() -> None:
    registry, store = new_op_registry(tags={"owner": "ranking"}), MemoryObjectStore()
    outcome = check_model_version(JOB, registry, store, build_checker(SETTINGS), LOCATION, POLICY)
    assert outcome.action == "checked" and outcome.status == "incompatible"
    assert registry.tags["owner"] == "ranking"
    assert registry.tags["tfcompat.consumer.serving-prod"] == "incompatible"
    assert registry.tags["tfcompat.report"] == (
        "s3://reports/tfcompat-reports/mlflow/ranking-dnn/7.json"
    )
    assert registry.writes[-1][0] == "tfcompat.status"
    report = store.get_json("reports", "tfcompat-reports/mlflow/ranking-dnn/7.json")
    assert report is not None and report["tags"] == outcome.tags


def test_a_second_check_writes_nothing() -> None:
    registry, store = new_op_registry(), MemoryObjectStore()
    checker = build_checker(SETTINGS)
    check_model_version(JOB, registry, store, checker, LOCATION, POLICY)
    written = len(registry.writes)
    check_model_version(JOB, registry, store, checker, LOCATION, POLICY)
    assert len(registry.writes) == written


def test_a_version_still_registering_is_retried() -> None:
    with pytest.raises(TransientError):
        check_model_version(
            JOB,
            new_op_registry(status="PENDING_REGISTRATION"),
            MemoryObjectStore(),
            build_checker(SETTINGS),
            LOCATION,
            POLICY,
        )


def test_a_version_without_tensorflow_is_not_tagged() -> None:
    registry = MemoryRegistry(model_directory({"model.pkl": ROOT / "README.md"}, pyfunc_mlmodel()))
    outcome = check_model_version(
        JOB, registry, MemoryObjectStore(), build_checker(SETTINGS), LOCATION, POLICY
    )
    assert outcome.action == "not-tensorflow" and registry.tags == {}


def test_an_unreadable_model_is_tagged_invalid() -> None:
    directory = model_directory(
        {"tf2model/saved_model.pb": ROOT / "README.md"}, tensorflow_mlmodel()
    )
    registry = MemoryRegistry(directory)
    outcome = check_model_version(
        JOB, registry, MemoryObjectStore(), build_checker(SETTINGS), LOCATION, POLICY
    )
    assert outcome.status == "invalid" and registry.tags["tfcompat.status"] == "invalid"


OWNERS = """
owners:
  - name: ranking
    slack: [{webhook: TFCOMPAT_SLACK_WEBHOOK_RANKING}]
  - name: fraud
    slack: [{webhook: TFCOMPAT_SLACK_WEBHOOK_FRAUD}]
  - name: platform
routes:
  - locations: ["mlflow://ranking-*/*"]
    owner: ranking
  - tags: {team: fraud}
    owner: fraud
default:
  owner: platform
  notify: [incompatible]
"""


@pytest.mark.parametrize(
    ("job", "tags", "owner"),
    [
        (JOB, {}, "TFCOMPAT_SLACK_WEBHOOK_RANKING"),  # by registered-model name
        (
            RegistryJob("mlflow", "scorer", "2", "d"),
            {"team": "fraud"},
            "TFCOMPAT_SLACK_WEBHOOK_FRAUD",
        ),
    ],
)
def test_owners_are_told_once_routed_by_name_or_version_tags(
    tmp_path: Path, job: RegistryJob, tags: dict[str, str], owner: str
) -> None:
    owners = tmp_path / "owners.yaml"
    owners.write_text(OWNERS)
    settings = Settings(fleet=SETTINGS.fleet, owners=str(owners))
    registry = new_op_registry(tags=tags)
    outcome = check_model_version(
        job, registry, MemoryObjectStore(), build_checker(settings), LOCATION, POLICY
    )
    notifier, claims = MemoryNotifier(), MemoryClaims()
    notify_version_owner(settings, outcome, notifier, claims)
    notify_version_owner(settings, outcome, notifier, claims)
    assert [d.webhook for d, _ in notifier.sent] == [owner]
    assert f"mlflow://{job.name}/{job.version}" in notifier.sent[0][1].text


def test_a_version_on_s3_outside_the_bucket_allowlist_is_never_read() -> None:
    registry = new_op_registry()
    registry.download_uri = lambda name, version: "s3://secrets/model"  # type: ignore[method-assign]
    outcome = check_model_version(
        JOB,
        registry,
        MemoryObjectStore(),
        build_checker(SETTINGS),
        LOCATION,
        ReadPolicy(("models",), POLICY.local_roots),
    )
    assert outcome.action == "refused" and registry.tags == {}
