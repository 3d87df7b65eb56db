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
"""

from __future__ import annotations

import random
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

    def send(self, destination: SlackDestination, message: Message) -> None:
        name = destination.webhook or destination.token
        secret = named_secret(self._settings, name)
        if secret is None or not secret.get_secret_value():
            raise DestinationBroken(f"{destination.key}: {name} is not set")
        value = secret.get_secret_value()
        if destination.webhook:
            post = self._webhook(value, message)
        else:
            post = self._chat(value, str(destination.channel), message)
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

    def _chat(self, token: str, channel: str, message: Message) -> Post:
        from slack_sdk import WebClient
        from slack_sdk.errors import SlackApiError

        client = WebClient(
            token=token, base_url=self._settings.slack_api_url, timeout=TIMEOUT, retry_handlers=[]
        )

        def post() -> Answer:
            try:
                client.chat_postMessage(channel=channel, text=message.text, blocks=message.blocks)
            except SlackApiError as exc:
                response = exc.response
                data = response.data if isinstance(response.data, dict) else {}
                return Answer(
                    response.status_code,
                    str(data.get("error") or "error"),
                    _retry_after(response.headers),
                )
            return Answer(200)

        return post
