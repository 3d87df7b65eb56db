"""MLflow Model Registry end to end: a real `mlflow server`, its own webhook deliveries
to the receiver process, a Celery worker process, moto for the reports.

A model version registered in MLflow must come back with our tags, carrying the
verdict `tfcompat check` gives for the same files; deliveries MLflow did not sign
(forged), signed long ago (stale) or already received (replayed) start nothing;
and a check in flight while MLflow restarts still ends with the tags.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.pipeline.mlflow_server import (
    MlflowServer,
    keras_mlmodel,
    model_directory,
    pyfunc_mlmodel,
    register,
    tensorflow_mlmodel,
    version_tags,
)
from tests.pipeline.services import ROOT, cli, free_port, process, wait_until, worker_env
from tests.pipeline.services import s3 as s3_client
from tests.redis_server import REDIS_PORT
from worker.compat.ranges import tag_value
from worker.model.verdict import consumer_status_json
from worker.registries.tags import FAILING, consumer_key

pytestmark = pytest.mark.services

REDIS_DB = 7  # 9-15 and 0 are other tests' (tests/pipeline/test_resilience.py uses 12 and 13)
SECRET = "mlflow-webhook-secret"
FIXTURES = ROOT / "tests" / "fixtures"
TF221 = FIXTURES / "tf-real" / "artifacts" / "tf2.21"
FLEET = ROOT / "config" / "fleet.yaml"


@dataclass
class RegistryStack:
    mlflow: MlflowServer
    receiver: str
    report_bucket: str
    s3: Any
    logs: Path
    webhook_id: str
    env: dict[str, str]

    def wait_for_tags(self, name: str, version: str, timeout: float = 180) -> dict[str, str]:
        return wait_until(  # type: ignore[no-any-return]
            lambda: (
                (t := version_tags(self.mlflow.url, name, version)).get("tfcompat.status") and t
            ),
            timeout,
            f"tfcompat tags on MLflow {name} v{version}",
            interval=0.5,
        )

    def said(self, process_name: str, event: str, **fields: str) -> bool:
        """Whether the process's JSON log has `event` with these fields."""
        for line in (self.logs / f"mlflow-{process_name}.log").read_text().splitlines():
            if not line.startswith("{"):
                continue
            entry = json.loads(line)
            if entry.get("event") == event and all(entry.get(k) == v for k, v in fields.items()):
                return True
        return False


@pytest.fixture(scope="module")
def registry_stack(
    endpoint: str, logs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistryStack]:
    """mlflow server + Redis + one worker + the receiver, MLflow's webhook pointing at it."""
    from mlflow import MlflowClient
    from mlflow.entities.webhook import WebhookEvent

    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
    try:
        client.ping()
    except redis.ConnectionError:
        pytest.fail(f"Redis is not answering on 127.0.0.1:{REDIS_PORT} (make test starts it)")
    client.flushdb()
    s3 = s3_client(endpoint)
    bucket = f"mlflow-reports-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    server = MlflowServer(tmp_path_factory.mktemp("mlflow"), worker_env(endpoint, REDIS_DB))
    server.start()
    env = worker_env(
        endpoint,
        REDIS_DB,
        TFCOMPAT_MLFLOW_TRACKING_URI=server.url,
        TFCOMPAT_MLFLOW_WEBHOOK_SECRET=SECRET,
        TFCOMPAT_RECEIVER_ROUTES=json.dumps(["mlflow"]),
        TFCOMPAT_REPORT_BUCKET=bucket,
        TFCOMPAT_FLEET=str(FLEET),
    )
    port = free_port()
    try:
        with (
            process(cli("worker", "--concurrency", "1"), env, logs / "mlflow-worker.log"),
            process(cli("serve", "--port", str(port)), env, logs / "mlflow-receiver.log"),
        ):
            receiver = f"http://127.0.0.1:{port}"
            wait_until(
                lambda: httpx.get(f"{receiver}/healthz", timeout=5).status_code == 200,
                60,
                "the receiver's /healthz",
            )
            webhook = MlflowClient(server.url).create_webhook(
                name="tfcompat",
                url=f"{receiver}/webhooks/mlflow",
                events=[WebhookEvent("model_version", "created")],
                secret=SECRET,
            )
            yield RegistryStack(server, receiver, bucket, s3, logs, webhook.webhook_id, env)
    finally:
        server.stop()


