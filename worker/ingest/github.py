"""POST /webhooks/github: verify, drop replays, enqueue a `tfcompat.github_event`, answer 202.

Order matters and is fixed: the body is read under the size cap, then its
`X-Hub-Signature-256` is checked over the raw bytes with a constant-time
compare, and only then is anything in it parsed. With no
TFCOMPAT_GITHUB_WEBHOOK_SECRET configured every delivery is refused (503, and
the log says why): an unverifiable webhook must not start work. A delivery id
(`X-GitHub-Delivery`) seen before is a replay and is dropped (409); the id is
claimed in Redis before enqueueing and given back if the broker refuses, so
GitHub's own redelivery of a delivery we lost still works.

Answers: 200 ping, 202 queued or ignored (events and actions we do not act
on), 400 malformed, 401 unsigned or forged, 409 replay, 413 too large, 503 not
configured or the broker/Redis cannot take it now (GitHub shows the failure
and it can be redelivered).

Events acted on: `pull_request` (opened, synchronize, reopened) and
`check_suite`/`check_run` rerequested. Parsing them into a `GithubJob` is pure.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import structlog
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from worker import metrics
from worker.errors import TfcompatError
from worker.ingest.app import Rejected, guarded, read_body
from worker.ingest.events import MalformedEvent
from worker.once import Claims
from worker.settings import Settings

log = structlog.get_logger(__name__)

SOURCE = "github"
PULL_REQUEST_ACTIONS = {"opened", "synchronize", "reopened"}
RERUN_EVENTS = {"check_suite", "check_run"}


@dataclass(frozen=True)
class GithubJob:
    """What the worker needs to check one commit: JSON-safe, small."""

    delivery: str
    event: str
    action: str
    repository: str  # "owner/name"
    head_sha: str
    pull_numbers: tuple[int, ...] = ()
    installation_id: int | None = None

    @property
    def rerequested(self) -> bool:
        return self.action == "rerequested"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["pull_numbers"] = list(self.pull_numbers)
        return data

    @classmethod
    def from_json(cls, data: Any) -> GithubJob:
        if not isinstance(data, dict):
            raise MalformedEvent("a GitHub job is a JSON object")
        for name in ("delivery", "event", "action", "repository", "head_sha"):
            if not isinstance(data.get(name), str) or not data[name]:
                raise MalformedEvent(f"GitHub job without {name}")
        installation = data.get("installation_id")
        return cls(
            data["delivery"],
            data["event"],
            data["action"],
            data["repository"],
            data["head_sha"],
            tuple(int(n) for n in data.get("pull_numbers") or ()),
            int(installation) if installation is not None else None,
        )


def signature_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """GitHub's `sha256=<hex HMAC of the raw body>`, compared in constant time."""
    if not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), header.strip().encode())


