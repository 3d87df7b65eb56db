"""Amazon SNS HTTP(S) deliveries, verified as AWS documents it, before anything trusts them.

SNS POSTs three kinds of JSON document to a subscribed endpoint (the
`x-amz-sns-message-type` header names the kind): `Notification`,
`SubscriptionConfirmation` and `UnsubscribeConfirmation`. Anyone can POST the
same shape, so a receiver must check, in this order, that the signature version
is one SNS uses, that the signing certificate lives on an SNS host (before
fetching it, so a forged message cannot make us fetch from its own server), that
the topic is one we subscribed to, that the RSA signature over the canonical
string verifies against that certificate, and that the message is fresh.

Everything here is pure except `fetch_certificate` (one HTTPS GET) and the small
`CertificateCache` in front of it; the HTTP route that receives the POST, answers
it and GETs a confirmation URL lives at the edge. Every refusal is an
`SnsRejected` with a one-line reason; `CertificateUnavailable` is the one that is
transient.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.client import HTTPException
from typing import Any, Final, Literal

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from worker.errors import CertificateUnavailable, SnsRejected

MessageType = Literal["Notification", "SubscriptionConfirmation", "UnsubscribeConfirmation"]

DEFAULT_CERT_URL_PATTERN: Final = r"^https://sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[^?#]*\.pem$"
"""Where SNS publishes its signing certificates (commercial, GovCloud and China
regions). A regex over the whole URL, matched with `re.fullmatch`."""

DEFAULT_SUBSCRIBE_URL_PATTERN: Final = r"^https://sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/"
"""Where a SubscribeURL may point: the regional SNS API endpoint, over HTTPS."""

MAX_AGE: Final = timedelta(hours=1)
"""Replay window: SNS retries a delivery with its original Timestamp, and its
default HTTP(S) retry policy gives up well within the hour."""

MAX_CLOCK_SKEW: Final = timedelta(minutes=5)
"""How far in the future a Timestamp may be before our clock is not the excuse."""

MAX_CERTIFICATE_BYTES: Final = 64 * 1024

_TYPES: Final[dict[str, MessageType]] = {
    "Notification": "Notification",
    "SubscriptionConfirmation": "SubscriptionConfirmation",
    "UnsubscribeConfirmation": "UnsubscribeConfirmation",
}
_HASHES: Final[dict[str, Callable[[], hashes.HashAlgorithm]]] = {
    "1": hashes.SHA1,  # SHA1withRSA, the topic default
    "2": hashes.SHA256,  # SHA256withRSA, when the topic sets SignatureVersion 2
}
# (JSON name, attribute) pairs that every document carries, then the extra ones per kind.
_COMMON: Final = (
    ("Type", "type"),
    ("MessageId", "message_id"),
    ("TopicArn", "topic_arn"),
    ("Message", "message"),
    ("Timestamp", "timestamp"),
    ("SignatureVersion", "signature_version"),
    ("Signature", "signature"),
    ("SigningCertURL", "signing_cert_url"),
)
_CONFIRMATION: Final = (("Token", "token"), ("SubscribeURL", "subscribe_url"))
_OPTIONAL: Final = (("Subject", "subject"), ("UnsubscribeURL", "unsubscribe_url"))
_MAY_BE_EMPTY: Final = frozenset({"Message", "Subject"})


@dataclass(frozen=True)
class SnsMessage:
    """One SNS HTTP(S) document, its values exactly as sent (they are what was signed).

    Attributes map to the JSON names: type=Type, message_id=MessageId,
    topic_arn=TopicArn, message=Message, timestamp=Timestamp,
    signature_version=SignatureVersion, signature=Signature,
    signing_cert_url=SigningCertURL, subject=Subject, token=Token,
    subscribe_url=SubscribeURL, unsubscribe_url=UnsubscribeURL. `token` and
    `subscribe_url` are set on both confirmations; `subject` only when the
    publisher gave one; `unsubscribe_url` on notifications."""

    type: MessageType
    message_id: str
    topic_arn: str
    message: str
    timestamp: str
    signature_version: str
    signature: str
    signing_cert_url: str
    subject: str | None = None
    token: str | None = None
    subscribe_url: str | None = None
    unsubscribe_url: str | None = None

    @property
    def is_notification(self) -> bool:
        return self.type == "Notification"


def _field(doc: dict[str, Any], name: str, *, required: bool) -> str | None:
    value = doc.get(name)
    if value is None:
        if required:
            raise SnsRejected(f"missing {name}")
        return None
    if not isinstance(value, str):
        raise SnsRejected(f"{name} is not a string")
    if not value and name not in _MAY_BE_EMPTY:
        raise SnsRejected(f"{name} is empty")
    try:
        value.encode("utf-8")  # JSON escapes can smuggle lone surrogates SNS never signs
    except UnicodeEncodeError:
        raise SnsRejected(f"{name} is not valid Unicode") from None
    return value


def parse_sns(body: bytes) -> SnsMessage:
    """The SNS document in a POST body, shape-checked but not yet trusted.

    Guarantees every field the kind requires is a string (`Message` and `Subject`
    may be empty, nothing else may); unknown keys are ignored, as SNS may add
    some. Raises `SnsRejected` for anything else, never another exception."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise SnsRejected(f"body is not JSON ({type(exc).__name__})") from None
    if not isinstance(doc, dict):
        raise SnsRejected("body is not a JSON object")
    kind = doc.get("Type")
    if not isinstance(kind, str) or kind not in _TYPES:
        raise SnsRejected(f"Type {str(kind)[:40]!r} is not an SNS message type")
    fields: dict[str, Any] = {"type": _TYPES[kind]}
    needed = _COMMON[1:] + (_CONFIRMATION if kind != "Notification" else ())
    for name, attr in needed:
        fields[attr] = _field(doc, name, required=True)
    for name, attr in _OPTIONAL + (_CONFIRMATION if kind == "Notification" else ()):
        fields[attr] = _field(doc, name, required=False)
    return SnsMessage(**fields)


