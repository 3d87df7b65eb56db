"""Credentials in URIs never shown: taken apart for the clients, masked everywhere
else (log lines, error messages, `tfcompat settings`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from worker.redact import mask_password, redact_text, split_userinfo, strip_userinfo
from worker.settings import Settings, masked

ROOT = Path(__file__).resolve().parents[1]


# URIs with and without userinfo, as the clients and the displays need them
@pytest.mark.parametrize(
    ("uri", "bare", "user", "password", "shown"),
    [
        (
            "https://u:p%40ss@mlflow.example:5000/x",
            "https://mlflow.example:5000/x",
            "u",
            "p@ss",
            "https://u:********@mlflow.example:5000/x",
        ),
        (
            "amqp://guest:guest@rabbit:5672//",
            "amqp://rabbit:5672//",
            "guest",
            "guest",
            "amqp://guest:********@rabbit:5672//",
        ),
        (
            "redis://:s3cret@redis:6379/0",
            "redis://redis:6379/0",
            None,
            "s3cret",
            "redis://:********@redis:6379/0",
        ),
        ("http://token@host/", "http://host/", "token", None, "http://token@host/"),
        ("http://host:5000", "http://host:5000", None, None, "http://host:5000"),
    ],
)
def test_userinfo_is_taken_apart_and_masked(
    uri: str, bare: str, user: str | None, password: str | None, shown: str
) -> None:
    assert split_userinfo(uri) == (bare, user, password)
    assert strip_userinfo(uri) == bare
    assert mask_password(uri) == shown


def test_userinfo_inside_free_text_is_masked() -> None:
    text = "GET https://u:hunter2@h/api failed; retrying amqp://g:hunter2@b// now"
    assert "hunter2" not in redact_text(text)
    assert "https://********@h/api" in redact_text(text)


def test_settings_output_masks_passwords_of_uri_settings() -> None:
    shown = masked(
        Settings(
            broker_url="amqp://guest:hunter2@rabbit//",
            mlflow_tracking_uri="https://ci:hunter2@mlflow.example",
            mlflow_tracking_password="hunter2",
        )
    )
    assert "hunter2" not in repr(shown)
    assert shown["TFCOMPAT_BROKER_URL"] == "amqp://guest:********@rabbit//"


LOGGER = """
import structlog
from worker.logs import configure_logging
configure_logging("INFO", "json")
structlog.get_logger().warning("mlflow.unreadable", error="GET https://u:hunter2@h/x: 500")
import logging
logging.getLogger("botocore").warning("connecting to amqp://g:hunter2@b//")
"""


def test_log_lines_never_carry_a_uri_password() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOGGER], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "mlflow.unreadable" in done.stderr and "amqp://" in done.stderr
    assert "hunter2" not in done.stderr
