"""A local stand-in for Slack: incoming webhooks (`/hooks/NAME`), `chat.postMessage`
with message `metadata`, `conversations.history` (newest first; metadata only with
`include_all_metadata`) and `conversations.list`, checking every message against
Slack's documented shape. Channels are known by name and by an ID (`channel_id`).

The shape is Slack's Block Kit reference written as JSON Schema, for the blocks
we use: at most 50 blocks a message; `header` (plain_text, at most 150
characters), `section` (text at most 3000 characters), `context` (at most 10
elements), `divider`; text objects are `plain_text` (with `emoji`) or `mrkdwn`
(with `verbatim`); `block_id` at most 255 characters; the top-level `text`
(the notification fallback) at most 40,000 characters. A message that breaks
it gets Slack's own answer, 400 `invalid_blocks`, and is kept in `violations`.

Answers can be scripted per path (`script`), e.g. a 429 with Retry-After, a 404
`no_service` for a dead webhook, a 500.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import jsonschema

from tests.standins.http import DROP, RecordingServer, Reply, Request

Hook = Callable[[Request], bool]
"""Called with a request before (`before_taking`) or after (`after_taking`) Slack takes
the message; returning False drops the connection unanswered (the sender vanished)."""

_TEXT = {
    "type": "object",
    "required": ["type", "text"],
    "properties": {
        "type": {"enum": ["plain_text", "mrkdwn"]},
        "text": {"type": "string", "minLength": 1},
        "emoji": {"type": "boolean"},
        "verbatim": {"type": "boolean"},
    },
    "additionalProperties": False,
}


def _text(max_length: int, kind: str | None = None) -> dict[str, Any]:
    properties = {
        **_TEXT["properties"],
        "text": {"type": "string", "minLength": 1, "maxLength": max_length},
    }  # type: ignore[dict-item]
    if kind:
        properties["type"] = {"const": kind}
    return {**_TEXT, "properties": properties}


_BLOCK_ID = {"type": "string", "maxLength": 255}
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["text"],
    "properties": {
        "text": {"type": "string", "minLength": 1, "maxLength": 40000},
        "channel": {"type": "string"},
        "blocks": {
            "type": "array",
            "maxItems": 50,
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["type", "text"],
                        "properties": {
                            "type": {"const": "header"},
                            "text": _text(150, "plain_text"),
                            "block_id": _BLOCK_ID,
                        },
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "required": ["type", "text"],
                        "properties": {
                            "type": {"const": "section"},
                            "text": _text(3000),
                            "block_id": _BLOCK_ID,
                        },
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "required": ["type", "elements"],
                        "properties": {
                            "type": {"const": "context"},
                            "elements": {
                                "type": "array",
                                "minItems": 1,
                                "maxItems": 10,
                                "items": _text(3000),
                            },
                            "block_id": _BLOCK_ID,
                        },
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "required": ["type"],
                        "properties": {"type": {"const": "divider"}, "block_id": _BLOCK_ID},
                        "additionalProperties": False,
                    },
                ]
            },
        },
    },
}


def shape_errors(message: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(MESSAGE_SCHEMA)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(message)]


class SlackStandIn(RecordingServer):
    """Messages land in `messages` as (path, body) once accepted."""

    def __init__(
        self, bot_token: str = "xoxb-test", channels: tuple[str, ...] = ("ranking", "models")
    ) -> None:
        self.bot_token = bot_token
        self.script: dict[str, deque[Reply]] = defaultdict(deque)
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.channels: dict[str, list[dict[str, Any]]] = defaultdict(list)  # by channel ID
        self.names: set[str] = set(channels)  # the workspace's channels, by name
        self.violations: list[tuple[str, list[str]]] = []
        self.before_taking: Hook | None = None
        self.after_taking: Hook | None = None
        self._answer_lock = threading.Lock()
        super().__init__(self._answer)

    def webhook_url(self, name: str) -> str:
        return f"{self.url}/hooks/{name}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def then(self, path: str, *replies: Reply) -> None:
        """Answer the next requests to `path` with these, before answering normally."""
        self.script[path].extend(replies)

    def _answer(self, request: Request) -> Reply:
        with self._answer_lock:
            scripted = self.script[request.path].popleft() if self.script[request.path] else None
        if scripted is not None:
            return scripted
        if request.path.startswith("/hooks/"):
            return self._webhook(request)
        if request.path == "/api/chat.postMessage":
            return self._chat(request)
        if request.path == "/api/conversations.history":
            return self._history(request)
        if request.path == "/api/conversations.list":
            return self._list(request)
        return Reply(404, "no_service", {"Content-Type": "text/plain"})

    @staticmethod
    def channel_id(name_or_id: str) -> str:
        """The stand-in's ID for a channel name (`#models` and `models` alike)."""
        if name_or_id.startswith("C") and name_or_id[1:].isalnum() and name_or_id.isupper():
            return name_or_id
        return "C" + hashlib.sha256(name_or_id.removeprefix("#").encode()).hexdigest()[:9].upper()

    def _form(self, request: Request) -> dict[str, Any]:
        if "json" in request.headers.get("content-type", ""):
            body = request.json()
            return body if isinstance(body, dict) else {}
        form = {k: v[0] for k, v in request.query.items()}
        form.update({k: v[0] for k, v in parse_qs(request.body.decode()).items()})
        return form

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.bot_token}"

    def _history(self, request: Request) -> Reply:
        if not self._authorized(request):
            return Reply(200, {"ok": False, "error": "invalid_auth"})
        form = self._form(request)
        channel = str(form.get("channel", ""))
        if channel not in {self.channel_id(n) for n in self.names}:
            return Reply(200, {"ok": False, "error": "channel_not_found"})
        limit = min(int(form.get("limit", 100)), 999)
        metadata = str(form.get("include_all_metadata", "")).lower() in ("1", "true")
        newest = list(reversed(self.channels[channel]))[:limit]
        shown = [{k: v for k, v in m.items() if k != "metadata" or metadata} for m in newest]
        return Reply(200, {"ok": True, "messages": shown, "has_more": False})

    def _list(self, request: Request) -> Reply:
        if not self._authorized(request):
            return Reply(200, {"ok": False, "error": "invalid_auth"})
        known = [{"id": self.channel_id(n), "name": n} for n in sorted(self.names)]
        return Reply(200, {"ok": True, "channels": known, "response_metadata": {"next_cursor": ""}})

    def _accept(self, request: Request, body: Any) -> list[str]:
        errors = shape_errors(body)
        if errors:
            self.violations.append((request.path, errors))
        else:
            self.messages.append((request.path, body))
        return errors

    def _webhook(self, request: Request) -> Reply:
        if request.method != "POST" or "json" not in request.headers.get("content-type", ""):
            return Reply(400, "invalid_payload", {"Content-Type": "text/plain"})
        if self.before_taking is not None and not self.before_taking(request):
            return Reply(DROP)
        if self._accept(request, request.json()):
            return Reply(400, "invalid_blocks", {"Content-Type": "text/plain"})
        if self.after_taking is not None and not self.after_taking(request):
            return Reply(DROP)
        return Reply(200, "ok", {"Content-Type": "text/plain"})

    def _chat(self, request: Request) -> Reply:
        if not self._authorized(request):
            return Reply(200, {"ok": False, "error": "invalid_auth"})
        body = self._form(request)
        if not body.get("channel"):
            return Reply(200, {"ok": False, "error": "channel_not_found"})
        metadata = body.get("metadata")
        if isinstance(metadata, str):
            metadata = json.loads(metadata)
        if metadata is not None and not (
            isinstance(metadata, dict)
            and isinstance(metadata.get("event_type"), str)
            and isinstance(metadata.get("event_payload"), dict)
        ):
            return Reply(200, {"ok": False, "error": "invalid_metadata_format"})
        if self.before_taking is not None and not self.before_taking(request):
            return Reply(DROP)
        if self._accept(request, body):
            return Reply(200, {"ok": False, "error": "invalid_blocks"})
        channel = str(body["channel"])
        if not channel.startswith("C"):
            self.names.add(channel.removeprefix("#"))
        ts = f"{1700000000 + len(self.messages)}.000100"
        stored = {"type": "message", "text": body["text"], "ts": ts}
        if metadata is not None:
            stored["metadata"] = metadata
        self.channels[self.channel_id(channel)].append(stored)
        if self.after_taking is not None and not self.after_taking(request):
            return Reply(DROP)
        return Reply(200, {"ok": True, "channel": self.channel_id(channel), "ts": ts})