def string_to_sign(msg: SnsMessage) -> bytes:
    """The canonical bytes SNS signs: "Name\\nvalue\\n" per signed field, in byte order
    of the names, UTF-8.

    A Notification signs Message, MessageId, Subject (only when present),
    Timestamp, TopicArn and Type; both confirmations sign Message, MessageId,
    SubscribeURL, Timestamp, Token, TopicArn and Type."""
    pairs: list[tuple[str, str | None]] = [("Message", msg.message), ("MessageId", msg.message_id)]
    if msg.is_notification:
        if msg.subject is not None:
            pairs.append(("Subject", msg.subject))
    else:
        pairs.append(("SubscribeURL", msg.subscribe_url))
    pairs.append(("Timestamp", msg.timestamp))
    if not msg.is_notification:
        pairs.append(("Token", msg.token))
    pairs += [("TopicArn", msg.topic_arn), ("Type", msg.type)]
    text = "".join(f"{name}\n{value}\n" for name, value in pairs if value is not None)
    return text.encode("utf-8")


def _url_allowed(url: str, pattern: str, *, whole: bool) -> bool:
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        return False  # `$` would forgive a trailing newline; URLs never hold controls or spaces
    found = re.fullmatch(pattern, url) if whole else re.match(pattern, url)
    return found is not None


def _public_key(pem: bytes) -> rsa.RSAPublicKey:
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError:
        raise CertificateUnavailable("signing certificate is not a PEM X.509 certificate") from None
    key = cert.public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise SnsRejected("signing certificate does not hold an RSA key")
    return key


def _timestamp(value: str) -> datetime:
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise SnsRejected(f"Timestamp {value[:40]!r} is not ISO 8601") from None
    if when.tzinfo is None:
        raise SnsRejected(f"Timestamp {value[:40]!r} has no time zone")
    return when


