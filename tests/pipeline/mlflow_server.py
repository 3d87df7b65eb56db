"""A real MLflow tracking server for the registry tests, and model versions logged to it.

`mlflow server` (the `mlflow` package of the dev extras) runs on a free loopback
port with a SQLite backend (webhooks need a SQL store) and a local artifact
destination served through its artifact proxy (`mlflow-artifacts:`). MLflow
refuses webhook URLs that are not https or that resolve to private addresses;
the two environment variables below are MLflow's own switches for local use.

Models are logged without TensorFlow: a fixture directory made by real
TensorFlow is copied under the layout an MLflow flavor gives it, with the
`MLmodel` that flavor writes, and logged with `log_artifacts`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from cryptography.fernet import Fernet

from tests.pipeline.services import free_port, wait_until

SERVER_ENV = {
    "MLFLOW_WEBHOOK_ALLOWED_SCHEMES": "http,https",
    "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true",
    "MLFLOW_WEBHOOK_CACHE_TTL": "1",  # a webhook created in a test is used at once
    "MLFLOW_DISABLE_TELEMETRY": "true",
}


class MlflowServer:
    """One `mlflow server` process that can be stopped and started again on its port,
    its database and artifacts kept."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # MLflow encrypts webhook secrets with this key, a new random one per process when
        # unset: after a restart its webhooks would fail to decrypt and never be sent.
        key = Fernet.generate_key().decode()
        self.env = {**env, **SERVER_ENV, "MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY": key}
        self._process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def args(self) -> list[str]:
        mlflow = str(Path(sys.executable).with_name("mlflow"))
        return [
            mlflow,
            "server",
            "--backend-store-uri",
            f"sqlite:///{self.root / 'mlflow.db'}",
            "--artifacts-destination",
            str(self.root / "artifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
        ]

    def start(self) -> None:
        self.starts += 1
        log = self.root / f"server-{self.starts}.log"
        with log.open("wb") as out:
            self._process = subprocess.Popen(
                self.args(),
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait_until(self.healthy, 180, f"mlflow server on {self.url} (see {log})", interval=0.5)
        except BaseException:
            self.stop()
            raise

    def healthy(self) -> bool:
        return httpx.get(f"{self.url}/health", timeout=5).status_code == 200

    def stop(self) -> None:
        """End the server and what it started (its uvicorn and job runner processes):
        its whole process group, so nothing keeps serving on the port."""
        proc, self._process = self._process, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        wait_until(lambda: not group_alive(proc.pid), 30, "the mlflow server's processes to end")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@contextlib.contextmanager
def mlflow_server(root: Path, env: dict[str, str]) -> Iterator[MlflowServer]:
    server = MlflowServer(root, env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def tensorflow_mlmodel(saved_model_dir: str = "tf2model") -> str:
    """The MLmodel `mlflow.tensorflow.save_model` writes for a `tf.Module`."""
    return (
        "artifact_path: model\n"
        "flavors:\n"
        "  python_function:\n"
        "    env:\n"
        "      virtualenv: python_env.yaml\n"
        "    loader_module: mlflow.tensorflow\n"
        "    python_version: 3.11.7\n"
        "  tensorflow:\n"
        "    code: null\n"
        f"    saved_model_dir: {saved_model_dir}\n"
        "    model_type: tf2-module\n"
        "mlflow_version: 3.17.2\n"
    )


def keras_mlmodel() -> str:
    """The MLmodel `mlflow.keras.save_model` (Keras 3) writes."""
    return (
        "artifact_path: model\n"
        "flavors:\n"
        "  keras:\n"
        "    data: data\n"
        "    keras_backend: tensorflow\n"
        "    keras_version: 3.10.0\n"
        "    save_exported_model: false\n"
        "  python_function:\n"
        "    data: data\n"
        "    loader_module: mlflow.keras\n"
        "mlflow_version: 3.17.2\n"
    )


def pyfunc_mlmodel() -> str:
    """A custom pyfunc model: no TensorFlow flavor at all."""
    return (
        "artifact_path: model\n"
        "flavors:\n"
        "  python_function:\n"
        "    loader_module: mlflow.pyfunc.model\n"
        "mlflow_version: 3.17.2\n"
    )


def model_directory(files: dict[str, Path], mlmodel: str) -> Path:
    """A temporary MLflow model directory: `files` maps a path in it to a file or
    directory to copy there."""
    root = Path(tempfile.mkdtemp(prefix="mlflow-model-"))
    for name, source in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)
    (root / "MLmodel").write_text(mlmodel)
    return root


def register(
    tracking_uri: str, name: str, directory: Path, tags: dict[str, str] | None = None
) -> Any:
    """Log `directory` as a run's `model` artifacts and register it as a new version of
    `name` (created when missing); the version, as MLflow returns it."""
    import mlflow
    from mlflow import MlflowClient

    mlflow.set_tracking_uri(tracking_uri)
    client = MlflowClient(tracking_uri)
    with mlflow.start_run() as run:
        mlflow.log_artifacts(str(directory), artifact_path="model")
    if not client.search_registered_models(filter_string=f"name = '{name}'"):
        client.create_registered_model(name)
    return client.create_model_version(
        name, f"{run.info.artifact_uri}/model", run_id=run.info.run_id, tags=tags
    )


def version_tags(tracking_uri: str, name: str, version: str) -> dict[str, str]:
    from mlflow import MlflowClient

    return dict(MlflowClient(tracking_uri).get_model_version(name, version).tags)
