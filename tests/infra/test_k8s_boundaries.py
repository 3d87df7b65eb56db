"""infra/k8s's trust boundaries (docs/security.md): the fleet page is reached only through
its proxy, which passes the proxy secret the receiver reads; the NetworkPolicies deny by
default and open only the event listener, the page proxy, metrics to monitoring and Redis
to our own pods."""

from __future__ import annotations

from typing import Any

import yaml

from tests.infra.test_k8s import named, one, pod, settings_data, tfcompat_container

EVENTS, PAGE, PROXY, METRICS, REDIS = 8080, 8081, 4180, 9808, 6379


def env(container: dict[str, Any]) -> dict[str, str]:
    return {v["name"]: v["value"] for v in container.get("env", []) if "value" in v}


def proxy_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(
        one("ConfigMap", "tfcompat-page-proxy")["data"]["oauth2-proxy.yaml"]
    )
    return config


def injected(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h["name"]: h["values"][0] for h in config["injectRequestHeaders"]}


def policies() -> list[dict[str, Any]]:
    return named("NetworkPolicy")


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not selector:
        return True
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In"
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def pod_labels() -> dict[str, dict[str, str]]:
    return {
        d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"]
        for kind in ("Deployment", "StatefulSet")
        for d in named(kind)
    }


def ingress_ports(labels: dict[str, str]) -> dict[int, list[Any]]:
    """{port: [from clauses]} every policy selecting these labels opens."""
    opened: dict[int, list[Any]] = {}
    for policy in policies():
        if not selects(policy["spec"]["podSelector"], labels):
            continue
        for rule in policy["spec"].get("ingress", []):
            for port in rule.get("ports", []):
                opened.setdefault(port["port"], []).append(rule.get("from"))
    return opened


def test_the_page_listener_is_bound_to_loopback_behind_the_proxy() -> None:
    spec = pod("tfcompat-receiver")
    receiver = tfcompat_container(spec)
    settings = env(receiver)
    assert settings["TFCOMPAT_UI_ENABLED"] == "true"
    assert (settings["TFCOMPAT_UI_HOST"], int(settings["TFCOMPAT_UI_PORT"])) == ("127.0.0.1", PAGE)
    ((upstream,),) = [proxy_config()["upstreamConfig"]["upstreams"]]
    assert upstream["uri"] == f"http://127.0.0.1:{PAGE}"
    declared = {p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])}
    assert PAGE not in declared
    for service in named("Service"):
        targets = {p["targetPort"] for p in service["spec"]["ports"]}
        assert PAGE not in targets and "page-listener" not in targets


def test_the_proxy_passes_the_user_and_the_secret_the_receiver_reads() -> None:
    spec = pod("tfcompat-receiver")
    receiver = tfcompat_container(spec)
    (proxy,) = [c for c in spec["containers"] if c is not receiver]
    headers = injected(proxy_config())
    trusted = env(receiver)["TFCOMPAT_UI_TRUSTED_HEADER"]
    assert set(headers) == {trusted, "X-Tfcompat-Proxy-Secret"}
    assert "claim" in headers[trusted]
    # The same file of the same Secret, mounted in both containers.
    directory = settings_data()["TFCOMPAT_SECRETS_DIR"]
    assert headers["X-Tfcompat-Proxy-Secret"]["fromFile"] == f"{directory}/TFCOMPAT_UI_PROXY_SECRET"
    for container in (receiver, proxy):
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == directory]
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes[mount["name"]]["secret"]["secretName"] == "tfcompat-secrets"


def test_the_page_service_reaches_the_proxy_and_the_events_service_the_event_listener() -> None:
    spec = pod("tfcompat-receiver")
    ports = {p["name"]: p["containerPort"] for c in spec["containers"] for p in c.get("ports", [])}
    page = one("Service", "tfcompat-page")["spec"]["ports"]
    events = one("Service", "tfcompat-receiver")["spec"]["ports"]
    assert [ports[p["targetPort"]] for p in page] == [PROXY]
    assert [ports[p["targetPort"]] for p in events] == [EVENTS]


def test_everything_is_denied_unless_a_policy_allows_it() -> None:
    (deny,) = [p for p in policies() if p["metadata"]["name"] == "tfcompat-default-deny"]
    assert deny["spec"]["podSelector"] == {}
    assert set(deny["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in deny["spec"] and "egress" not in deny["spec"]


def test_each_pod_is_open_only_on_its_own_ports() -> None:
    labels = pod_labels()
    assert set(ingress_ports(labels["tfcompat-receiver"])) == {EVENTS, PROXY, METRICS}
    assert set(ingress_ports(labels["tfcompat-worker"])) == {METRICS}
    assert set(ingress_ports(labels["tfcompat-bridge"])) == {METRICS}
    assert set(ingress_ports(labels["tfcompat-redis"])) == {REDIS}


def test_metrics_are_open_to_the_monitoring_namespace_only() -> None:
    for name in ("tfcompat-receiver", "tfcompat-worker", "tfcompat-bridge"):
        (sources,) = ingress_ports(pod_labels()[name])[METRICS]
        assert sources == [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
            }
        ]


def test_only_our_own_processes_reach_redis() -> None:
    labels = pod_labels()
    (sources,) = ingress_ports(labels["tfcompat-redis"])[REDIS]
    (source,) = sources
    assert set(source) == {"podSelector"}  # this namespace's pods, no other namespace's
    allowed = {
        name for name, pod_label in labels.items() if selects(source["podSelector"], pod_label)
    }
    assert allowed == {"tfcompat-receiver", "tfcompat-worker", "tfcompat-bridge", "tfcompat-beat"}
