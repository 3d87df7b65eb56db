"""The boto3 S3 client, one per process, and botocore errors turned into ours.

A missing key or version comes out as `NotFound`, throttling, 5xx and
connection trouble as `TransientError`, any other S3 answer as `TfcompatError`
with the S3 error code. Only what botocore, urllib3 or the socket raise is
translated (`s3_errors()`): anything else is a bug, and the adapters let it
through as it is, so it fails loudly instead of being retried as an outage.
Translated errors keep the vendor's exception as their cause.
"""

from __future__ import annotations

import functools
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
    """A new client with its own connection pool (prefer `shared_client`), bounded by
    the timeouts and retries every AWS client of ours has (`sinks.aws`)."""
    from worker.sinks.aws import aws_client

    return aws_client("s3", settings)


_CLIENTS: dict[tuple[int, str | None, str, str], Any] = {}


def aws_bounds(settings: Settings) -> str:
    return (
        f"{settings.aws_connect_timeout}/{settings.aws_read_timeout}/"
        f"{settings.aws_max_attempts}/{settings.aws_retry_mode}"
    )


def shared_client(settings: Settings) -> Any:
    """This process's client for the settings' endpoint, built once: every request
    reuses its connection pool. Keyed by process id, so a forked worker child
    never shares its parent's sockets."""
    key = (os.getpid(), settings.s3_endpoint_url, settings.aws_region, aws_bounds(settings))
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


@functools.cache
def s3_errors() -> tuple[type[Exception], ...]:
    """What talking to S3 can raise that is not a bug: botocore's errors, urllib3's
    (a streamed body read after botocore returned), and the socket's. The adapters
    catch these and nothing else (`except s3_errors() as exc`)."""
    from botocore.exceptions import BotoCoreError, ClientError
    from urllib3.exceptions import HTTPError

    return (BotoCoreError, ClientError, HTTPError, OSError)


def translate(exc: Exception, what: str) -> TfcompatError:
    """One of `s3_errors()` as one of our errors; raise it `from exc`."""
    from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

    if isinstance(exc, ClientError):
        code, status = error_code(exc)
        if code in _NOT_FOUND_CODES or status == "404":
            return NotFound(f"{what}: not found ({code or status})")
        if code in _TRANSIENT_CODES or status.startswith("5") or status == "429":
            return TransientError(f"{what}: S3 says {code or status}, try again")
        return TfcompatError(f"{what}: S3 error {code or status}")
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return ConfigError(f"{what}: no AWS credentials configured ({exc})")
    return TransientError(f"{what}: {type(exc).__name__}: {exc}")
