"""SNS deliveries through the receiver over a socket: verified, confirmed, enqueued
onto the real broker; forged or unsigned ones enqueue nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import redis

from tests.ingest.test_sns import (
    CERT_PATH,
    TOPIC,
    CertServer,
    Signer,
    notification,
    stamp,
    subscription_confirmation,
)
from tests.pipeline.conftest import _redis_ready
from tests.pipeline.services import (
    cli,
    process,
    receiver_process,
    s3,
    s3_event,
    upload_tree,
    wait_for_tags,
    worker_env,
)
from tests.redis_server import REDIS_PORT
from tests.truth import SHARED

pytestmark = pytest.mark.services
DB = 14


@pytest.fixture(scope="module")
def sns_signer() -> Signer:
    return Signer("sns.us-west-2.amazonaws.com")


@pytest.fixture(scope="module")
def certs() -> Iterator[CertServer]:
    server = CertServer()
    yield server
    server.close()


@pytest.fixture
def receiver(
    endpoint: str, certs: CertServer, sns_signer: Signer, logs: Path
) -> Iterator[tuple[str, CertServer, dict[str, str]]]:
    running_server, signer = certs, sns_signer
    running_server.routes = {CERT_PATH: signer.pem, "/confirm": b"<ConfirmSubscriptionResponse/>"}
    running_server.requests.clear()
    _redis_ready(DB)
    env = worker_env(
        endpoint,
        DB,
        TFCOMPAT_SNS_CERT_URL_PATTERN=running_server.pattern,
        TFCOMPAT_SNS_SUBSCRIBE_URL_PATTERN="^" + re.escape(running_server.base) + "/",
        TFCOMPAT_SNS_TOPIC_ARNS=json.dumps([TOPIC]),
    )
    with receiver_process(env, logs / "sns-receiver.log") as url:
        yield url, running_server, env


def queued() -> int:
    return int(redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=DB).llen("tfcompat"))


def post(url: str, doc: dict[str, object]) -> httpx.Response:
    return httpx.post(
        f"{url}/events/sns",
        content=json.dumps(doc),
        headers={"x-amz-sns-message-type": str(doc.get("Type"))},
        timeout=30,
    )


def test_sns_delivery_end_to_end(
    receiver: tuple[str, CertServer, dict[str, str]],
    sns_signer: Signer,
    endpoint: str,
    logs: Path,
) -> None:
    signer = sns_signer
    url, certs, env = receiver
    now = stamp(datetime.now(UTC))
    cert_url = certs.base + CERT_PATH

    # The subscription is confirmed by fetching its (host-checked) SubscribeURL.
    confirm = signer.sign(
        subscription_confirmation(cert_url, SubscribeURL=certs.base + "/confirm", Timestamp=now)
    )
    assert post(url, confirm).status_code == 200
    assert "/confirm" in certs.requests

    client = s3(endpoint)
    client.create_bucket(Bucket="sns-models")
    upload_tree(client, "sns-models", "m/1", SHARED / "artifacts/tf2.21/new_op")
    records = json.dumps(s3_event(client, "sns-models", "m/1/saved_model.pb"))
    good = signer.sign(notification(cert_url, Message=records, Timestamp=now), version="2")

    # Forged, unsigned, foreign and stale deliveries are refused and enqueue nothing.
    forged = {**good, "Message": records.replace("saved_model.pb", "evil_model.pb")}
    assert forged["Message"] != good["Message"]
    unsigned = {k: v for k, v in good.items() if k != "Signature"}
    foreign = signer.sign(
        notification(cert_url, Message=records, Timestamp=now, TopicArn=TOPIC + "-other")
    )
    stale = signer.sign(
        notification(cert_url, Message=records, Timestamp="2020-01-01T00:00:00.000Z")
    )
    for doc, status in ((forged, 403), (unsigned, 400), (foreign, 403), (stale, 403)):
        assert post(url, doc).status_code == status
    assert post(url, {"Type": "Notification"}).status_code == 400
    assert queued() == 0

    response = post(url, good)
    assert response.status_code == 202 and response.json() == {"accepted": 1, "ignored": 0}
    assert queued() == 1
    with process(
        cli("worker", "--concurrency", "1", "--hostname", "sns@%h"), env, logs / "sns-worker.log"
    ):
        tags = wait_for_tags(client, "sns-models", "m/1/saved_model.pb")
    assert tags["tfcompat:status"] == "incompatible"


def test_a_genuine_message_replayed_starts_one_task(
    receiver: tuple[str, CertServer, dict[str, str]], sns_signer: Signer, endpoint: str
) -> None:
    """SNS retries, and anyone who saw a message can resend it within its hour: one
    MessageId, one task. The deeply nested Message of a genuine delivery is a 400."""
    url, certs, _ = receiver
    now, cert_url = stamp(datetime.now(UTC)), certs.base + CERT_PATH
    client = s3(endpoint)
    client.create_bucket(Bucket="sns-replays")
    upload_tree(client, "sns-replays", "m/1", SHARED / "artifacts/tf2.21/new_op")
    records = json.dumps(s3_event(client, "sns-replays", "m/1/saved_model.pb"))
    good = sns_signer.sign(
        notification(cert_url, Message=records, Timestamp=now, MessageId="replayed-1")
    )
    answers = [post(url, good).status_code for _ in range(8)]
    assert answers == [202] + [200] * 7
    assert queued() == 1
    deep = sns_signer.sign(
        notification(cert_url, Message="[" * 100_000, Timestamp=now, MessageId="deep-1")
    )
    assert post(url, deep).status_code == 400
    assert queued() == 1
