"""Who may read the fleet page: a token, a session signed in with it, or a header an
authenticating proxy sets.

The page is off unless `TFCOMPAT_UI_ENABLED`, and `require_access` refuses to turn it
on without `TFCOMPAT_UI_TOKEN` or `TFCOMPAT_UI_TRUSTED_HEADER`: it shows every model
of the fleet, which no anonymous visitor should read. The page has a listener of its
own (never the public event listener, which GitHub and MLflow reach), and even there a
trusted user header counts only when the proxy proves itself: the request carries
`X-Tfcompat-Proxy-Secret` equal to `TFCOMPAT_UI_PROXY_SECRET`, or comes from a peer in
`TFCOMPAT_UI_TRUSTED_PROXIES`. A trusted header with neither refuses to start.

A token arrives as `Authorization: Bearer`, or once through the sign-in form, after
which the browser keeps a session cookie: a random session id signed with a key
derived from the token (itsdangerous), with its time of issue. It names no secret,
stops working after `TFCOMPAT_UI_SESSION_TTL` seconds or as soon as the token changes,
and signing out records its id as ended (`Revocations`, in Redis so every replica of
the page and a restart agree) until it would have expired anyway.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from typing import Protocol

from itsdangerous import BadSignature, URLSafeTimedSerializer
from starlette.requests import Request

from worker.errors import ConfigError
from worker.settings import Settings

COOKIE = "tfcompat_ui"
CSRF_COOKIE = "tfcompat_csrf"
PROXY_SECRET_HEADER = "X-Tfcompat-Proxy-Secret"
REVOKED_PREFIX = "tfcompat:ui:signed-out:"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class Revocations(Protocol):
    """Sessions ended by signing out, remembered until they would have expired."""

    def revoke(self, session_id: str, ttl: int) -> None: ...

    def revoked(self, session_id: str) -> bool: ...


class RedisRevocations:
    """`Revocations` in Redis: one key per ended session, expiring with it."""

    def __init__(self, client: object) -> None:
        self._redis = client

    def revoke(self, session_id: str, ttl: int) -> None:
        self._redis.set(REVOKED_PREFIX + session_id, b"1", ex=max(1, ttl))  # type: ignore[attr-defined]

    def revoked(self, session_id: str) -> bool:
        return bool(self._redis.exists(REVOKED_PREFIX + session_id))  # type: ignore[attr-defined]


class MemoryRevocations:
    """`Revocations` of one process (unit tests)."""

    def __init__(self) -> None:
        self.ended: set[str] = set()

    def revoke(self, session_id: str, ttl: int) -> None:
        self.ended.add(session_id)

    def revoked(self, session_id: str) -> bool:
        return session_id in self.ended


def trusted_proxies(settings: Settings) -> tuple[Network, ...]:
    """TFCOMPAT_UI_TRUSTED_PROXIES parsed; ConfigError naming an entry that is not an
    address or a network."""
    networks = []
    for part in (p.strip() for p in settings.ui_trusted_proxies.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ConfigError(
                f"TFCOMPAT_UI_TRUSTED_PROXIES: {part!r} is not an IP address or CIDR"
            ) from None
    return tuple(networks)


def _secret(value: object) -> str:
    getter = getattr(value, "get_secret_value", None)
    return str(getter()) if getter is not None else ""


def require_access(settings: Settings) -> None:
    """ConfigError when the page is enabled with no way to authenticate its readers, or
    with a trusted header that anyone could send (no proxy secret, no proxy address)."""
    if not settings.ui_enabled:
        return
    token = _secret(settings.ui_token)
    header = (settings.ui_trusted_header or "").strip()
    if not token and not header:
        raise ConfigError(
            "TFCOMPAT_UI_ENABLED is set but the fleet page has no authentication: set "
            "TFCOMPAT_UI_TOKEN, or TFCOMPAT_UI_TRUSTED_HEADER to the header your "
            "authenticating proxy sets (e.g. X-Forwarded-User)"
        )
    if header and not _secret(settings.ui_proxy_secret) and not trusted_proxies(settings):
        raise ConfigError(
            f"TFCOMPAT_UI_TRUSTED_HEADER ({header}) is set but nothing proves a request came "
            "through the proxy: set TFCOMPAT_UI_PROXY_SECRET (the proxy sends it in "
            f"{PROXY_SECRET_HEADER}) or TFCOMPAT_UI_TRUSTED_PROXIES (the proxy's addresses)"
        )


@dataclass(frozen=True)
class Reader:
    """Who reads the page: `name` ("token" or the proxy's user) and, for a signed-in
    browser, its session id (what signing out ends)."""

    name: str
    session_id: str | None = None


class PageAccess:
    """The page's authentication decisions, from the settings and the ended sessions."""

    def __init__(self, settings: Settings, revocations: Revocations) -> None:
        require_access(settings)
        self.settings = settings
        self.revocations = revocations
        self.ttl = settings.ui_session_ttl
        self._proxies = trusted_proxies(settings)
        self._token = _secret(settings.ui_token)
        self._proxy_secret = _secret(settings.ui_proxy_secret)
        # Sessions are signed with a key derived from the token, so a new token ends
        # every session. Without a token (proxy only) CSRF tokens are signed with one
        # derived from the proxy secret (every replica agrees), else of this process.
        seed = (self._token or self._proxy_secret).encode() or secrets.token_bytes(32)
        self._key = hmac.new(seed, b"tfcompat-ui-session-key", hashlib.sha256).hexdigest()
        self._sessions = URLSafeTimedSerializer(self._key, salt="tfcompat-ui-session")
        self._csrf = URLSafeTimedSerializer(self._key, salt="tfcompat-ui-csrf")

    @property
    def signs_in(self) -> bool:
        """Whether the page has a sign-in form (a token is set)."""
        return bool(self._token)

    # --- the proxy ------------------------------------------------------------------------

    def from_proxy(self, request: Request) -> bool:
        """The request proves it came through the authenticating proxy."""
        given = request.headers.get(PROXY_SECRET_HEADER, "")
        if self._proxy_secret and given:
            return hmac.compare_digest(given.encode(), self._proxy_secret.encode())
        peer = request.client.host if request.client else ""
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self._proxies)

    # --- tokens and sessions --------------------------------------------------------------

    def token_matches(self, given: str) -> bool:
        if not self._token:
            return False
        return hmac.compare_digest(given.encode(), self._token.encode())

    def new_session(self) -> tuple[str, str]:
        """(session id, cookie value) of a session that starts now."""
        session_id = secrets.token_urlsafe(18)
        return session_id, self._sessions.dumps({"sid": session_id})

    def session_of(self, cookie: str) -> str | None:
        """The session id a cookie holds while it is signed with the current key, younger
        than the session TTL and not signed out; None otherwise."""
        if not cookie or not self._token:
            return None
        try:
            data = self._sessions.loads(cookie, max_age=self.ttl)
        except BadSignature:  # SignatureExpired is one
            return None
        session_id = data.get("sid") if isinstance(data, dict) else None
        if not isinstance(session_id, str) or self.revocations.revoked(session_id):
            return None
        return session_id

    def end_session(self, session_id: str) -> None:
        self.revocations.revoke(session_id, self.ttl)

    def reader(self, request: Request) -> Reader | None:
        """Who reads the page, or None: not authenticated."""
        header = (self.settings.ui_trusted_header or "").strip()
        if header and self.from_proxy(request):
            user = request.headers.get(header, "").strip()
            if user:
                return Reader(user)
        given = request.headers.get("authorization", "")
        if given.startswith("Bearer ") and self.token_matches(given[len("Bearer ") :]):
            return Reader("token")
        session_id = self.session_of(request.cookies.get(COOKIE, ""))
        if session_id is not None:
            return Reader("token", session_id)
        return None

    # --- forms ----------------------------------------------------------------------------

    def csrf_pair(self, request: Request) -> tuple[str, str | None]:
        """(the token a form carries, the cookie value to set or None to keep the one the
        browser has). Double submit: a form is accepted only with the value of the
        browser's own CSRF cookie, which another site can neither read nor (signed with
        our key) forge."""
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if cookie and self._csrf_valid(cookie):
            return cookie, None
        fresh = self._csrf.dumps(secrets.token_urlsafe(18))
        return fresh, fresh

    def _csrf_valid(self, value: str) -> bool:
        try:
            self._csrf.loads(value)
        except BadSignature:
            return False
        return True

    def csrf_ok(self, request: Request, submitted: str) -> bool:
        cookie = request.cookies.get(CSRF_COOKIE, "")
        if not cookie or not submitted or not self._csrf_valid(cookie):
            return False
        return hmac.compare_digest(cookie.encode(), submitted.encode())

    def secure(self, request: Request) -> bool:
        """Whether cookies are marked Secure: over https, or when a setting says so."""
        return request.url.scheme == "https" or self.settings.ui_secure_cookies
