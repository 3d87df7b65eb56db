"""Which tfcompat command a container runs (for `tfcompat healthcheck`), and what counts
as healthy. No network: argv lists and a stand-in /proc."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.cli import build_parser
from worker.model.health import healthy
from worker.pipeline.health import (
    find_running,
    probe_bucket,
    receiver_url,
    running_command,
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
