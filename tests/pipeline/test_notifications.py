"""Owners are told through the real pipeline: moto S3, Redis, a Celery worker process
and the HTTP receiver as subprocesses, Slack and GitHub as local stand-ins."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.pipeline.conftest import _redis_ready
from tests.pipeline.services import (
    cli,
    process,
    s3,
    s3_event,
    upload_tree,
    wait_for_tags,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.standins.github import GitHubStandIn
from tests.standins.http import free_port
from tests.standins.slack import SlackStandIn
from tests.truth import ROOT, SHARED
from worker.pipeline.app import QUEUE, TASK_CHECK_OBJECT, create_app
from worker.settings import Settings

pytestmark = pytest.mark.services
DB = 8
NEW_OP = SHARED / "artifacts/tf2.21/new_op"
SECRET = "webhook-secret"
TOKEN = "ghp_pipeline"


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def github() -> Iterator[GitHubStandIn]:
    with GitHubStandIn(personal_token=TOKEN) as server:
        yield server  # type: ignore[misc]


@pytest.fixture
def env(
    endpoint: str, slack: SlackStandIn, github: GitHubStandIn, tmp_path: Path
) -> dict[str, str]:
    _redis_ready(DB)
    owners = tmp_path / "owners.yaml"
    owners.write_text(
        "owners:\n"
        "  - name: ranking\n    slack: [{webhook: TFCOMPAT_SLACK_WEBHOOK_RANKING}]\n"
        "  - name: platform\n"
        "routes:\n"
        "  - locations: ['s3://notify-models/ranking/**']\n    owner: ranking\n"
        "default:\n  owner: platform\n"
    )
    return worker_env(
        endpoint,
        DB,
        TFCOMPAT_OWNERS=str(owners),
        TFCOMPAT_SLACK_WEBHOOK_URL=slack.webhook_url("platform"),
        TFCOMPAT_SLACK_WEBHOOK_RANKING=slack.webhook_url("ranking"),
        TFCOMPAT_GITHUB_WEBHOOK_SECRET=SECRET,
        TFCOMPAT_GITHUB_TOKEN=TOKEN,
        TFCOMPAT_GITHUB_API_URL=github.url,
    )


def test_incompatible_upload_tells_its_owner_exactly_once(
    env: dict[str, str], endpoint: str, slack: SlackStandIn, logs: Path
) -> None:
    client = s3(endpoint)
    client.create_bucket(Bucket="notify-models")
    upload_tree(client, "notify-models", "ranking/webp/1", NEW_OP)
    key = "ranking/webp/1/saved_model.pb"
    app = create_app(Settings(broker_url=env["TFCOMPAT_BROKER_URL"]))
    log = logs / "notify-worker.log"
    with process(cli("worker", "--concurrency", "2", "--hostname", "notify@%h"), env, log):
        wait_until(lambda: worker_ready(log), 60, "the worker")
        event = s3_event(client, "notify-models", key)
        for _ in range(2):  # a duplicate delivery: two identical tasks
            app.send_task(TASK_CHECK_OBJECT, args=[event_of(event)])
        tags = wait_for_tags(client, "notify-models", key)
        assert tags["tfcompat:status"] == "incompatible"
        wait_until(lambda: log.read_text().count('"task.done"') >= 2, 60, "both tasks")
    assert slack.violations == []
    ((path, body),) = slack.messages
    assert path == "/hooks/ranking"  # the route's owner, not the default
    assert body["text"].startswith("[ranking] INCOMPATIBLE: s3://notify-models/ranking/webp/1")
    assert "op `DecodeWebP` not registered" in json.dumps(body["blocks"])


def event_of(notification: dict[str, object]) -> dict[str, object]:
    """The task argument the receiver would enqueue for this S3 notification."""
    from worker.ingest.events import parse_records

    (event,) = parse_records(notification)
    return event.to_json()


def test_pull_request_webhook_ends_as_a_check_run(
    env: dict[str, str], endpoint: str, github: GitHubStandIn, logs: Path
) -> None:
    client = s3(endpoint)
    client.create_bucket(Bucket="pr-models")
    upload_tree(client, "pr-models", "webp/1", NEW_OP)
    github.state.files["models/webp.tfmodel"] = b"s3://pr-models/webp/1/saved_model.pb\n"
    github.state.pull_files[2] = [{"filename": "models/webp.tfmodel", "status": "added"}]
    body = (ROOT / "tests/fixtures/github/pull_request.synchronize.json").read_bytes()
    port = free_port()
    receiver = f"http://127.0.0.1:{port}"
    log = logs / "gh-worker.log"
    broker = redis.Redis.from_url(env["TFCOMPAT_BROKER_URL"])
    with process(cli("serve", "--port", str(port)), env, logs / "gh-receiver.log"):
        wait_until(lambda: httpx.get(f"{receiver}/healthz", timeout=5), 60, "the receiver")
        headers = {
            "X-GitHub-Event": "pull_request",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "Content-Type": "application/json",
        }
        forged = {**headers, "X-Hub-Signature-256": "sha256=" + "0" * 64}
        rejected = httpx.post(f"{receiver}/webhooks/github", content=body, headers=forged)
        assert rejected.status_code == 401
        assert broker.llen(QUEUE) == 0  # nothing was enqueued
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        signed = {**headers, "X-Hub-Signature-256": signature}
        response = httpx.post(f"{receiver}/webhooks/github", content=body, headers=signed)
        assert response.status_code == 202, response.text
        assert broker.llen(QUEUE) == 1
        replay = httpx.post(f"{receiver}/webhooks/github", content=body, headers=signed)
        assert replay.status_code == 409 and broker.llen(QUEUE) == 1
    with process(cli("worker", "--concurrency", "1", "--hostname", "gh@%h"), env, log):
        wait_until(
            lambda: any(r["status"] == "completed" for r in github.state.check_runs.values()),
            90,
            "the check run to complete",
        )
    (run,) = github.state.check_runs.values()
    assert run["statuses"] == ["in_progress", "completed"]
    assert run["conclusion"] == "failure"
    summary = run["output"]["summary"]
    assert "`models/webp.tfmodel`<br>→ `s3://pr-models/webp/1/saved_model.pb`" in summary
    assert github.violations == []
