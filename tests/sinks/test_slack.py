"""The Slack adapter against a local Slack stand-in over a real socket: webhooks and
chat.postMessage, Retry-After, backoff, dead destinations, and the pipeline going on."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.sinks.documents import NEW_OP, checked
from tests.standins.http import Reply, free_port
from tests.standins.slack import SlackStandIn
from worker.errors import DestinationBroken, TfcompatError, TransientError
from worker.notify.messages import owner_message
from worker.notify.owners import SlackDestination
from worker.once import MemoryClaims
from worker.pipeline.notifications import notification_hook
from worker.pipeline.services import Services
from worker.settings import Settings
from worker.sinks.slack import Answer, SlackNotifier, deliver

HOOK = SlackDestination(webhook="TFCOMPAT_SLACK_WEBHOOK_URL")
CHANNEL = SlackDestination(channel="#ranking")


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server  # type: ignore[misc]


def settings_for(slack: SlackStandIn, **extra: str) -> Settings:
    return Settings(
        slack_webhook_url=slack.webhook_url("default"),  # type: ignore[arg-type]
        slack_bot_token="xoxb-test",  # type: ignore[arg-type]
        slack_api_url=slack.api_url,
        **extra,  # type: ignore[arg-type]
    )


@functools.cache
def message() -> object:
    _, outcome, _ = checked(NEW_OP)
    assert outcome.document is not None
    return owner_message([outcome.document], "Ranking")


def test_webhook_message_arrives_in_slacks_shape(slack: SlackStandIn) -> None:
    SlackNotifier(settings_for(slack)).send(HOOK, message(), "d-1")  # type: ignore[arg-type]
    assert slack.violations == []
    ((path, body),) = slack.messages
    assert path == "/hooks/default"
    assert body["blocks"][0]["type"] == "header"
    assert body["text"].startswith("[Ranking] INCOMPATIBLE")


def test_channel_message_goes_through_chat_post_message(slack: SlackStandIn) -> None:
    SlackNotifier(settings_for(slack)).send(CHANNEL, message(), "d-1")  # type: ignore[arg-type]
    ((path, body),) = slack.messages
    assert (path, body["channel"]) == ("/api/chat.postMessage", "#ranking")
    (request,) = slack.seen("POST", "/api/chat.postMessage")
    assert request.headers["authorization"] == "Bearer xoxb-test"


def test_429_waits_the_retry_after_slack_sends(slack: SlackStandIn) -> None:
    slack.then("/hooks/default", Reply(429, "rate_limited", {"Retry-After": "1"}))
    SlackNotifier(settings_for(slack)).send(HOOK, message(), "d-1")  # type: ignore[arg-type]
    first, second = slack.seen("POST", "/hooks/default")
    assert second.at - first.at >= 1.0
    assert len(slack.messages) == 1


def test_chat_429_waits_the_retry_after_too(slack: SlackStandIn) -> None:
    slack.then(
        "/api/chat.postMessage",
        Reply(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "2"}),
    )
    waits: list[float] = []
    SlackNotifier(settings_for(slack), sleep=waits.append).send(CHANNEL, message(), "d-1")  # type: ignore[arg-type]
    assert waits == [2.0]
    assert len(slack.messages) == 1


def test_a_retry_after_longer_than_we_wait_is_transient(slack: SlackStandIn) -> None:
    slack.then("/hooks/default", Reply(429, "rate_limited", {"Retry-After": "3600"}))
    waits: list[float] = []
    with pytest.raises(TransientError, match="rate limited for 3600s"):
        SlackNotifier(settings_for(slack), sleep=waits.append).send(HOOK, message(), "d-1")  # type: ignore[arg-type]
    assert waits == []


def test_5xx_is_retried_with_growing_backoff(slack: SlackStandIn) -> None:
    slack.then("/hooks/default", Reply(500, "oops"), Reply(503, "oops"))
    waits: list[float] = []
    SlackNotifier(settings_for(slack), sleep=waits.append).send(HOOK, message(), "d-1")  # type: ignore[arg-type]
    assert len(waits) == 2 and 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0
    assert len(slack.messages) == 1


def test_unreachable_slack_is_transient_after_the_attempts() -> None:
    dead = f"http://127.0.0.1:{free_port()}/hooks/x"
    waits: list[float] = []
    notifier = SlackNotifier(Settings(slack_webhook_url=dead), sleep=waits.append, attempts=3)  # type: ignore[arg-type]
    with pytest.raises(TransientError, match="gave up after 3 attempts"):
        notifier.send(HOOK, message(), "d-1")  # type: ignore[arg-type]
    assert len(waits) == 2


# Answers that mean the destination itself is dead: no retry.
@pytest.mark.parametrize(
    ("path", "reply"),
    [
        ("/hooks/default", Reply(404, "no_service")),
        ("/hooks/default", Reply(410, "channel_is_archived")),
        ("/hooks/default", Reply(403, "invalid_token")),
        ("/api/chat.postMessage", Reply(200, {"ok": False, "error": "channel_not_found"})),
        ("/api/chat.postMessage", Reply(200, {"ok": False, "error": "invalid_auth"})),
    ],
)
def test_dead_destinations_are_broken_at_once(slack: SlackStandIn, path: str, reply: Reply) -> None:
    slack.then(path, reply)
    destination = HOOK if path.startswith("/hooks") else CHANNEL
    with pytest.raises(DestinationBroken):
        SlackNotifier(settings_for(slack)).send(destination, message(), "d-1")  # type: ignore[arg-type]
    assert len(slack.seen(path=path)) == 1


def test_unset_secret_is_a_broken_destination() -> None:
    destination = SlackDestination(webhook="TFCOMPAT_SLACK_WEBHOOK_NOBODY_SET_THIS")
    with pytest.raises(DestinationBroken, match="is not set"):
        SlackNotifier(Settings()).send(destination, message(), "d-1")  # type: ignore[arg-type]


def test_a_message_slack_refuses_is_not_retried() -> None:
    with pytest.raises(TfcompatError, match="refused the message"):
        deliver(lambda: Answer(400, "invalid_blocks"), "webhook:X")


def test_bad_webhook_is_logged_once_and_the_pipeline_still_writes_tags(
    slack: SlackStandIn, tmp_path: Path
) -> None:
    slack.then("/hooks/default", *[Reply(404, "no_service")] * 2)
    settings = settings_for(slack, owners=str(tmp_path / "absent.yaml"))
    claims = MemoryClaims()
    with capture_logs() as logs:
        for prefix in ("a/1", "b/1"):
            event, outcome, store = checked(NEW_OP, prefix=prefix)
            hook = notification_hook(settings, store, SlackNotifier(settings), claims)
            assert hook is not None
            Services(store, None, None, None, hooks=[hook]).after(event, outcome)  # type: ignore[arg-type]
            tags = {t["Key"]: t["Value"] for t in store.get_tags(event.bucket, event.key, None)}
            assert tags["tfcompat:status"] == "incompatible"
    errors = [e for e in logs if e["log_level"] == "error"]
    assert [e["event"] for e in errors] == ["slack.destination_broken"]
    assert slack.webhook_url("default") not in str(logs)  # the secret never reaches a log
    assert slack.messages == []


# Delivery ids: a channel message carries one in its metadata and is found again in the
# channel's history (by the channel's name or ID); a webhook cannot be asked.
def test_a_channel_message_is_found_again_by_its_delivery_id(slack: SlackStandIn) -> None:
    notifier = SlackNotifier(settings_for(slack))
    assert notifier.delivered(CHANNEL, "d-1") is False
    notifier.send(CHANNEL, message(), "d-1")  # type: ignore[arg-type]
    assert notifier.delivered(CHANNEL, "d-1") is True
    assert notifier.delivered(CHANNEL, "d-2") is False
    by_id = SlackDestination(channel=slack.channel_id("#ranking"))
    assert notifier.delivered(by_id, "d-1") is True
    (stored,) = slack.channels[slack.channel_id("#ranking")]
    assert stored["metadata"] == {
        "event_type": "tfcompat_notification",
        "event_payload": {"delivery": "d-1"},
    }


def test_a_webhook_cannot_be_asked(slack: SlackStandIn) -> None:
    assert SlackNotifier(settings_for(slack)).delivered(HOOK, "d-1") is None


def test_an_unknown_channel_name_is_a_broken_destination(slack: SlackStandIn) -> None:
    with pytest.raises(DestinationBroken, match="channel_not_found"):
        SlackNotifier(settings_for(slack)).delivered(SlackDestination(channel="#nowhere"), "d")
