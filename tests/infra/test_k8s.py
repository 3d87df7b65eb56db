"""infra/k8s against the Kubernetes JSON schemas (strict: unknown fields fail) that the PyPI
package kubernetes-validate ships, generated from each release's OpenAPI; then the
references between the manifests, the commands, and the mounted fleet and owners files."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from worker.catalog.catalog import load_catalog
from worker.cli import build_parser
from worker.fleet.fleet import load_fleet
from worker.notify.owners import load_owners
from worker.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "infra" / "k8s"
MANIFESTS = sorted(p for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
# The oldest release we claim (autoscaling/v2 and policy/v1 are GA there) and the newest known.
VERSIONS = ["1.26", kubernetes_validate.latest_version()]


@functools.cache
def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def applied() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    return [d for name in kustomization["resources"] for d in documents(K8S / name)]


def named(kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [
        d
        for d in applied()
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]


def one(kind: str, name: str) -> dict[str, Any]:
    (found,) = named(kind, name)
    return found


# Settings the listeners' contract names (TFCOMPAT_UI_HOST, _PORT, _PROXY_SECRET) that the
# page listener's own change adds to worker/settings.py.
LISTENER_SETTINGS = {"TFCOMPAT_UI_HOST", "TFCOMPAT_UI_PORT", "TFCOMPAT_UI_PROXY_SECRET"}
WORKLOADS = ("Deployment", "StatefulSet")


def pod(deployment: str) -> dict[str, Any]:
    spec: dict[str, Any] = one("Deployment", deployment)["spec"]["template"]["spec"]
    return spec


def tfcompat_container(spec: dict[str, Any]) -> dict[str, Any]:
    """The container running our image (a pod may have a proxy beside it)."""
    (found,) = [c for c in spec["containers"] if c["image"].startswith("tfcompat-worker")]
    return found


def pods() -> list[tuple[str, dict[str, Any]]]:
    return [
        (d["metadata"]["name"], d["spec"]["template"]["spec"])
        for kind in WORKLOADS
        for d in named(kind)
    ]


def containers() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{name}/{c['name']}", c) for name, spec in pods() for c in spec["containers"]]


def settings_data() -> dict[str, str]:
    data: dict[str, str] = one("ConfigMap", "tfcompat-settings")["data"]
    return data


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_matches_the_kubernetes_schema(path: Path, version: str) -> None:
    for document in documents(path):
        kubernetes_validate.validate(document, version, strict=True)


def test_the_schema_check_can_fail() -> None:
    deployment = one("Deployment", "tfcompat-worker")
    broken = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)


def test_kustomization_applies_every_manifest_but_the_secret_example() -> None:
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {p.name for p in MANIFESTS} - {"secret.example.yaml"}


@pytest.mark.parametrize(
    ("deployment", "role"),
    [
        ("tfcompat-receiver", "serve"),
        ("tfcompat-worker", "worker"),
        ("tfcompat-bridge", "sqs-bridge"),
    ],
)
def test_each_deployment_runs_its_command_with_what_it_references(
    deployment: str, role: str
) -> None:
    spec = pod(deployment)
    container = tfcompat_container(spec)
    assert build_parser().parse_args(container["args"]).command == role
    assert named("ServiceAccount", spec["serviceAccountName"])
    for source in container["envFrom"]:
        assert named("ConfigMap", source["configMapRef"]["name"])
    volumes = {v["name"]: v for v in spec["volumes"]}
    examples = {d["metadata"]["name"] for d in documents(K8S / "secret.example.yaml")}
    for mount in container["volumeMounts"]:
        volume = volumes[mount["name"]]
        if "configMap" in volume:
            assert named("ConfigMap", volume["configMap"]["name"])
        if "secret" in volume:  # created by hand, as secret.example.yaml shows
            assert volume["secret"]["secretName"] in examples
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        action = container.get(probe, {})
        port = (action.get("httpGet") or action.get("tcpSocket") or {}).get("port")
        assert port is None or port in ports
        if "exec" in action:
            command = action["exec"]["command"]
            assert command[:3] == ["tfcompat", "healthcheck", role]
            build_parser().parse_args(command[1:])


def test_pods_run_as_the_image_user_without_privileges() -> None:
    for name, spec in pods():
        context = spec["securityContext"]
        assert context["runAsNonRoot"] is True, name
        assert context["runAsUser"] >= 10000, name  # no account of the host's has it
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"]["drop"] == ["ALL"]
        for container in [c for c in spec["containers"] if c["image"].startswith(("tfc", "redis"))]:
            assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}


@pytest.mark.parametrize("kind", ["resources", "probes"])
def test_every_container_has_cpu_and_memory_bounds_and_probes(kind: str) -> None:
    for name, container in containers():
        if kind == "resources":
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][bound]), (name, bound)
        else:
            assert {"readinessProbe", "livenessProbe"} <= set(container), name


def test_no_secret_reaches_a_container_as_an_environment_variable() -> None:
    for name, container in containers():
        assert all("secretRef" not in s for s in container.get("envFrom", [])), name
        for variable in container.get("env", []):
            assert "secretKeyRef" not in variable.get("valueFrom", {}), (name, variable)


def test_secrets_are_mounted_where_the_settings_read_them() -> None:
    directory = settings_data()["TFCOMPAT_SECRETS_DIR"]
    for name, spec in pods():
        if name == "tfcompat-redis":
            continue
        volumes = {v["name"]: v for v in spec["volumes"]}
        mounts = {m["mountPath"]: m for m in tfcompat_container(spec)["volumeMounts"]}
        assert mounts[directory]["readOnly"] is True, name
        volume = volumes[mounts[directory]["name"]]
        assert volume["secret"]["secretName"] == "tfcompat-secrets", name
        # Readable by the pod's group (fsGroup) alone, never by others.
        assert volume["secret"]["defaultMode"] & 0o007 == 0, name
        assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsGroup"]


def test_every_manifest_is_in_the_projects_namespace() -> None:
    namespace = yaml.safe_load((K8S / "kustomization.yaml").read_text())["namespace"]
    assert one("Namespace", namespace)
    for path in MANIFESTS:
        for document in documents(path):
            if document["kind"] != "Namespace":
                assert document["metadata"]["namespace"] == namespace, (path.name, document)


def test_receiver_service_and_autoscaler_reach_their_deployments() -> None:
    service = one("Service", "tfcompat-receiver")
    labels = one("Deployment", "tfcompat-receiver")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    container = tfcompat_container(pod("tfcompat-receiver"))
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    target = one("HorizontalPodAutoscaler", "tfcompat-worker")["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "tfcompat-worker")
    worker = tfcompat_container(pod("tfcompat-worker"))
    assert worker["resources"]["requests"]["cpu"]  # a CPU utilisation target needs requests


def test_settings_configmap_holds_only_known_settings() -> None:
    data = one("ConfigMap", "tfcompat-settings")["data"]
    known = {f"TFCOMPAT_{name.upper()}" for name in Settings.model_fields}
    assert {k for k in data if k.startswith("TFCOMPAT_")} <= known
    secrets = {k for k, v in Settings.model_fields.items() if "SecretStr" in str(v.annotation)}
    assert not {f"TFCOMPAT_{s.upper()}" for s in secrets} & set(data)


def test_secret_example_names_only_secrets() -> None:
    (secret,) = [
        d
        for d in documents(K8S / "secret.example.yaml")
        if d["metadata"]["name"] == "tfcompat-secrets"
    ]
    known = {f"TFCOMPAT_{name.upper()}" for name in Settings.model_fields} | LISTENER_SETTINGS
    assert set(secret["stringData"]) <= known


def test_mounted_fleet_and_owners_load(tmp_path: Path) -> None:
    data = one("ConfigMap", "tfcompat-config")["data"]
    (tmp_path / "fleet.yaml").write_text(data["fleet.yaml"])
    (tmp_path / "owners.yaml").write_text(data["owners.yaml"])
    assert load_fleet(tmp_path / "fleet.yaml", load_catalog()).consumers
    assert load_owners(tmp_path / "owners.yaml").owners
    settings = one("ConfigMap", "tfcompat-settings")["data"]
    mount = {m["mountPath"] for m in pod("tfcompat-worker")["containers"][0]["volumeMounts"]}
    assert {str(Path(settings["TFCOMPAT_FLEET"]).parent)} <= mount


def test_the_broker_keeps_what_it_acknowledged() -> None:
    """The Redis the settings name is the StatefulSet with AOF fsynced on every write, on
    a persistent volume."""
    broker = one("ConfigMap", "tfcompat-settings")["data"]["TFCOMPAT_BROKER_URL"]
    host = broker.split("://", 1)[1].split(":", 1)[0]
    service = one("Service", host)
    redis = one("StatefulSet", host)
    assert service["spec"]["selector"] == redis["spec"]["selector"]["matchLabels"]
    (container,) = redis["spec"]["template"]["spec"]["containers"]
    args = " ".join(container["args"])
    assert "--appendonly yes" in args and "--appendfsync always" in args and "--dir /data" in args
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts[claim["metadata"]["name"]] == "/data"


def test_every_skipped_scan_check_says_why() -> None:
    """make lint-infra fails on any failed checkov check; a skip must carry its reason."""
    for path in MANIFESTS:
        for document in documents(path):
            annotations = document["metadata"].get("annotations", {})
            for key, value in annotations.items():
                if key.startswith("checkov.io/skip"):
                    check, _, reason = value.partition("=")
                    assert check.startswith("CKV") and len(reason.split()) >= 5, (path, value)
