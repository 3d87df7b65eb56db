"""SNS delivery verification against real RSA keys and X.509 certificates.

The certificate is served by a real HTTP server on 127.0.0.1 and fetched with
urllib through `CertificateCache`; messages are signed here over a canonical
string this file builds from AWS's documented field lists, not with the code
under test. Message shapes and values follow AWS's HTTP/HTTPS JSON examples.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from worker.errors import CertificateUnavailable, SnsRejected, TransientError
from worker.ingest.sns import (
    DEFAULT_CERT_URL_PATTERN,
    DEFAULT_SUBSCRIBE_URL_PATTERN,
    CertificateCache,
    SnsMessage,
    confirmation_url,
    fetch_certificate,
    parse_sns,
    string_to_sign,
    verify_sns,
)

NOW = datetime(2024, 5, 2, 0, 54, 6, tzinfo=UTC)
TOPIC = "arn:aws:sns:us-west-2:123456789012:MyTopic"
CERT_PATH = "/SimpleNotificationService-f3ecfb7224c7233fe7bb5f59f96de52f.pem"
TOKEN = "2336412f37fb687f5d51e6e241d164b0533302ec696efc8f113cd2252ce8a925"

# The fields each kind signs, in byte order of their names (AWS "Verifying the
# signatures of Amazon SNS messages"); absent optional fields are skipped.
SIGNED = {
    "Notification": ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"),
    "SubscriptionConfirmation": (
        "Message",
        "MessageId",
        "SubscribeURL",
        "Timestamp",
        "Token",
        "TopicArn",
        "Type",
    ),
    "UnsubscribeConfirmation": (
        "Message",
        "MessageId",
        "SubscribeURL",
        "Timestamp",
        "Token",
        "TopicArn",
        "Type",
    ),
}


def stamp(when: datetime) -> str:
    """SNS's Timestamp form: "2012-05-02T00:54:06.655Z"."""
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def notification(cert_url: str, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": TOPIC,
        "Subject": "My First Message",
        "Message": "Hello world!",
        "Timestamp": stamp(NOW - timedelta(minutes=1)),
        "SignatureVersion": "1",
        "Signature": "c2lnbmF0dXJl",
        "SigningCertURL": cert_url,
        "UnsubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=Unsubscribe"
        f"&SubscriptionArn={TOPIC}:c9135db0-26c4-47ec-8998-413945fb5a96",
    }
    doc.update(fields)
    return doc


def subscription_confirmation(cert_url: str, **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "Type": "SubscriptionConfirmation",
        "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
        "Token": TOKEN,
        "TopicArn": TOPIC,
        "Message": f"You have chosen to subscribe to the topic {TOPIC}.\n"
        "To confirm the subscription, visit the SubscribeURL included in this message.",
        "SubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription"
        f"&TopicArn={TOPIC}&Token={TOKEN}",
        "Timestamp": stamp(NOW - timedelta(minutes=1)),
        "SignatureVersion": "1",
        "Signature": "c2lnbmF0dXJl",
        "SigningCertURL": cert_url,
    }
    doc.update(fields)
    return doc


def unsubscribe_confirmation(cert_url: str, **fields: Any) -> dict[str, Any]:
    doc = subscription_confirmation(
        cert_url,
        Type="UnsubscribeConfirmation",
        MessageId="47138184-6831-46b8-8f7c-afc488602d7d",
        Message=f"You have chosen to deactivate subscription {TOPIC}:"
        "2bcfbf39-05c3-41de-beaa-fcfcc21c8f55.\nTo cancel this operation and restore the "
        "subscription, visit the SubscribeURL included in this message.",
    )
    doc.update(fields)
    return doc


def canonical(doc: dict[str, Any]) -> bytes:
    return "".join(f"{k}\n{doc[k]}\n" for k in SIGNED[doc["Type"]] if k in doc).encode()


