"""Metrics and health through the real pipeline: an upload moves the receiver's and the
worker's Prometheus counters; the healthchecks probe the real broker, store and worker."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.pipeline.conftest import Stack
from tests.pipeline.services import (
    cli,
    free_port,
    s3_event,
    upload_tree,
    wait_for_tags,
    wait_until,
)
from tests.redis_server import REDIS_PORT
from tests.truth import SHARED
from worker.ingest.app import create_http_app
from worker.pipeline.health import dependency_checks
from worker.settings import Settings

pytestmark = pytest.mark.services
NEW_OP = SHARED / "artifacts/tf2.21/new_op"

Samples = list[tuple[str, dict[str, str], float]]


def scrape(url: str) -> Samples:
    text = httpx.get(url, timeout=10).raise_for_status().text
    return [
        (s.name, dict(s.labels), s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    ]


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels include `labels` (0 when absent)."""
    return sum(
        v for n, lab, v in samples if n == name and all(lab.get(k) == x for k, x in labels.items())
    )


def test_an_upload_moves_the_receiver_and_worker_metrics(stack: Stack) -> None:
    bucket = stack.bucket()
    upload_tree(stack.s3, bucket, "metered/1", NEW_OP)
    key = "metered/1/saved_model.pb"
    event = s3_event(stack.s3, bucket, key)
    sent = datetime.now(UTC) - timedelta(seconds=5)  # as if S3 took 5 s to tell us
    event["Records"][0]["eventTime"] = sent.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    receiver_before = scrape(stack.receiver_metrics)
    worker_before = scrape(stack.worker_metrics)

    assert stack.post("/events/s3", event).status_code == 202
    assert wait_for_tags(stack.s3, bucket, key)["tfcompat:status"] == "incompatible"
    checked = {"task": "check_object", "outcome": "checked"}
    done = value(worker_before, "tfcompat_tasks_total", **checked)
    worker_after = wait_until(
        lambda: (
            (w := scrape(stack.worker_metrics))
            and value(w, "tfcompat_tasks_total", **checked) > done
            and w
        ),
        30,
        "the worker's task counter",
    )
    receiver_after = scrape(stack.receiver_metrics)

    def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    received = "tfcompat_events_received_total"
    assert moved(receiver_before, receiver_after, received, source="s3") == 1
    assert moved(worker_before, worker_after, "tfcompat_tasks_total", **checked) >= 1
    verdicts = moved(worker_before, worker_after, "tfcompat_verdicts_total", status="incompatible")
    assert verdicts >= 1
    # Measured from the event's time, not the task's start: over 5 s, well under a minute.
    latency = "tfcompat_event_to_tags_seconds_bucket"
    assert moved(worker_before, worker_after, latency, le="5.0") == 0
    assert moved(worker_before, worker_after, latency, le="60.0") >= 1
    model_bytes = (NEW_OP / "saved_model.pb").stat().st_size
    assert moved(worker_before, worker_after, "tfcompat_object_bytes_read_total") >= model_bytes


def test_a_malformed_task_is_counted_as_rejected(stack: Stack) -> None:
    from worker.pipeline.app import TASK_CHECK_OBJECT, create_app

    rejected = {"task": "check_object", "outcome": "rejected"}
    before = value(scrape(stack.worker_metrics), "tfcompat_tasks_total", **rejected)
    create_app(Settings(broker_url=stack.env["TFCOMPAT_BROKER_URL"])).send_task(
        TASK_CHECK_OBJECT, args=[{"bucket": "b"}]
    )
    wait_until(
        lambda: value(scrape(stack.worker_metrics), "tfcompat_tasks_total", **rejected) > before,
        30,
        "a rejected task counted",
    )


def healthcheck(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli("healthcheck", *args), env=stack.env, capture_output=True, text=True, timeout=60
    )


def test_worker_healthcheck_pings_the_running_worker_node(stack: Stack) -> None:
    node = f"main@{socket.gethostname()}"
    result = healthcheck(stack, "worker", "--node", node)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "worker worker: ok" in result.stdout


def test_worker_healthcheck_fails_when_no_such_node_answers(stack: Stack) -> None:
    result = healthcheck(stack, "worker", "--node", "nobody@nowhere", "--timeout", "1")
    assert result.returncode == 1
    assert "nobody@nowhere did not answer" in result.stdout


def test_receiver_healthcheck_reads_healthz(stack: Stack) -> None:
    assert healthcheck(stack, "serve", "--url", f"{stack.receiver}/healthz").returncode == 0
    closed = f"http://127.0.0.1:{free_port()}/healthz"
    assert healthcheck(stack, "serve", "--url", closed, "--timeout", "2").returncode == 1


def health_of(endpoint: str, **settings: Any) -> tuple[int, dict[str, Any]]:
    config = Settings(
        broker_url=f"redis://127.0.0.1:{REDIS_PORT}/11",
        s3_endpoint_url=endpoint,
        receiver_routes=[],  # /healthz alone: no event route to authenticate
        buckets=["*"],
        **settings,
    )
    app = create_http_app(config, lambda event: None, lambda: dependency_checks(config))

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
            return await client.get("/healthz")

    response = asyncio.run(get())
    return response.status_code, response.json()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, val in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
        monkeypatch.setenv(name, val)


@pytest.mark.usefixtures("aws_env")
def test_healthz_heads_the_configured_bucket(stack: Stack) -> None:
    bucket = stack.bucket()
    status, body = health_of(stack.endpoint, index_buckets=[bucket])
    assert status == 200
    assert body["checks"] == {"broker": "ok", "object_store": "ok"}


@pytest.mark.usefixtures("aws_env")
def test_healthz_is_degraded_when_the_bucket_cannot_be_reached(stack: Stack) -> None:
    status, body = health_of(stack.endpoint, report_bucket="no-such-bucket-here")
    assert status == 503
    assert body["checks"]["object_store"].startswith("error")
    assert body["checks"]["broker"] == "ok"


@pytest.mark.usefixtures("aws_env")
def test_healthz_skips_the_store_when_no_bucket_is_named(stack: Stack) -> None:
    status, body = health_of(stack.endpoint)
    assert status == 200
    assert body["checks"]["object_store"].startswith("skipped")
