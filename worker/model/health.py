"""What a health probe answers: one line per dependency, "ok" when it works.

A value is "ok", "skipped: <why>" (nothing to probe; not a failure) or
"error: <what failed>"; the receiver's /healthz and `tfcompat healthcheck`
both judge a set of answers with `healthy`.
"""

from __future__ import annotations

OK = "ok"


def healthy(checks: dict[str, str]) -> bool:
    return all(value == OK or value.startswith("skipped") for value in checks.values())
