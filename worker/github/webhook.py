"""GitHub webhook deliveries as jobs: signature check and payload reading, pure.

The HTTP route (`ingest.github`) verifies the HMAC before it parses anything and
turns a delivery into a `GithubJob` here; events that need no check give None.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from worker.errors import MalformedEvent
from worker.model.github import GithubJob

SOURCE = "github"


PULL_REQUEST_ACTIONS = {"opened", "synchronize", "reopened"}


RERUN_EVENTS = {"check_suite", "check_run"}


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
