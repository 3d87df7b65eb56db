"""Which tfcompat command a container runs (for `tfcompat healthcheck`), and what counts
as healthy. No network: argv lists and a stand-in /proc."""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest

from worker.cli import build_parser
from worker.model.health import healthy
from worker.pipeline.health import (
    check_receiver,
    find_running,
    probe_bucket,
    receiver_url,
    running_command,
    unreachable,
)
from worker.settings import Settings

PARSER = build_parser()


# The command lines a container, a test or a developer starts the processes with.
@pytest.mark.parametrize(
    ("argv", "role", "option", "expected"),
    [
        (["/opt/venv/bin/python", "/opt/venv/bin/tfcompat", "worker"], "worker", "hostname", None),
        (["tfcompat", "worker", "--hostname", "w1@%h"], "worker", "hostname", "w1@%h"),
        (["tfcompat", "serve", "--host", "0.0.0.0", "--port", "9000"], "serve", "port", 9000),
        (["python", "-m", "worker.cli", "serve"], "serve", "port", 8080),
        (
            ["tfcompat", "sqs-bridge", "--queue-url", "https://q"],
            "sqs-bridge",
            "queue_url",
            "https://q",
        ),
    ],
)
def test_running_command(argv: list[str], role: str, option: str, expected: object) -> None:
    found = running_command(argv, PARSER)
    assert found is not None and found.role == role
    assert getattr(found.args, option) == expected


# Processes that are not a long-running tfcompat command.
@pytest.mark.parametrize(
    "argv",
    [
        ["tfcompat", "healthcheck"],
        ["tfcompat", "check", "model.pb"],
        ["tfcompat"],
        ["celery", "worker"],
        ["python", "worker.cli", "serve"],
        ["tfcompat", "serve", "--port", "not-a-number"],
    ],
)
def test_not_a_running_command(argv: list[str]) -> None:
    assert running_command(argv, PARSER) is None


def fake_proc(root: Path, processes: dict[int, list[str]]) -> Path:
    for pid, argv in processes.items():
        (root / str(pid)).mkdir()
        (root / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (root / "self").mkdir()
    return root


def test_find_running_takes_the_oldest_tfcompat_process(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path,
        {
            1: ["/usr/bin/tini", "--", "tfcompat", "worker", "--hostname", "a@%h"],
            7: ["tfcompat", "worker", "--hostname", "a@%h"],
            30: ["tfcompat", "serve"],
        },
    )
    found = find_running(PARSER, proc)
    assert found is not None and (found.role, found.args.hostname) == ("worker", "a@%h")


def test_find_running_finds_nothing_without_a_tfcompat_process(tmp_path: Path) -> None:
    assert (
        find_running(PARSER, fake_proc(tmp_path, {1: ["sh"], 2: ["tfcompat", "settings"]})) is None
    )


# Where the healthcheck reaches the receiver: wildcard binds are asked on loopback.
@pytest.mark.parametrize(
    ("argv", "url"),
    [
        (["serve"], "http://127.0.0.1:8080/healthz"),
        (["serve", "--host", "0.0.0.0", "--port", "80"], "http://127.0.0.1:80/healthz"),
        (["serve", "--host", "10.1.2.3"], "http://10.1.2.3:8080/healthz"),
    ],
)
def test_receiver_url(argv: list[str], url: str) -> None:
    assert receiver_url(PARSER.parse_args(argv)) == url


# The bucket /healthz heads: least privilege, one named bucket, never a listing.
@pytest.mark.parametrize(
    ("settings", "bucket"),
    [
        ({"report_bucket": "reports", "index_buckets": ["models"]}, "reports"),
        ({"index_buckets": ["models", "more"]}, "models"),
        ({}, None),
    ],
)
def test_probe_bucket(settings: dict[str, object], bucket: str | None) -> None:
    assert probe_bucket(Settings(**settings)) == bucket  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("checks", "ok"),
    [
        ({"broker": "ok", "object_store": "ok"}, True),
        ({"broker": "ok", "object_store": "skipped: no bucket"}, True),
        ({"broker": "error: ConnectionError", "object_store": "ok"}, False),
        ({"worker": "error: w did not answer"}, False),
    ],
)
def test_healthy(checks: dict[str, str], ok: bool) -> None:
    assert healthy(checks) is ok


# --- what `tfcompat healthcheck serve` says when the receiver does not answer ok -----------


@contextlib.contextmanager
def http_server(status: int, body: bytes) -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/healthz"
    finally:
        server.shutdown()
        server.server_close()


def test_receiver_ok() -> None:
    with http_server(200, b'{"status": "ok"}') as url:
        assert check_receiver(url, 5) == {"receiver": "ok"}


def test_receiver_refused_names_the_url_and_the_cause() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/healthz"
    (value,) = check_receiver(url, 5).values()
    assert value.startswith(f"error: {url}: connection refused")


def test_receiver_that_never_answers_is_a_timeout() -> None:
    with socket.socket() as listener:  # accepts connections (backlog), never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/healthz"
        assert check_receiver(url, 0.2) == {"receiver": f"error: {url}: no answer within 0.2s"}


def test_receiver_http_error_gives_the_status_and_its_checks() -> None:
    body = b'{"status": "error", "checks": {"broker": "error: ConnectionError"}}'
    with http_server(503, body) as url:
        assert check_receiver(url, 5) == {
            "receiver": f"error: {url}: HTTP 503 Service Unavailable",
            "broker": "error: ConnectionError",
        }


def test_unresolvable_host_says_so() -> None:
    url = "http://receiver.example:8080/healthz"
    failure = urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))
    assert unreachable(url, failure, 5) == (
        f"error: {url}: cannot resolve the host (Name or service not known)"
    )
