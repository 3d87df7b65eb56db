"""Credentials in URIs, kept out of everything a person or another system reads.

A URI may carry its credentials as userinfo (`https://user:password@host/`,
`amqp://guest:guest@broker//`, `redis://:password@host/0`). The clients that
need them take them apart (`worker.sinks.mlflow`); everything else meets the
URI only through these functions: logs (a structlog processor over every
logged string, `worker.logs`), exception messages, reports and tags, and
`tfcompat settings`. Pure and dependency-free, so every layer may use it.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

MASK = "********"

# scheme://userinfo@ : userinfo is everything up to the last '@' before the host's end.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s@'\"]*)@")


def split_userinfo(uri: str) -> tuple[str, str | None, str | None]:
    """(uri without userinfo, user, password); user and password percent-decoded."""
    parsed = urllib.parse.urlsplit(uri)
    if "@" not in parsed.netloc:
        return uri, None, None
    userinfo, _, host = parsed.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    bare = urllib.parse.urlunsplit(parsed._replace(netloc=host))
    return (
        bare,
        urllib.parse.unquote(user) or None,
        urllib.parse.unquote(password) if colon else None,
    )


def strip_userinfo(uri: str) -> str:
    """The URI without any `user:password@` (what is shown, logged and reported)."""
    return split_userinfo(uri)[0]


def mask_password(uri: str) -> str:
    """The URI with its password masked and its user kept (`tfcompat settings`)."""
    bare, user, password = split_userinfo(uri)
    if user is None and password is None:
        return uri
    parsed = urllib.parse.urlsplit(bare)
    shown = urllib.parse.quote(user or "", safe="") + (f":{MASK}" if password is not None else "")
    return urllib.parse.urlunsplit(parsed._replace(netloc=f"{shown}@{parsed.netloc}"))


def redact_text(text: str) -> str:
    """Every `scheme://userinfo@` inside free text (an error message, a log line) with
    its userinfo masked."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)


def redact_value(value: Any) -> Any:
    """`redact_text` over a string, or over the strings inside lists, tuples and dicts."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item) for item in value)
    return value