def verify_sns(
    msg: SnsMessage,
    *,
    fetch_cert: Callable[[str], bytes],
    cert_url_pattern: str,
    topic_arns: Sequence[str],
    now: datetime | None = None,
) -> None:
    """Returns only if `msg` is a genuine, fresh SNS message for one of `topic_arns`.

    Checks, stopping at the first failure with `SnsRejected`: SignatureVersion is
    "1" (RSA-SHA1) or "2" (RSA-SHA256); SigningCertURL fully matches
    `cert_url_pattern` (production: `DEFAULT_CERT_URL_PATTERN`); TopicArn is in
    `topic_arns` unless that is empty; the PKCS#1 v1.5 signature over
    `string_to_sign(msg)` verifies against the certificate's key; Timestamp is
    at most `MAX_AGE` old and at most `MAX_CLOCK_SKEW` ahead of `now` (default:
    the current UTC time; a naive `now` is taken as UTC). `fetch_cert` is called
    only after the URL and topic checks pass, so a forged message costs no
    request; a `CertificateCache` is the usual one, and its failures surface as
    `CertificateUnavailable`.

    The certificate is trusted because HTTPS fetched it from an SNS host, as the
    AWS SDK validators do; its chain and validity dates are not checked here."""
    algorithm = _HASHES.get(msg.signature_version)
    if algorithm is None:
        raise SnsRejected(f"SignatureVersion {msg.signature_version[:10]!r} is not 1 or 2")
    if not _url_allowed(msg.signing_cert_url, cert_url_pattern, whole=True):
        raise SnsRejected(f"SigningCertURL {msg.signing_cert_url[:200]!r} is not an SNS host")
    if topic_arns and msg.topic_arn not in topic_arns:
        raise SnsRejected(f"TopicArn {msg.topic_arn[:200]!r} is not one we subscribe to")
    try:
        signature = base64.b64decode(msg.signature, validate=True)
    except (binascii.Error, ValueError):
        raise SnsRejected("Signature is not base64") from None
    key = _public_key(fetch_cert(msg.signing_cert_url))
    try:
        key.verify(signature, string_to_sign(msg), padding.PKCS1v15(), algorithm())
    except InvalidSignature:
        raise SnsRejected(f"signature does not verify (MessageId {msg.message_id[:80]})") from None
    when = _timestamp(msg.timestamp)
    current = now or datetime.now(UTC)
    if current.tzinfo is None:
        current = current.replace(tzinfo=UTC)
    if current - when > MAX_AGE:
        raise SnsRejected(f"Timestamp {msg.timestamp} is older than {MAX_AGE}")
    if when - current > MAX_CLOCK_SKEW:
        raise SnsRejected(f"Timestamp {msg.timestamp} is in the future")


def confirmation_url(
    msg: SnsMessage, subscribe_url_pattern: str = DEFAULT_SUBSCRIBE_URL_PATTERN
) -> str:
    """The URL to GET to confirm a subscription; call it only after `verify_sns` passed.

    Only a SubscriptionConfirmation is confirmed: an UnsubscribeConfirmation's
    SubscribeURL would re-subscribe us, which is a person's decision, not the
    receiver's. The URL must match `subscribe_url_pattern` (from its start), so
    even a correctly signed document cannot point our GET anywhere else."""
    if msg.type != "SubscriptionConfirmation":
        raise SnsRejected(f"a {msg.type} has no subscription to confirm")
    url = msg.subscribe_url or ""
    if not _url_allowed(url, subscribe_url_pattern, whole=False):
        raise SnsRejected(f"SubscribeURL {url[:200]!r} is not an SNS endpoint")
    return url


def fetch_certificate(url: str, *, timeout: float = 5.0) -> bytes:
    """GET a signing certificate (at most `MAX_CERTIFICATE_BYTES`); the one real fetch.

    Raises `CertificateUnavailable` for any network, HTTP or size failure."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # URL vetted by verify_sns
            body: bytes = response.read(MAX_CERTIFICATE_BYTES + 1)
    except (OSError, HTTPException, ValueError) as exc:
        raise CertificateUnavailable(f"cannot fetch {url[:200]}: {exc}") from None
    if len(body) > MAX_CERTIFICATE_BYTES:
        raise CertificateUnavailable(f"{url[:200]} is larger than {MAX_CERTIFICATE_BYTES} bytes")
    return body


class CertificateCache:
    """Signing certificates by URL, so a burst of notifications costs one fetch.

    Callable as `verify_sns`'s `fetch_cert`. SNS rotates certificates by
    publishing them at new URLs, so an entry never goes stale; the cache holds
    the `max_entries` most recently used and drops the oldest. Only bytes that
    parse as a PEM certificate are kept; a failed fetch is never cached and
    raises `CertificateUnavailable` (transient: the caller answers 503 so SNS
    retries). The fetch runs under the cache's lock, so concurrent misses for
    one URL wait for the first instead of fetching again.

    `fetch` defaults to `fetch_certificate`; another one should raise
    `OSError` or `SnsRejected` on failure."""

    def __init__(
        self,
        fetch: Callable[[str], bytes] = fetch_certificate,
        *,
        max_entries: int = 16,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._fetch = fetch
        self._max_entries = max_entries
        self._entries: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, url: str) -> bytes:
        with self._lock:
            pem = self._entries.get(url)
            if pem is not None:
                self._entries.move_to_end(url)
                return pem
            try:
                pem = self._fetch(url)
            except SnsRejected:
                raise
            except (OSError, HTTPException, ValueError) as exc:
                raise CertificateUnavailable(f"cannot fetch {url[:200]}: {exc}") from None
            _public_key(pem)  # refuse to cache what verify_sns could not use
            self._entries[url] = pem
            if len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
            return pem

    def __contains__(self, url: object) -> bool:
        with self._lock:
            return url in self._entries