def check_cli(path: Path, fleet: Path = FLEET) -> dict[str, Any]:
    """`tfcompat check --json` on the local files, as a user runs it."""
    result = subprocess.run(
        [*cli("check", str(path), "--fleet", str(fleet), "--json")],
        capture_output=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode in (0, 1, 3), result.stderr.decode()
    document: dict[str, Any] = json.loads(result.stdout)
    assert len(document["artifacts"]) == 1
    return document["artifacts"][0]  # type: ignore[no-any-return]


def fleet_digest(fleet: Path) -> str:
    """The digest a worker checking against `fleet` writes in `tfcompat.fleet`."""
    from worker.catalog.catalog import load_catalog
    from worker.fleet.checker import Checker
    from worker.fleet.fleet import load_fleet

    catalog = load_catalog()
    loaded = load_fleet(fleet, catalog)
    return Checker(loaded.consumers, loaded.policy, catalog, loaded.source).fleet_digest


def expected_tags(artifact: dict[str, Any], fleet: Path = FLEET) -> dict[str, str]:
    tags = {
        "tfcompat.status": artifact["status"],
        "tfcompat.releases": tag_value(artifact["compatible_releases"]),
        "tfcompat.fleet": fleet_digest(fleet),
    }
    for consumer in artifact["consumers"]:
        status = consumer_status_json(consumer)
        if status in FAILING:
            tags[consumer_key(consumer["name"])] = status
    return tags


def ours(tags: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in tags.items() if k.startswith("tfcompat.") and k != "tfcompat.report"}


# Each layout an MLflow flavor gives a TensorFlow model, with the file `tfcompat check` reads.
LAYOUTS = {
    "tensorflow-savedmodel": (
        {"tf2model": TF221 / "savedmodel_v2"},
        tensorflow_mlmodel(),
        TF221 / "savedmodel_v2",
    ),
    "tensorflow-new-op": (
        {"tf2model": TF221 / "new_op"},
        tensorflow_mlmodel(),
        TF221 / "new_op",
    ),
    "keras-file": (
        {"data/model.keras": FIXTURES / "keras" / "models" / "tf2.21" / "functional.keras"},
        keras_mlmodel(),
        FIXTURES / "keras" / "models" / "tf2.21" / "functional.keras",
    ),
    "tflite-without-flavor": (
        {"artifacts/dense.tflite": FIXTURES / "tflite" / "models" / "tf2.21" / "dense.tflite"},
        pyfunc_mlmodel(),
        FIXTURES / "tflite" / "models" / "tf2.21" / "dense.tflite",
    ),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_registered_version_gets_the_verdict_of_tfcompat_check(
    registry_stack: RegistryStack, layout: str
) -> None:
    files, mlmodel, local = LAYOUTS[layout]
    name = f"model-{layout}"
    version = register(registry_stack.mlflow.url, name, model_directory(files, mlmodel)).version
    tags = registry_stack.wait_for_tags(name, version)
    assert ours(tags) == expected_tags(check_cli(local))
    report_url = tags["tfcompat.report"]
    assert (
        report_url
        == f"s3://{registry_stack.report_bucket}/tfcompat-reports/mlflow/{name}/{version}.json"
    )
    key = report_url.split("/", 3)[3]
    report = json.loads(
        registry_stack.s3.get_object(Bucket=registry_stack.report_bucket, Key=key)["Body"].read()
    )
    assert report["model_version"]["name"] == name and report["status"] == tags["tfcompat.status"]


def test_tags_we_did_not_write_are_kept(registry_stack: RegistryStack) -> None:
    theirs = {"owner": "ml-platform", "tfcompat.approved-by": "alice"}
    directory = model_directory({"tf2model": TF221 / "savedmodel_v2"}, tensorflow_mlmodel())
    version = register(registry_stack.mlflow.url, "kept-tags", directory, tags=theirs).version
    tags = registry_stack.wait_for_tags("kept-tags", version)
    assert {k: tags[k] for k in theirs} == theirs


def test_a_version_without_tensorflow_is_left_untagged(registry_stack: RegistryStack) -> None:
    directory = model_directory({"model.pkl": FLEET}, pyfunc_mlmodel())
    version = register(registry_stack.mlflow.url, "sklearn-model", directory).version
    wait_until(
        lambda: registry_stack.said("worker", "task.done", action="not-tensorflow"),
        120,
        "the worker's check of a model without TensorFlow",
    )
    assert version_tags(registry_stack.mlflow.url, "sklearn-model", version) == {}


def test_mlflow_test_delivery_is_verified_and_accepted(registry_stack: RegistryStack) -> None:
    from mlflow import MlflowClient

    result = MlflowClient(registry_stack.mlflow.url).test_webhook(registry_stack.webhook_id)
    assert result.success and result.response_status == 202, result


def signed_delivery(
    secret: str, body: bytes, delivery: str | None = None, timestamp: int | None = None
) -> dict[str, str]:
    """Headers as MLflow's own delivery code makes them (its signing function)."""
    from mlflow.webhooks.delivery import _generate_hmac_signature

    delivery = delivery or str(uuid.uuid4())
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "Content-Type": "application/json",
        "X-MLflow-Delivery-Id": delivery,
        "X-MLflow-Timestamp": stamp,
        "X-MLflow-Signature": _generate_hmac_signature(secret, delivery, stamp, body.decode()),
    }


def created_body(name: str = "no-such-model", version: str = "1") -> bytes:
    payload = {
        "entity": "model_version",
        "action": "created",
        "timestamp": "2026-12-03T12:00:00+00:00",
        "data": {
            "name": name,
            "version": version,
            "source": "models:/m-0",
            "run_id": None,
            "tags": {},
            "description": None,
        },
    }
    return json.dumps(payload).encode()


def post(stack: RegistryStack, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{stack.receiver}/webhooks/mlflow", content=body, headers=headers)


def test_forged_deliveries_are_refused(registry_stack: RegistryStack) -> None:
    body = created_body()
    wrong_secret = signed_delivery("not-the-secret", body)
    tampered = signed_delivery(SECRET, body)
    unsigned = {k: v for k, v in signed_delivery(SECRET, body).items() if "Signature" not in k}
    assert post(registry_stack, body, wrong_secret).status_code == 401
    assert post(registry_stack, created_body("other"), tampered).status_code == 401
    assert post(registry_stack, body, unsigned).status_code == 401


def test_replayed_and_stale_deliveries_are_refused(registry_stack: RegistryStack) -> None:
    body = created_body()
    headers = signed_delivery(SECRET, body)
    assert post(registry_stack, body, headers).status_code == 202
    assert post(registry_stack, body, headers).status_code == 409
    stale = signed_delivery(SECRET, body, timestamp=int(time.time()) - 3600)
    assert post(registry_stack, body, stale).status_code == 401


@pytest.mark.timeout(900)  # a loaded 2-core machine restarts MLflow in one to three minutes
def test_a_check_in_flight_survives_an_mlflow_restart(registry_stack: RegistryStack) -> None:
    """The check is enqueued while MLflow is down (a delivery signed as MLflow signs it,
    for a version whose tags were removed), retried until MLflow is back, and then tags."""
    from mlflow import MlflowClient

    directory = model_directory({"tf2model": TF221 / "new_op"}, tensorflow_mlmodel())
    version = register(registry_stack.mlflow.url, "restarted", directory).version
    registry_stack.wait_for_tags("restarted", version)
    client = MlflowClient(registry_stack.mlflow.url)
    for key in version_tags(registry_stack.mlflow.url, "restarted", version):
        client.delete_model_version_tag("restarted", version, key)
    registry_stack.mlflow.stop()
    body = created_body("restarted", version)
    headers = signed_delivery(SECRET, body)
    assert post(registry_stack, body, headers).status_code == 202
    delivery = headers["X-MLflow-Delivery-Id"]
    wait_until(
        lambda: registry_stack.said("worker", "task.retry", delivery=delivery),
        120,
        "the worker retrying the check while MLflow is down",
    )
    registry_stack.mlflow.start()
    tags = registry_stack.wait_for_tags("restarted", version, timeout=600)
    assert ours(tags) == expected_tags(check_cli(TF221 / "new_op"))


def test_a_fleet_change_rechecks_registered_versions(
    registry_stack: RegistryStack, tmp_path: Path
) -> None:
    directory = model_directory({"tf2model": TF221 / "new_op"}, tensorflow_mlmodel())
    version = register(registry_stack.mlflow.url, "fleet-change", directory).version
    before = registry_stack.wait_for_tags("fleet-change", version)
    assert before["tfcompat.consumer.serving-prod"] == "incompatible"
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text('consumers:\n  - name: serving-canary\n    serving: "2.21"\n')
    env = {**registry_stack.env, "TFCOMPAT_FLEET": str(fleet)}
    subprocess.run(cli("fleet", "apply", "--enqueue", "--fleet", str(fleet)), env=env, check=True)
    expected = expected_tags(check_cli(TF221 / "new_op", fleet), fleet)
    tags = wait_until(
        lambda: (
            ours(t := version_tags(registry_stack.mlflow.url, "fleet-change", version)) == expected
            and t
        ),
        180,
        "the version's tags after the fleet change",
    )
    assert "tfcompat.consumer.serving-prod" not in tags