class Signer:
    """An RSA key and a self-signed certificate standing in for SNS's."""

    def __init__(self, name: str) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW - timedelta(days=1))
            .not_valid_after(NOW + timedelta(days=365))
            .sign(self.key, hashes.SHA256())
        )
        self.pem = cert.public_bytes(serialization.Encoding.PEM)

    def sign(self, doc: dict[str, Any], version: str = "1") -> dict[str, Any]:
        algorithm = hashes.SHA1() if version == "1" else hashes.SHA256()
        raw = self.key.sign(canonical(doc), padding.PKCS1v15(), algorithm)
        return {**doc, "SignatureVersion": version, "Signature": base64.b64encode(raw).decode()}


@pytest.fixture(scope="session")
def signer() -> Signer:
    return Signer("sns.us-west-2.amazonaws.com")


@pytest.fixture(scope="session")
def impostor() -> Signer:
    return Signer("sns.us-west-2.amazonaws.com")


class CertServer:
    """Serves `routes` over HTTP on 127.0.0.1 and records every path asked for."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes] = {}
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.requests.append(self.path)
                body = outer.routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.pattern = "^" + re.escape(self.base) + r"/[^?#]*\.pem$"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="session")
def running_server() -> Iterator[CertServer]:
    server = CertServer()
    yield server
    server.close()


@pytest.fixture
def server(running_server: CertServer, signer: Signer) -> CertServer:
    running_server.routes = {CERT_PATH: signer.pem}
    running_server.requests.clear()
    return running_server


def body(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=2).encode()


def verify(
    doc: dict[str, Any],
    server: CertServer,
    cache: CertificateCache | None = None,
    topics: tuple[str, ...] = (TOPIC,),
    now: datetime = NOW,
) -> SnsMessage:
    msg = parse_sns(body(doc))
    verify_sns(
        msg,
        fetch_cert=cache if cache is not None else CertificateCache(),
        cert_url_pattern=server.pattern,
        topic_arns=topics,
        now=now,
    )
    return msg


# --- genuine messages of every kind, both signature versions ---


@pytest.mark.parametrize("version", ["1", "2"])
def test_signed_notification_verifies(server: CertServer, signer: Signer, version: str) -> None:
    msg = verify(signer.sign(notification(server.base + CERT_PATH), version), server)
    assert msg.type == "Notification"
    assert msg.subject == "My First Message"
    assert msg.message == "Hello world!"
    assert server.requests == [CERT_PATH]


@pytest.mark.parametrize("version", ["1", "2"])
def test_notification_without_subject_verifies(
    server: CertServer, signer: Signer, version: str
) -> None:
    doc = notification(server.base + CERT_PATH)
    del doc["Subject"]
    msg = verify(signer.sign(doc, version), server)
    assert msg.subject is None


@pytest.mark.parametrize("version", ["1", "2"])
def test_subscription_confirmation_verifies_and_yields_its_url(
    server: CertServer, signer: Signer, version: str
) -> None:
    doc = signer.sign(subscription_confirmation(server.base + CERT_PATH), version)
    msg = verify(doc, server)
    assert msg.token == TOKEN
    assert confirmation_url(msg) == doc["SubscribeURL"]


@pytest.mark.parametrize("version", ["1", "2"])
def test_unsubscribe_confirmation_verifies(
    server: CertServer, signer: Signer, version: str
) -> None:
    msg = verify(signer.sign(unsubscribe_confirmation(server.base + CERT_PATH), version), server)
    assert msg.type == "UnsubscribeConfirmation"


def test_empty_topic_allow_list_accepts_any_topic(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH, TopicArn=TOPIC + "-other"))
    verify(doc, server, topics=())


def test_string_to_sign_of_a_notification() -> None:
    msg = parse_sns(body(notification(SNS_CERT)))
    assert string_to_sign(msg) == (
        b"Message\nHello world!\n"
        b"MessageId\n22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324\n"
        b"Subject\nMy First Message\n"
        b"Timestamp\n2024-05-02T00:53:06.000Z\n"
        b"TopicArn\narn:aws:sns:us-west-2:123456789012:MyTopic\n"
        b"Type\nNotification\n"
    )


def test_string_to_sign_of_a_confirmation_ignores_subject() -> None:
    msg = parse_sns(body(subscription_confirmation(SNS_CERT, Subject="not signed")))
    assert string_to_sign(msg) == (
        b"Message\nYou have chosen to subscribe to the topic "
        b"arn:aws:sns:us-west-2:123456789012:MyTopic.\n"
        b"To confirm the subscription, visit the SubscribeURL included in this message.\n"
        b"MessageId\n165545c9-2a5c-472c-8df2-7ff2be2b3b1b\n"
        b"SubscribeURL\nhttps://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription"
        b"&TopicArn=arn:aws:sns:us-west-2:123456789012:MyTopic"
        b"&Token=2336412f37fb687f5d51e6e241d164b0533302ec696efc8f113cd2252ce8a925\n"
        b"Timestamp\n2024-05-02T00:53:06.000Z\n"
        b"Token\n2336412f37fb687f5d51e6e241d164b0533302ec696efc8f113cd2252ce8a925\n"
        b"TopicArn\narn:aws:sns:us-west-2:123456789012:MyTopic\n"
        b"Type\nSubscriptionConfirmation\n"
    )


def test_message_with_escaped_controls_and_unicode_verifies(
    server: CertServer, signer: Signer
) -> None:
    # The JSON escapes (\n, \", \u00e9) are signed in their decoded form, as UTF-8.
    doc = signer.sign(
        notification(server.base + CERT_PATH, Message='{"key": "models/caf\u00e9\n.pb"}'), "2"
    )
    verify(doc, server)


# --- tampering: the signature covers every signed field ---


@pytest.mark.parametrize(
    "change",
    [
        {"Message": "Hello world?"},
        {"Subject": "My Second Message"},
        {"MessageId": "00000000-fdea-4c2c-8f9d-bdfb0c7bf324"},
        {"Timestamp": stamp(NOW - timedelta(seconds=59))},
        {"Type": "SubscriptionConfirmation", "Token": TOKEN, "SubscribeURL": "https://x/"},
    ],
    ids=["message", "subject", "message-id", "timestamp", "type"],
)
def test_tampered_field_is_rejected(
    server: CertServer, signer: Signer, change: dict[str, str]
) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH))
    with pytest.raises(SnsRejected, match="signature does not verify"):
        verify({**doc, **change}, server)


def test_dropped_subject_is_rejected(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH))
    del doc["Subject"]
    with pytest.raises(SnsRejected, match="signature does not verify"):
        verify(doc, server)


def test_added_subject_is_rejected(server: CertServer, signer: Signer) -> None:
    doc = notification(server.base + CERT_PATH)
    del doc["Subject"]
    signed = signer.sign(doc)
    with pytest.raises(SnsRejected, match="signature does not verify"):
        verify({**signed, "Subject": "Injected"}, server)


def test_tampered_subscribe_url_is_rejected(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(subscription_confirmation(server.base + CERT_PATH))
    forged = {**doc, "SubscribeURL": "https://sns.us-west-2.amazonaws.com/?Action=Other"}
    with pytest.raises(SnsRejected, match="signature does not verify"):
        verify(forged, server)


def test_signature_by_another_key_is_rejected(
    server: CertServer, signer: Signer, impostor: Signer
) -> None:
    with pytest.raises(SnsRejected, match="signature does not verify"):
        verify(impostor.sign(notification(server.base + CERT_PATH)), server)


def test_sha1_signature_claimed_as_version_2_is_rejected(
    server: CertServer, signer: Signer
) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH), "1")
    with pytest.raises(SnsRejected, match="signature does not verify"):
        verify({**doc, "SignatureVersion": "2"}, server)


def test_signature_that_is_not_base64_is_rejected(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH))
    with pytest.raises(SnsRejected, match="base64"):
        verify({**doc, "Signature": "not*base64!"}, server)


# --- checks that stop a forgery before any certificate fetch ---


@pytest.mark.parametrize("version", ["0", "3", "1.0", "SHA256"])
def test_unknown_signature_version_is_rejected_without_fetching(
    server: CertServer, signer: Signer, version: str
) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH))
    with pytest.raises(SnsRejected, match="SignatureVersion"):
        verify({**doc, "SignatureVersion": version}, server)
    assert server.requests == []


def test_cert_url_on_another_host_is_rejected_without_fetching(
    server: CertServer, signer: Signer
) -> None:
    # localhost reaches the very same server: a fetch would show up in its log.
    doc = signer.sign(notification(f"http://localhost:{server.port}{CERT_PATH}"))
    with pytest.raises(SnsRejected, match="SigningCertURL"):
        verify(doc, server)
    assert server.requests == []


def test_topic_not_allowed_is_rejected_without_fetching(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH, TopicArn=TOPIC + "-other"))
    with pytest.raises(SnsRejected, match="TopicArn"):
        verify(doc, server)
    assert server.requests == []


def test_checks_run_in_documented_order(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH))
    foreign = {"SigningCertURL": f"http://localhost:{server.port}{CERT_PATH}"}
    other_topic = {"TopicArn": TOPIC + "-other"}
    stale = {"Timestamp": stamp(NOW - timedelta(hours=2)), "Message": "tampered"}
    with pytest.raises(SnsRejected, match="SignatureVersion"):
        verify({**doc, **foreign, **other_topic, "SignatureVersion": "9"}, server)
    with pytest.raises(SnsRejected, match="SigningCertURL"):
        verify({**doc, **foreign, **other_topic}, server)
    with pytest.raises(SnsRejected, match="TopicArn"):
        verify({**doc, **other_topic, **stale}, server)
    with pytest.raises(SnsRejected, match="signature does not verify"):
        verify({**doc, **stale}, server)


# --- replay window ---


@pytest.mark.parametrize(
    ("age", "accepted"),
    [
        (timedelta(minutes=59), True),
        (timedelta(hours=1), True),
        (timedelta(hours=1, seconds=1), False),
        (timedelta(days=3), False),
        (timedelta(minutes=-4), True),  # a sender clock slightly ahead of ours
        (timedelta(minutes=-6), False),
    ],
)
def test_timestamp_window(
    server: CertServer, signer: Signer, age: timedelta, accepted: bool
) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH, Timestamp=stamp(NOW - age)), "2")
    if accepted:
        verify(doc, server)
    else:
        with pytest.raises(SnsRejected, match="Timestamp"):
            verify(doc, server)


def test_timestamp_that_is_not_a_time_is_rejected(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH, Timestamp="yesterday"))
    with pytest.raises(SnsRejected, match="ISO 8601"):
        verify(doc, server)


def test_default_now_is_the_current_time(server: CertServer, signer: Signer) -> None:
    doc = signer.sign(notification(server.base + CERT_PATH))  # signed at NOW, long past
    msg = parse_sns(body(doc))
    with pytest.raises(SnsRejected, match="older than"):
        verify_sns(
            msg, fetch_cert=CertificateCache(), cert_url_pattern=server.pattern, topic_arns=()
        )


# --- the production URL patterns ---

SNS_CERT = "https://sns.us-west-2.amazonaws.com/SimpleNotificationService-f3ecfb72.pem"


@pytest.mark.parametrize(
    ("url", "accepted"),
    [
        # genuine SNS certificate hosts: commercial, GovCloud, China
        (SNS_CERT, True),
        ("https://sns.us-gov-west-1.amazonaws.com/SimpleNotificationService-a.pem", True),
        ("https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-a.pem", True),
        # wrong scheme, or another host dressed up as SNS
        ("http://sns.us-west-2.amazonaws.com/SimpleNotificationService-a.pem", False),
        ("https://sns.us-west-2.amazonaws.com.evil.example/a.pem", False),
        ("https://sns.us-west-2.amazonaws.com@evil.example/a.pem", False),
        ("https://sns.us-west-2.amazonaws.com:443@evil.example/a.pem", False),
        ("https://sns.evil.example/a.pem", False),
        ("https://evil.example/sns.us-west-2.amazonaws.com/a.pem", False),
        ("https://my-bucket.s3.amazonaws.com/a.pem", False),
        ("https://sns.us-west-2.amazonaws.com.cn.evil.example/a.pem", False),
        # not a .pem path, or one smuggled past a query, fragment or newline
        ("https://sns.us-west-2.amazonaws.com/a.txt", False),
        ("https://sns.us-west-2.amazonaws.com/a?x=.pem", False),
        ("https://sns.us-west-2.amazonaws.com/a#.pem", False),
        (SNS_CERT + "\n", False),
        (SNS_CERT.replace("amazonaws.com/", "amazonaws.com/ "), False),
    ],
)
def test_default_cert_url_pattern(signer: Signer, url: str, accepted: bool) -> None:
    fetched: list[str] = []

    def fetch(asked: str) -> bytes:
        fetched.append(asked)
        return signer.pem

    def check() -> None:
        msg = parse_sns(body(signer.sign(notification(url), "2")))
        verify_sns(
            msg,
            fetch_cert=fetch,
            cert_url_pattern=DEFAULT_CERT_URL_PATTERN,
            topic_arns=[TOPIC],
            now=NOW,
        )

    if accepted:
        check()
        assert fetched == [url]
    else:
        with pytest.raises(SnsRejected, match="SigningCertURL"):
            check()
        assert fetched == []


def confirmation(**fields: Any) -> SnsMessage:
    return dataclasses.replace(parse_sns(body(subscription_confirmation(SNS_CERT))), **fields)


@pytest.mark.parametrize(
    ("url", "accepted"),
    [
        # the regional SNS API endpoint over HTTPS
        ("https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&Token=t", True),
        ("https://sns.cn-north-1.amazonaws.com.cn/?Action=ConfirmSubscription&Token=t", True),
        # anything else a signed document could try to make us GET
        ("http://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription", False),
        ("https://sns.us-west-2.amazonaws.com.evil.example/", False),
        ("https://sns.us-west-2.amazonaws.com@evil.example/", False),
        ("https://evil.example/?https://sns.us-west-2.amazonaws.com/", False),
        ("https://169.254.169.254/latest/meta-data/", False),
        ("https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription\r\nX: y", False),
    ],
)
def test_confirmation_url_pattern(url: str, accepted: bool) -> None:
    msg = confirmation(subscribe_url=url)
    if accepted:
        assert confirmation_url(msg, DEFAULT_SUBSCRIBE_URL_PATTERN) == url
    else:
        with pytest.raises(SnsRejected, match="SubscribeURL"):
            confirmation_url(msg, DEFAULT_SUBSCRIBE_URL_PATTERN)


@pytest.mark.parametrize("kind", ["Notification", "UnsubscribeConfirmation"])
def test_only_subscription_confirmations_are_confirmed(kind: str) -> None:
    with pytest.raises(SnsRejected, match="no subscription to confirm"):
        confirmation_url(confirmation(type=kind))


# --- the certificate cache ---


def test_burst_of_notifications_costs_one_fetch(server: CertServer, signer: Signer) -> None:
    cache = CertificateCache()
    for n in range(20):
        doc = notification(server.base + CERT_PATH, MessageId=f"message-{n}")
        verify(signer.sign(doc, "2"), server, cache)
    assert server.requests == [CERT_PATH]


def test_fetch_failure_is_transient_and_not_cached(server: CertServer, signer: Signer) -> None:
    cache = CertificateCache()
    doc = signer.sign(notification(server.base + "/missing.pem"))
    for _ in range(2):
        with pytest.raises(CertificateUnavailable, match="404") as caught:
            verify(doc, server, cache)
        assert isinstance(caught.value, TransientError)
    assert server.requests == ["/missing.pem", "/missing.pem"]
    server.routes["/missing.pem"] = signer.pem
    verify(doc, server, cache)


def test_unreachable_cert_host_is_transient() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(CertificateUnavailable):
        CertificateCache()(f"http://127.0.0.1:{port}/cert.pem")


def test_body_that_is_not_a_certificate_is_not_cached(server: CertServer) -> None:
    cache = CertificateCache()
    server.routes["/garbage.pem"] = b"<html>Service Unavailable</html>"
    for _ in range(2):
        with pytest.raises(CertificateUnavailable, match="PEM"):
            cache(server.base + "/garbage.pem")
    assert server.base + "/garbage.pem" not in cache
    assert server.requests == ["/garbage.pem", "/garbage.pem"]


def test_oversized_certificate_is_refused(server: CertServer) -> None:
    server.routes["/huge.pem"] = b"A" * (64 * 1024 + 1)
    with pytest.raises(CertificateUnavailable, match="larger"):
        fetch_certificate(server.base + "/huge.pem")


def test_cache_keeps_the_most_recently_used(server: CertServer, signer: Signer) -> None:
    cache = CertificateCache(max_entries=2)
    for name in ("a", "b", "c"):
        server.routes[f"/{name}.pem"] = signer.pem
    for name in ("a", "b", "a", "c", "a", "b"):
        cache(f"{server.base}/{name}.pem")
    # a stays (used again before c arrived); b was evicted by c and fetched anew
    assert server.requests == ["/a.pem", "/b.pem", "/c.pem", "/b.pem"]
    assert [f"{server.base}/{n}.pem" in cache for n in "abc"] == [True, True, False]


def test_fetchers_own_rejection_passes_through() -> None:
    def fetch(url: str) -> bytes:
        raise SnsRejected("refused by policy")

    with pytest.raises(SnsRejected, match="refused by policy"):
        CertificateCache(fetch)("https://sns.us-west-2.amazonaws.com/a.pem")


# --- parsing: anything that is not an SNS document ---


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"not json", b"\xff\xfe\x00\xd8", b"[]", b'"Notification"', b"null", b"[" * 5000],
    ids=["empty", "truncated", "text", "bad-utf", "array", "string", "null", "deep"],
)
def test_malformed_json_is_rejected(raw: bytes) -> None:
    with pytest.raises(SnsRejected):
        parse_sns(raw)


NOTIFICATION_REQUIRED = [
    "Type",
    "MessageId",
    "TopicArn",
    "Message",
    "Timestamp",
    "SignatureVersion",
    "Signature",
    "SigningCertURL",
]


@pytest.mark.parametrize("name", NOTIFICATION_REQUIRED)
def test_notification_missing_field_is_rejected(name: str) -> None:
    doc = notification(SNS_CERT, Signature="c2ln")
    del doc[name]
    with pytest.raises(SnsRejected, match=name):
        parse_sns(body(doc))


@pytest.mark.parametrize("name", ["Token", "SubscribeURL", "TopicArn", "Signature"])
@pytest.mark.parametrize("make", [subscription_confirmation, unsubscribe_confirmation])
def test_confirmation_missing_field_is_rejected(
    name: str, make: Callable[..., dict[str, Any]]
) -> None:
    doc = make(SNS_CERT, Signature="c2ln")
    del doc[name]
    with pytest.raises(SnsRejected, match=f"missing {name}"):
        parse_sns(body(doc))


@pytest.mark.parametrize(
    "change",
    [
        {"Type": "Bogus"},
        {"Type": 1},
        {"Message": 5},
        {"Subject": ["a"]},
        {"TopicArn": ""},
        {"Signature": None},
        {"Message": "\ud800"},  # a lone surrogate: json accepts the escape, UTF-8 cannot hold it
    ],
)
def test_wrongly_typed_field_is_rejected(change: dict[str, Any]) -> None:
    with pytest.raises(SnsRejected):
        parse_sns(body({**notification(SNS_CERT, Signature="c2ln"), **change}))


def test_null_subject_counts_as_absent() -> None:
    assert parse_sns(body(notification(SNS_CERT, Subject=None))).subject is None


# --- any bytes in: an SnsMessage or SnsRejected, never a crash ---

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FIELDS = [*NOTIFICATION_REQUIRED, "Subject", "Token", "SubscribeURL", "UnsubscribeURL"]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=20),
    st.sampled_from(list(SIGNED)),
    st.lists(st.text(max_size=3), max_size=2),
)


def parse_or_reject(raw: bytes) -> None:
    try:
        msg = parse_sns(raw)
    except SnsRejected as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert isinstance(string_to_sign(msg), bytes)


@FAST
@given(st.binary(max_size=2048))
def test_any_bytes_parse_or_are_rejected(raw: bytes) -> None:
    parse_or_reject(raw)


@FAST
@given(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=len(FIELDS)))
def test_any_sns_shaped_object_parses_or_is_rejected(doc: dict[str, Any]) -> None:
    parse_or_reject(json.dumps(doc).encode())
