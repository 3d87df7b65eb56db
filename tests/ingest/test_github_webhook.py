"""POST /webhooks/github over a real socket (uvicorn in a thread), with GitHub's own
example deliveries (`@octokit/webhooks-examples`) signed here with HMAC-SHA256 as
GitHub signs them; replays are remembered in the real Redis."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
import uvicorn
from structlog.testing import capture_logs

from tests.redis_server import REDIS_PORT
from tests.standins.http import free_port
from worker.github.webhook import job_from_delivery, signature_valid
from worker.ingest.app import create_http_app
from worker.ingest.github import github_route
from worker.model.events import ObjectEvent
from worker.model.github import GithubJob
from worker.once import RedisClaims
from worker.settings import Settings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github"
SECRET = "It's a Secret to Everybody"
REDIS_DB = 15


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Receiver:
    """The receiver app with recording enqueues, served by uvicorn on a free port."""

    def __init__(self, settings: Settings, fail_enqueue: bool = False) -> None:
        self.jobs: list[GithubJob] = []
        self.events: list[ObjectEvent] = []
        self.fail_enqueue = fail_enqueue
        client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
        client.flushdb()
        route = github_route(settings, self._enqueue, RedisClaims(client, prefix="test:"))
        served = settings.model_copy(update={"receiver_routes": ["github"], "buckets": ["*"]})
        app = create_http_app(served, self.events.append, lambda: {}, [route])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/webhooks/github"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_config=None)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def _enqueue(self, job: GithubJob) -> None:
        if self.fail_enqueue:
            raise ConnectionError("broker down")
        self.jobs.append(job)

    def __enter__(self) -> Receiver:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def deliver(
        self,
        event: str,
        body: bytes,
        delivery: str | None = None,
        signature: str | None = "sign",
        extra: dict[str, str] | None = None,
    ) -> httpx.Response:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/abc123",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": "109948940",
            **(extra or {}),
        }
        if signature == "sign":
            headers["X-Hub-Signature-256"] = sign(body)
        elif signature is not None:
            headers["X-Hub-Signature-256"] = signature
        return httpx.post(self.url, content=body, headers=headers, timeout=10)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver(Settings(github_webhook_secret=SECRET)) as r:  # type: ignore[arg-type]
        yield r


# The deliveries that start a check, as GitHub sent them.
@pytest.mark.parametrize(
    ("event", "name", "action", "pulls", "installation"),
    [
        ("pull_request", "pull_request.opened.json", "opened", (2,), 1),
        ("pull_request", "pull_request.synchronize.json", "synchronize", (2,), 1),
        ("pull_request", "pull_request.reopened.json", "reopened", (2,), 1),
        ("check_suite", "check_suite.rerequested.json", "rerequested", (2,), 957387),
        ("check_run", "check_run.rerequested.json", "rerequested", (), 1),
    ],
)
def test_signed_deliveries_enqueue_one_job(
    receiver: Receiver,
    event: str,
    name: str,
    action: str,
    pulls: tuple[int, ...],
    installation: int,
) -> None:
    body = fixture(name)
    payload = json.loads(body)
    response = receiver.deliver(event, body, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    assert response.status_code == 202, response.text
    assert response.json() == {"accepted": 1, "ignored": 0}
    (job,) = receiver.jobs
    holder = payload.get(event) or {}
    head_sha = (
        payload["pull_request"]["head"]["sha"] if event == "pull_request" else holder["head_sha"]
    )
    assert job == GithubJob(
        "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        event,
        action,
        payload["repository"]["full_name"],
        head_sha,
        pulls,
        installation,
    )
    assert GithubJob.from_json(json.loads(json.dumps(job.to_json()))) == job


def test_ping_is_answered_and_starts_nothing(receiver: Receiver) -> None:
    response = receiver.deliver("ping", fixture("ping.json"))
    assert response.status_code == 200 and response.json() == {"pong": True}
    assert receiver.jobs == []


def test_forged_signature_is_rejected_and_enqueues_nothing(receiver: Receiver) -> None:
    body = fixture("pull_request.opened.json")
    for forged in (sign(body, "not the secret"), sign(body + b" "), "sha1=" + "0" * 40, "sha256="):
        response = receiver.deliver("pull_request", body, signature=forged)
        assert response.status_code == 401, forged
    assert receiver.jobs == []


def test_a_body_changed_after_signing_is_rejected(receiver: Receiver) -> None:
    body = fixture("pull_request.opened.json")
    signature = sign(body)
    tampered = body.replace(b'"opened"', b'"reopened"', 1)
    response = receiver.deliver("pull_request", tampered, signature=signature)
    assert response.status_code == 401
    assert receiver.jobs == []


def test_missing_signature_fails_closed(receiver: Receiver) -> None:
    response = receiver.deliver("pull_request", fixture("pull_request.opened.json"), signature=None)
    assert response.status_code == 401
    assert "X-Hub-Signature-256" in response.json()["error"]
    assert receiver.jobs == []


def test_a_replayed_delivery_is_dropped(receiver: Receiver) -> None:
    body = fixture("pull_request.synchronize.json")
    assert receiver.deliver("pull_request", body, delivery="d-1").status_code == 202
    replay = receiver.deliver("pull_request", body, delivery="d-1")
    assert replay.status_code == 409
    assert len(receiver.jobs) == 1


def test_oversized_body_is_rejected_before_anything_else(tmp_path: Path) -> None:
    body = fixture("pull_request.opened.json")
    settings = Settings(github_webhook_secret=SECRET, max_event_bytes=len(body) - 1)  # type: ignore[arg-type]
    with Receiver(settings) as small:
        response = small.deliver("pull_request", body)
        assert response.status_code == 413
        assert small.jobs == []


def test_without_a_secret_github_webhooks_are_refused_and_the_log_says_why() -> None:
    """Even under the opt-out that lets such a receiver start, GitHub deliveries fail closed."""
    opted_out = Settings(allow_unauthenticated_events=True)
    with Receiver(opted_out) as open_receiver, capture_logs() as logs:
        response = open_receiver.deliver("pull_request", fixture("pull_request.opened.json"))
        assert response.status_code == 503
        assert open_receiver.jobs == []
    (refusal,) = [e for e in logs if e["event"] == "github.refused"]
    assert "TFCOMPAT_GITHUB_WEBHOOK_SECRET is not set" in refusal["reason"]


def test_when_the_broker_refuses_the_delivery_can_be_redelivered() -> None:
    settings = Settings(github_webhook_secret=SECRET)  # type: ignore[arg-type]
    body = fixture("pull_request.opened.json")
    with Receiver(settings, fail_enqueue=True) as broken:
        assert broken.deliver("pull_request", body, delivery="d-2").status_code == 503
        broken.fail_enqueue = False
        assert broken.deliver("pull_request", body, delivery="d-2").status_code == 202
        assert len(broken.jobs) == 1


def test_actions_we_do_not_act_on_are_accepted_and_ignored(receiver: Receiver) -> None:
    payload = json.loads(fixture("pull_request.opened.json"))
    payload["action"] = "labeled"
    response = receiver.deliver("pull_request", json.dumps(payload).encode())
    assert response.status_code == 202 and response.json() == {"accepted": 0, "ignored": 1}
    assert receiver.deliver("issues", b'{"action": "opened"}').status_code == 202
    assert receiver.jobs == []


def test_signed_garbage_is_malformed(receiver: Receiver) -> None:
    assert receiver.deliver("pull_request", b"not json").status_code == 400
    assert receiver.deliver("pull_request", b'{"action": "opened"}').status_code == 400
    assert receiver.jobs == []


# Signature checks on their own: only GitHub's sha256 form, compared whole.
@pytest.mark.parametrize(
    ("header", "ok"),
    [
        (sign(b"{}"), True),
        (sign(b"{}").upper().replace("SHA256=", "sha256="), False),
        (sign(b"{}")[:-1], False),
        (None, False),
        ("", False),
    ],
)
def test_signature_valid(header: str | None, ok: bool) -> None:
    assert signature_valid(SECRET.encode(), b"{}", header) is ok


def test_job_needs_a_head_sha() -> None:
    payload: dict[str, Any] = json.loads(fixture("check_run.rerequested.json"))
    del payload["check_run"]["head_sha"]
    with pytest.raises(Exception, match="head sha"):
        job_from_delivery("check_run", "d", payload)
