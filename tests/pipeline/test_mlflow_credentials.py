"""A tracking server that asks for a user and password (`mlflow server --app-name
basic-auth`), and the worker given them the ways MLflow's own client takes them: a
`user:password@` in the tracking URI, or `MLFLOW_TRACKING_USERNAME` /
`MLFLOW_TRACKING_PASSWORD`. The check works, and the password appears nowhere a
person or another system reads: the worker's log, the stored report, the
version's tags, `tfcompat settings`.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.pipeline.mlflow_server import (
    MlflowServer,
    model_directory,
    register,
    tensorflow_mlmodel,
)
from tests.pipeline.services import ROOT, cli, process, wait_until, worker_env
from tests.pipeline.services import s3 as s3_client
from tests.redis_server import REDIS_PORT
from worker.formats.access import ReadPolicy
from worker.model.registry import RegistryJob
from worker.pipeline.app import registry_enqueuer
from worker.pipeline.process import ReportLocation
from worker.pipeline.registered import check_model_version
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.mlflow import mlflow_registry

pytestmark = [pytest.mark.services, pytest.mark.slow]

REDIS_DB = 1
USER = "admin"
PASSWORD = f"pw-{uuid.uuid4().hex}"  # distinct enough to grep for
NEW_OP = ROOT / "tests" / "fixtures" / "tf-real" / "artifacts" / "tf2.21" / "new_op"


class BasicAuthServer(MlflowServer):
    """`mlflow server --app-name basic-auth`: every API request needs the user and
    password (its /health does not)."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        config = root / "basic_auth.ini"
        config.write_text(
            "[mlflow]\n"
            "default_permission = READ\n"
            f"database_uri = sqlite:///{root / 'auth.db'}\n"
            f"admin_username = {USER}\n"
            "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
            "grant_default_workspace_access = false\n"
        )
        super().__init__(
            root,
            {
                **env,
                "MLFLOW_AUTH_CONFIG_PATH": str(config),
                "MLFLOW_AUTH_ADMIN_PASSWORD": PASSWORD,
                "MLFLOW_FLASK_SERVER_SECRET_KEY": uuid.uuid4().hex,
            },
        )

    def args(self) -> list[str]:
        return [*super().args(), "--app-name", "basic-auth"]

    @property
    def secret_url(self) -> str:
        return f"http://{USER}:{PASSWORD}@127.0.0.1:{self.port}"


@dataclass
class AuthStack:
    mlflow: BasicAuthServer
    env: dict[str, str]
    s3: Any
    bucket: str
    log: Path


@pytest.fixture(scope="module")
def auth_stack(
    endpoint: str, logs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AuthStack]:
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
    client.flushdb()
    s3 = s3_client(endpoint)
    bucket = f"mlflow-auth-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    server = BasicAuthServer(tmp_path_factory.mktemp("mlflow-auth"), {})
    server.start()
    env = worker_env(
        endpoint,
        REDIS_DB,
        TFCOMPAT_MLFLOW_TRACKING_URI=server.secret_url,
        TFCOMPAT_REPORT_BUCKET=bucket,
        TFCOMPAT_LOG_LEVEL="DEBUG",
    )
    log = logs / "mlflow-auth-worker.log"
    try:
        with process(cli("worker", "--concurrency", "1"), env, log):
            yield AuthStack(server, env, s3, bucket, log)
    finally:
        server.stop()


@pytest.fixture
def mlflow_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """MLflow's own client, for registering and reading tags, signs in from its variables."""
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", USER)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", PASSWORD)


def tags_of(server: BasicAuthServer, name: str, version: str) -> dict[str, str]:
    from mlflow import MlflowClient

    return dict(MlflowClient(server.url).get_model_version(name, version).tags)


def test_a_password_in_the_tracking_uri_checks_and_never_shows(
    auth_stack: AuthStack, mlflow_credentials: None
) -> None:
    server = auth_stack.mlflow
    name = f"auth-{uuid.uuid4().hex[:8]}"
    directory = model_directory({"tf2model": NEW_OP}, tensorflow_mlmodel())
    version = str(register(server.url, name, directory).version)
    settings = Settings(broker_url=auth_stack.env["TFCOMPAT_BROKER_URL"])
    registry_enqueuer(settings)(RegistryJob("mlflow", name, version, "d-auth"))
    tags = wait_until(
        lambda: (t := tags_of(server, name, version)).get("tfcompat.status") and t,
        180,
        f"tfcompat tags on {name} v{version}",
        interval=0.5,
    )
    assert tags["tfcompat.report"].startswith(f"s3://{auth_stack.bucket}/")
    key = tags["tfcompat.report"].removeprefix(f"s3://{auth_stack.bucket}/")
    report = auth_stack.s3.get_object(Bucket=auth_stack.bucket, Key=key)["Body"].read().decode()
    assert json.loads(report)["model_version"]["server"] == server.url
    shown = subprocess.run(
        cli("settings"), env=auth_stack.env, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0 and f"{USER}:********@" in shown.stdout
    worker_log = auth_stack.log.read_text()
    assert name in worker_log  # the check was logged, so the grep below means something
    for where, text in [
        ("worker log", worker_log),
        ("report", report),
        ("tags", json.dumps(tags)),
        ("tfcompat settings", shown.stdout + shown.stderr),
    ]:
        assert PASSWORD not in text, f"the password shows in the {where}"


def test_mlflow_tracking_username_and_password_are_taken_from_mlflows_variables(
    auth_stack: AuthStack, mlflow_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = auth_stack.mlflow
    name = f"auth-env-{uuid.uuid4().hex[:8]}"
    directory = model_directory({"tf2model": NEW_OP}, tensorflow_mlmodel())
    version = str(register(server.url, name, directory).version)
    monkeypatch.setenv("TFCOMPAT_MLFLOW_TRACKING_URI", server.url)
    for variable in [v for v in os.environ if v.startswith("TFCOMPAT_SETTINGS_FILE")]:
        monkeypatch.delenv(variable)
    settings = Settings()  # MLFLOW_TRACKING_USERNAME / _PASSWORD, set above
    outcome = check_model_version(
        RegistryJob("mlflow", name, version, "d-env"),
        mlflow_registry(settings),
        MemoryObjectStore(),
        build_checker(Settings(fleet=str(ROOT / "config" / "fleet.yaml"))),
        ReportLocation("reports", "tfcompat-reports/"),
        ReadPolicy(tracking_server=True),
    )
    assert outcome.action == "checked"
    assert tags_of(server, name, version)["tfcompat.status"] == outcome.status
