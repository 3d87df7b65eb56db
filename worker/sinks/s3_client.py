"""The boto3 S3 client, one per process, and botocore errors turned into ours.

A missing key or version comes out as `NotFound`, throttling, 5xx and
connection trouble as `TransientError`, anything else as `TfcompatError` with
the S3 error code.
"""

from __future__ import annotations

import os
from typing import Any

from worker.errors import ConfigError, NotFound, TfcompatError, TransientError
from worker.settings import Settings

_TRANSIENT_CODES = {
    "SlowDown",
    "Throttling",
    "ThrottlingException",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "InternalError",
    "ServiceUnavailable",
    "503",
    "500",
    "502",
    "504",
}
_NOT_FOUND_CODES = {"NoSuchKey", "NoSuchVersion", "404", "NotFound", "NoSuchBucket"}
PRECONDITION_CODES = {"PreconditionFailed", "412"}


def s3_client(settings: Settings) -> Any:
    """A new client with its own connection pool (prefer `shared_client`)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=settings.s3_endpoint_url,
        region_name=settings.aws_region,
        config=Config(
            retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=5, read_timeout=30
        ),
    )


_CLIENTS: dict[tuple[int, str | None, str], Any] = {}


def shared_client(settings: Settings) -> Any:
    """This process's client for the settings' endpoint, built once: every request
    reuses its connection pool. Keyed by process id, so a forked worker child
    never shares its parent's sockets."""
    key = (os.getpid(), settings.s3_endpoint_url, settings.aws_region)
    client = _CLIENTS.get(key)
    if client is None:
        client = _CLIENTS[key] = s3_client(settings)
    return client


def error_code(exc: Exception) -> tuple[str, str]:
    """(S3 error code, HTTP status) of a botocore ClientError; ('', '') otherwise."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return "", ""
    code = str(response.get("Error", {}).get("Code", ""))
    status = str(response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
    return code, status


def translate(exc: Exception, what: str) -> TfcompatError:
    """A botocore exception as one of our errors."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    if isinstance(exc, ClientError):
        code, status = error_code(exc)
        if code in _NOT_FOUND_CODES or status == "404":
            return NotFound(f"{what}: not found ({code or status})")
        if code in _TRANSIENT_CODES or status.startswith("5") or status == "429":
            return TransientError(f"{what}: S3 says {code or status}, try again")
        return TfcompatError(f"{what}: S3 error {code or status}")
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return ConfigError(f"{what}: no AWS credentials configured ({exc})")
    if isinstance(exc, BotoCoreError):
        return TransientError(f"{what}: {type(exc).__name__}: {exc}")
    return TransientError(f"{what}: {type(exc).__name__}: {exc}")
