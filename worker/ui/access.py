"""Who may read the fleet page: a token, or a header an authenticating proxy sets.

The page is off unless `TFCOMPAT_UI_ENABLED`, and `require_access` refuses to turn it
on without `TFCOMPAT_UI_TOKEN` or `TFCOMPAT_UI_TRUSTED_HEADER`: it shows every model
of the fleet, which no anonymous visitor should read. A token arrives as
`Authorization: Bearer`, or once through the sign-in form, after which the browser
keeps a cookie holding a keyed digest of the token (never the token itself), so the
cookie names no secret and stops working when the token changes.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import Request

from worker.errors import ConfigError
from worker.settings import Settings

COOKIE = "tfcompat_ui"


def require_access(settings: Settings) -> None:
    """ConfigError when the page is enabled with no way to authenticate its readers."""
    if not settings.ui_enabled:
        return
    token = settings.ui_token.get_secret_value() if settings.ui_token else ""
    if not token and not (settings.ui_trusted_header or "").strip():
        raise ConfigError(
            "TFCOMPAT_UI_ENABLED is set but the fleet page has no authentication: set "
            "TFCOMPAT_UI_TOKEN, or TFCOMPAT_UI_TRUSTED_HEADER to the header your "
            "authenticating proxy sets (e.g. X-Forwarded-User)"
        )


def session_value(settings: Settings) -> str | None:
    """The cookie value that stands for the token; None without a token."""
    if settings.ui_token is None or not settings.ui_token.get_secret_value():
        return None
    key = settings.ui_token.get_secret_value().encode()
    return hmac.new(key, b"tfcompat-ui-session", hashlib.sha256).hexdigest()


def token_matches(settings: Settings, given: str) -> bool:
    if settings.ui_token is None or not settings.ui_token.get_secret_value():
        return False
    expected = settings.ui_token.get_secret_value().encode()
    return hmac.compare_digest(given.encode(), expected)


def reader(request: Request, settings: Settings) -> str | None:
    """Who reads the page ("token", or the proxy's user), or None: not authenticated."""
    header = settings.ui_trusted_header
    if header:
        user = request.headers.get(header, "").strip()
        if user:
            return user
    given = request.headers.get("authorization", "")
    if given.startswith("Bearer ") and token_matches(settings, given[len("Bearer ") :]):
        return "token"
    session = session_value(settings)
    cookie = request.cookies.get(COOKIE, "")
    if session is not None and cookie and hmac.compare_digest(cookie, session):
        return "token"
    return None
