"""The Slack adapter of the Notifier port, through `slack_sdk`.

An owner's destination is an incoming webhook (`WebhookClient`) or a channel
posted to with `chat.postMessage` and a bot token (`WebClient`, rooted at
`TFCOMPAT_SLACK_API_URL`). Both URL and token come from settings by the name
owners.yaml gives them, at send time, and never reach a log.

Delivery policy, in one place (`deliver`): HTTP 429 waits the `Retry-After`
Slack sends (up to `max_wait`, else gives up as transient), 5xx and connection
errors retry with exponential backoff, and answers that mean the destination
itself is gone (404, 410, `invalid_token`, `channel_not_found`, ...) raise
`DestinationBroken` at once: no retry helps them. slack_sdk's own retry
handlers are switched off so this policy is the only one.

Channel messages carry the delivery id in Slack's message metadata
(`event_type` `tfcompat_notification`), and `delivered` finds it again in the
channel's recent history (`conversations.history` with `include_all_metadata`;
the bot needs the `channels:history` scope, `groups:history` for private
channels, and `channels:read` when owners.yaml names a channel rather than its
ID). Incoming webhooks keep no metadata and cannot be asked.
"""

from __future__ import annotations

import functools
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from worker.errors import DestinationBroken, TfcompatError, TransientError
from worker.notify.messages import Message
from worker.notify.owners import SlackDestination
from worker.settings import Settings, named_secret

log = structlog.get_logger(__name__)

ATTEMPTS = 4
MAX_WAIT = 60.0  # seconds of Retry-After honoured in-process; longer means "try later"
TIMEOUT = 10
EVENT_TYPE = "tfcompat_notification"
HISTORY = 200  # recent messages searched for a delivery id: far more than one lease's worth
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{6,}$")
# Slack's answers that mean the webhook or channel will not work again as configured.
PERMANENT_ERRORS = {
    "invalid_token",
    "invalid_auth",
    "token_revoked",
    "token_expired",
    "account_inactive",
    "no_service",
    "no_active_hooks",
    "no_team",
    "team_disabled",
    "channel_not_found",
    "channel_is_archived",
    "is_archived",
    "not_in_channel",
    "action_prohibited",
    "posting_to_general_channel_denied",
}


@dataclass(frozen=True)
class Answer:
    """What one attempt got back, whichever client made it."""

    status: int
    error: str | None = None  # Slack's error string ("channel_not_found"), if any
    retry_after: float | None = None


Post = Callable[[], Answer]


def _retry_after(headers: Any) -> float | None:
    for name in ("Retry-After", "retry-after"):
        value = (headers or {}).get(name)
        if isinstance(value, list):
            value = value[0] if value else None
        if value is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return None


def deliver(
    post: Post,
    what: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    attempts: int = ATTEMPTS,
    max_wait: float = MAX_WAIT,
) -> Answer:
    """Post until Slack takes it; TransientError when it may work later, DestinationBroken
    when it never will, TfcompatError when Slack refuses the message itself."""
    last = "no attempt"
    for attempt in range(attempts):
        try:
            answer = post()
        except OSError as exc:  # URLError, timeouts, connection resets
            answer, last = Answer(0, f"{type(exc).__name__}: {exc}"), f"{type(exc).__name__}"
        if 200 <= answer.status < 300 and answer.error is None:
            return answer
        if answer.status in (404, 410) or answer.error in PERMANENT_ERRORS:
            raise DestinationBroken(f"{what}: Slack says {answer.error or answer.status}")
        if answer.status == 429:
            wait = answer.retry_after if answer.retry_after is not None else 1.0
            if wait > max_wait:
                raise TransientError(f"{what}: rate limited for {wait:.0f}s")
            last = f"429 (Retry-After {wait:g})"
        elif answer.status >= 500 or answer.status == 0:
            wait = min(max_wait, random.uniform(0.5, 1.0) * 2**attempt)
            last = answer.error if answer.status == 0 and answer.error else str(answer.status)
        else:
            raise TfcompatError(
                f"{what}: Slack refused the message ({answer.error or answer.status})"
            )
        if attempt + 1 < attempts:
            log.info("slack.retry", destination=what, reason=last, wait=round(wait, 2))
            sleep(wait)
    raise TransientError(f"{what}: gave up after {attempts} attempts ({last})")