def _dig(payload: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(payload, dict):
            return None
        payload = payload.get(part)
    return payload


def _pull_numbers(items: Any) -> tuple[int, ...]:
    if not isinstance(items, list):
        return ()
    return tuple(sorted({p["number"] for p in items if isinstance(_dig(p, "number"), int)}))


NO_COMMIT = "0" * 40


def pushes_fleet(payload: dict[str, Any], fleet_path: str | None) -> bool:
    """A push to the default branch that touches the fleet file (or may: GitHub lists
    at most 20 commits, so a push without a commit list counts)."""
    if not fleet_path:
        return False
    branch = _dig(payload, "repository", "default_branch")
    if payload.get("ref") != f"refs/heads/{branch}" or payload.get("after") == NO_COMMIT:
        return False
    commits = payload.get("commits")
    if not isinstance(commits, list) or not commits:
        return True
    for commit in commits:
        for field in ("added", "modified", "removed"):
            paths = _dig(commit, field)
            if isinstance(paths, list) and fleet_path in paths:
                return True
    return False


def job_from_delivery(
    event: str, delivery: str, payload: Any, fleet_path: str | None = None
) -> GithubJob | None:
    """The job a verified delivery asks for, or None if it asks for nothing we do:
    pull requests and check re-runs are checked; a push of the fleet file to the
    default branch re-evaluates every indexed model against it."""
    if not isinstance(payload, dict):
        raise MalformedEvent("a GitHub webhook body is a JSON object")
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    repository = _dig(payload, "repository", "full_name")
    installation = _dig(payload, "installation", "id")
    if event == "pull_request" and action in PULL_REQUEST_ACTIONS:
        head_sha, number = _dig(payload, "pull_request", "head", "sha"), payload.get("number")
        pulls: tuple[int, ...] = (number,) if isinstance(number, int) else ()
    elif event in RERUN_EVENTS and action == "rerequested":
        holder = payload.get(event)
        head_sha = _dig(holder, "head_sha")
        pulls = _pull_numbers(_dig(holder, "pull_requests"))
    elif event == "push" and pushes_fleet(payload, fleet_path):
        action, head_sha, pulls = "fleet", payload.get("after"), ()
    else:
        return None
    if not isinstance(repository, str) or not isinstance(head_sha, str) or not head_sha:
        raise MalformedEvent(f"{event}.{action} without repository.full_name or head sha")
    return GithubJob(
        delivery,
        event,
        str(action),
        repository,
        head_sha,
        pulls,
        installation if isinstance(installation, int) else None,
    )


EnqueueJob = Callable[[GithubJob], None]


def celery_enqueue_job(settings: Settings) -> EnqueueJob:
    from worker.pipeline.app import TASK_GITHUB_EVENT, create_app

    app = create_app(settings)

    def enqueue(job: GithubJob) -> None:
        app.send_task(TASK_GITHUB_EVENT, args=[job.to_json()])

    return enqueue


def github_route(
    settings: Settings, enqueue: EnqueueJob | None = None, deliveries: Claims | None = None
) -> Route:
    """The route for `create_http_app(extra_routes=...)`; Celery and Redis by default."""
    if enqueue is None:
        enqueue = celery_enqueue_job(settings)
    if deliveries is None:
        from worker.once import RedisClaims

        deliveries = RedisClaims.from_url(settings.broker_url)
    secret = settings.github_webhook_secret
    limit = settings.max_event_bytes

    async def github_webhook(request: Request) -> Response:
        if secret is None or not secret.get_secret_value():
            log.error(
                "github.refused",
                reason="TFCOMPAT_GITHUB_WEBHOOK_SECRET is not set: unverifiable webhooks are "
                "refused; set it to the secret configured in the GitHub App",
            )
            metrics.EVENTS_REJECTED.labels(SOURCE, "not-configured").inc()
            return JSONResponse({"error": "GitHub webhooks are not configured"}, status_code=503)
        body = await read_body(request, limit)
        header = request.headers.get("x-hub-signature-256")
        if header is None:
            raise Rejected(401, "missing X-Hub-Signature-256")
        if not signature_valid(secret.get_secret_value().encode(), body, header):
            raise Rejected(401, "X-Hub-Signature-256 does not match the body")
        event = request.headers.get("x-github-event", "")
        if event == "ping":
            log.info("github.ping", hook=request.headers.get("x-github-hook-id"))
            return JSONResponse({"pong": True}, status_code=200)
        delivery = request.headers.get("x-github-delivery", "")
        if not event or not delivery:
            raise Rejected(400, "missing X-GitHub-Event or X-GitHub-Delivery")
        try:
            payload = json.loads(body)
        except ValueError as exc:
            raise MalformedEvent(f"body is not JSON ({exc})") from None
        metrics.EVENTS_RECEIVED.labels(SOURCE).inc()
        job = job_from_delivery(event, delivery, payload, settings.github_fleet_path)
        if job is None:
            metrics.EVENTS_IGNORED.labels(SOURCE).inc()
            log.info("github.ignored", github_event=event, action=payload.get("action"))
            return JSONResponse({"accepted": 0, "ignored": 1}, status_code=202)
        return await hand_over(job)

    async def hand_over(job: GithubJob) -> Response:
        assert enqueue is not None and deliveries is not None
        try:
            token = await run_in_threadpool(
                deliveries.claim, f"github-delivery:{job.delivery}", settings.github_delivery_ttl
            )
        except TfcompatError as exc:
            log.error("github.replay_check_failed", error=str(exc))
            return JSONResponse({"error": "cannot check for replays now; retry"}, status_code=503)
        if token is None:
            raise Rejected(409, f"delivery {job.delivery} was already received")
        try:
            await run_in_threadpool(enqueue, job)
        except Exception as exc:
            await run_in_threadpool(deliveries.release, f"github-delivery:{job.delivery}", token)
            log.error("enqueue.failed", source=SOURCE, error=str(exc))
            metrics.EVENTS_REJECTED.labels(SOURCE, "broker").inc()
            return JSONResponse({"error": "cannot enqueue now; retry"}, status_code=503)
        log.info(
            "github.accepted",
            delivery=job.delivery,
            github_event=job.event,
            action=job.action,
            repository=job.repository,
            head_sha=job.head_sha,
        )
        return JSONResponse({"accepted": 1, "ignored": 0}, status_code=202)

    return Route("/webhooks/github", guarded(SOURCE, github_webhook), methods=["POST"])
