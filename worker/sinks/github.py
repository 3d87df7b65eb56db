"""The GitHub adapter of the ChecksClient port: read a pull request, write a check run.

Through PyGithub. Chosen over the other two well-kept clients for this job:
- PyGithub is synchronous like our Celery tasks, typed (mypy strict checks
  it in a second), and its `Auth.AppAuth(...).get_installation_auth(id)`
  does the GitHub App dance: a JWT signed with the App's key buys an
  installation token, which is cached and re-fetched only 20 seconds before
  it expires. `base_url` points it at GitHub Enterprise or a test server.
- gidgethub is async-only (every task would run its own event loop) and
  leaves token caching to us.
- githubkit 0.16 failed to import beside the current `hishel` release and
  brings ~56 MB of generated schemas that make mypy take close to a minute.

PyGithub runs with `lazy=True` (no GET for objects we only address), 100
items a page, GitHub's advice of at most one write a second
(`seconds_between_writes`), and its own retries only for connection errors:
rate limits and 5xx come out as `TransientError` and the Celery task retries
with backoff. 404 is `NotFound`; anything else a `TfcompatError` naming the
status.

One client per installation per worker process (`GitHubClients`), so an
installation's token is shared by every task until it nears expiry. Token
mode (TFCOMPAT_GITHUB_TOKEN) takes a token as it is; GitHub lets only Apps
write check runs, so it must be an installation token (tests, one-off runs).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import structlog

from worker.errors import ConfigError, NotFound, TfcompatError, TransientError
from worker.github.ports import ChangedFile, CheckRunRef
from worker.settings import Settings, settings_key

log = structlog.get_logger(__name__)
MAX_FILE_BYTES = 100 << 20  # GitHub's own limit for a file in a repository
WRITE_INTERVAL = 1.0  # seconds between writes, GitHub's advice against secondary limits
T = TypeVar("T")


def translate(exc: Exception, what: str) -> TfcompatError:
    """A PyGithub or requests exception as one of our errors."""
    from github import GithubException, RateLimitExceededException
    from requests import RequestException

    if isinstance(exc, RateLimitExceededException):
        return TransientError(f"{what}: GitHub rate limit")
    if isinstance(exc, GithubException):
        status = exc.status
        if status == 404:
            return NotFound(f"{what}: not found on GitHub")
        if status in (429, 502, 503, 504) or status >= 500:
            return TransientError(f"{what}: GitHub says {status}, try again")
        if status == 403 and "rate limit" in str(exc.data).lower():
            return TransientError(f"{what}: GitHub secondary rate limit")
        return TfcompatError(f"{what}: GitHub says {status}: {exc.data}")
    if isinstance(exc, RequestException):
        return TransientError(f"{what}: {type(exc).__name__}")
    return TransientError(f"{what}: {type(exc).__name__}: {exc}")


def _call(what: str, action: Callable[[], T]) -> T:
    from github import GithubException
    from requests import RequestException

    try:
        return action()
    except (GithubException, RequestException) as exc:
        raise translate(exc, what) from None


class GitHubChecks:
    """ChecksClient over one PyGithub client (one installation or one token)."""

    def __init__(self, github: Any) -> None:
        self._github = github

    def _repo(self, repo: str) -> Any:
        return self._github.get_repo(repo)  # lazy: the client is built with lazy=True

    def changed_files(self, repo: str, pull_number: int) -> list[ChangedFile]:
        def files() -> list[ChangedFile]:
            pull = self._repo(repo).get_pull(pull_number)
            return [ChangedFile(f.filename, f.status) for f in pull.get_files()]

        return _call(f"{repo}#{pull_number} files", files)

    def tree(self, repo: str, sha: str) -> list[str]:
        def paths() -> list[str]:
            tree = self._repo(repo).get_git_tree(sha, recursive=True)
            if tree.raw_data.get("truncated"):
                log.warning("github.tree_truncated", repository=repo, sha=sha)
            return [e.path for e in tree.tree if e.type == "blob"]

        return _call(f"{repo}@{sha} tree", paths)

    def read_file(self, repo: str, path: str, ref: str) -> bytes:
        def content() -> bytes:
            found = self._repo(repo).get_contents(path, ref=ref)
            if isinstance(found, list) or found.type != "file":
                raise NotFound(f"{repo}/{path}@{ref}: not a file")
            if found.size > MAX_FILE_BYTES:
                raise TfcompatError(f"{path}: {found.size} bytes, over {MAX_FILE_BYTES}")
            if found.encoding == "base64" and (found.content or found.size == 0):
                return bytes(found.decoded_content)
            # Over 1 MB the contents API sends no content; the blob API sends up to 100 MB.
            blob = self._repo(repo).get_git_blob(found.sha)
            return base64.b64decode(blob.content)

        return _call(f"{repo}/{path}@{ref}", content)

    def find_check_run(self, repo: str, head_sha: str, name: str) -> CheckRunRef | None:
        def newest() -> CheckRunRef | None:
            runs = self._repo(repo).get_commit(head_sha).get_check_runs(check_name=name)
            for run in runs:
                return CheckRunRef(run.id, run.status)
            return None

        return _call(f"{repo}@{head_sha} check runs", newest)

    def create_check_run(self, repo: str, head_sha: str, name: str, started_at: datetime) -> int:
        def create() -> int:
            run = self._repo(repo).create_check_run(
                name=name, head_sha=head_sha, status="in_progress", started_at=started_at
            )
            return int(run.id)

        return _call(f"{repo}@{head_sha} create check run", create)

    def update_check_run(self, repo: str, run_id: int, **fields: Any) -> None:
        _call(
            f"{repo} check run {run_id}",
            lambda: self._repo(repo).get_check_run(run_id).edit(**fields),
        )


class GitHubClients:
    """PyGithub clients built from settings, one per installation, kept for the process."""

    def __init__(self, settings: Settings, write_interval: float = WRITE_INTERVAL) -> None:
        self._settings = settings
        self._write_interval = write_interval
        self._lock = threading.Lock()
        self._clients: dict[int | None, GitHubChecks] = {}

    def _auth(self, installation_id: int | None) -> Any:
        from github import Auth

        s = self._settings
        if s.github_app_id and s.github_app_private_key:
            if installation_id is None:
                raise ConfigError("GitHub App mode: the event names no installation")
            key = s.github_app_private_key.get_secret_value().replace("\\n", "\n")
            return Auth.AppAuth(s.github_app_id, key).get_installation_auth(installation_id)
        if s.github_token:
            return Auth.Token(s.github_token.get_secret_value())
        raise ConfigError(
            "no GitHub credentials: set TFCOMPAT_GITHUB_APP_ID and "
            "TFCOMPAT_GITHUB_APP_PRIVATE_KEY, or TFCOMPAT_GITHUB_TOKEN"
        )

    def for_installation(self, installation_id: int | None) -> GitHubChecks:
        from github import Github

        app_mode = bool(self._settings.github_app_id and self._settings.github_app_private_key)
        key = installation_id if app_mode else None
        with self._lock:
            if key not in self._clients:
                self._clients[key] = GitHubChecks(
                    Github(
                        auth=self._auth(installation_id),
                        base_url=self._settings.github_api_url.rstrip("/"),
                        per_page=100,
                        lazy=True,
                        retry=3,
                        timeout=30,
                        seconds_between_requests=None,
                        seconds_between_writes=self._write_interval or None,
                    )
                )
            return self._clients[key]


_CLIENTS: dict[str, GitHubClients] = {}


def github_clients_for(settings: Settings) -> GitHubClients:
    """One GitHubClients per worker process and settings, so tokens are reused."""
    key = settings_key(settings)
    if key not in _CLIENTS:
        _CLIENTS[key] = GitHubClients(settings)
    return _CLIENTS[key]