class SlackNotifier:
    """Posts Block Kit messages to owners' Slack destinations."""

    def __init__(
        self,
        settings: Settings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        attempts: int = ATTEMPTS,
        max_wait: float = MAX_WAIT,
    ) -> None:
        self._settings = settings
        self._sleep, self._attempts, self._max_wait = sleep, attempts, max_wait

    def _secret(self, destination: SlackDestination) -> str:
        name = destination.webhook or destination.token
        secret = named_secret(self._settings, name)
        if secret is None or not secret.get_secret_value():
            raise DestinationBroken(f"{destination.key}: {name} is not set")
        return secret.get_secret_value()

    def send(self, destination: SlackDestination, message: Message, delivery: str) -> None:
        value = self._secret(destination)
        if destination.webhook:
            post = self._webhook(value, message)
        else:
            post = self._chat(value, str(destination.channel), message, delivery)
        deliver(
            post,
            destination.key,
            sleep=self._sleep,
            attempts=self._attempts,
            max_wait=self._max_wait,
        )

    @staticmethod
    def _webhook(url: str, message: Message) -> Post:
        from slack_sdk.webhook import WebhookClient

        client = WebhookClient(url, timeout=TIMEOUT, retry_handlers=[])

        def post() -> Answer:
            response = client.send(text=message.text, blocks=message.blocks)
            body = (response.body or "").strip()
            error = None if response.status_code == 200 and body in ("ok", "") else body or None
            return Answer(response.status_code, error, _retry_after(response.headers))

        return post

    def _client(self, token: str) -> Any:
        from slack_sdk import WebClient

        return WebClient(
            token=token, base_url=self._settings.slack_api_url, timeout=TIMEOUT, retry_handlers=[]
        )

    def _chat(self, token: str, channel: str, message: Message, delivery: str) -> Post:
        client = self._client(token)
        metadata = {"event_type": EVENT_TYPE, "event_payload": {"delivery": delivery}}

        def post() -> Answer:
            return _call(
                lambda: client.chat_postMessage(
                    channel=channel, text=message.text, blocks=message.blocks, metadata=metadata
                )
            )[0]

        return post

    def delivered(self, destination: SlackDestination, delivery: str) -> bool | None:
        """Whether the channel's last HISTORY messages hold this delivery id; None for a
        webhook. Raises as `send` when Slack cannot be asked: never sends blind."""
        if destination.webhook:
            return None
        client = self._client(self._secret(destination))
        channel = self._channel_id(client, destination)
        data = self._ask(
            f"{destination.key} history",
            lambda: client.conversations_history(
                channel=channel, limit=HISTORY, include_all_metadata=True
            ),
        )
        for item in data.get("messages") or []:
            meta = item.get("metadata") if isinstance(item, dict) else None
            if isinstance(meta, dict) and meta.get("event_type") == EVENT_TYPE:
                payload = meta.get("event_payload")
                if isinstance(payload, dict) and payload.get("delivery") == delivery:
                    return True
        return False

    def _channel_id(self, client: Any, destination: SlackDestination) -> str:
        """owners.yaml may name a channel (`#ranking-models`); history needs its ID."""
        channel = str(destination.channel)
        if _CHANNEL_ID.match(channel):
            return channel
        name, cursor = channel.removeprefix("#"), None
        while True:
            data = self._ask(
                f"{destination.key} lookup",
                functools.partial(
                    client.conversations_list,
                    types="public_channel,private_channel",
                    exclude_archived=True,
                    limit=1000,
                    cursor=cursor,
                ),
            )
            for item in data.get("channels") or []:
                if isinstance(item, dict) and item.get("name") == name:
                    return str(item.get("id"))
            cursor = (data.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                raise DestinationBroken(f"{destination.key}: Slack says channel_not_found")

    def _ask(self, what: str, request: Callable[[], Any]) -> dict[str, Any]:
        """One Web API read under the same delivery policy as a post; its data."""
        kept: dict[str, Any] = {}

        def post() -> Answer:
            answer, data = _call(request)
            kept.clear()
            kept.update(data)
            return answer

        deliver(post, what, sleep=self._sleep, attempts=self._attempts, max_wait=self._max_wait)
        return kept


def _call(request: Callable[[], Any]) -> tuple[Answer, dict[str, Any]]:
    """One Web API call as an Answer and its data (empty when it failed)."""
    from slack_sdk.errors import SlackApiError

    try:
        response = request()
    except SlackApiError as exc:
        response = exc.response
        data = response.data if isinstance(response.data, dict) else {}
        return Answer(
            response.status_code, str(data.get("error") or "error"), _retry_after(response.headers)
        ), {}
    data = response.data if isinstance(response.data, dict) else {}
    return Answer(200), data
