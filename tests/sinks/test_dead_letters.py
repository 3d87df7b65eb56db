"""The dead-letter list in a real Redis: kept with its cause, re-driven, then gone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.redis_server import REDIS_PORT
from worker.errors import NotFound, TransientError
from worker.sinks.dead_letters import DeadLetters

REDIS_DB = 3
ARGS = [{"digest": "d1", "unit": {"id": "mlflow:x", "kind": "mlflow", "items": ["m", "3"]}}]


@pytest.fixture
def letters() -> Iterator[DeadLetters]:
    client = redis.Redis(host="127.0.0.1", port=REDIS_PORT, db=REDIS_DB, socket_timeout=5)
    client.flushdb()
    yield DeadLetters(client)
    client.flushdb()


def test_failed_work_is_listed_with_its_cause(letters: DeadLetters) -> None:
    letters.add("tfcompat.fleet_version", ARGS, "Unrecheckable: mlflow m v3: unreadable")
    (letter,) = letters.entries()
    assert letter.task == "tfcompat.fleet_version" and letter.args == ARGS
    assert letter.cause == "Unrecheckable: mlflow m v3: unreadable"


def test_the_same_work_failing_again_counts_up_one_entry(letters: DeadLetters) -> None:
    letters.add("tfcompat.fleet_version", ARGS, "first")
    letters.add("tfcompat.fleet_version", ARGS, "second")
    (letter,) = letters.entries()
    assert (letter.failures, letter.cause) == (2, "second")


def test_a_retried_letter_is_sent_then_removed(letters: DeadLetters) -> None:
    letter = letters.add("tfcompat.fleet_version", ARGS, "cause")
    sent: list[tuple[str, list[Any]]] = []
    letters.retry(letter.id, lambda task, args: sent.append((task, args)))
    assert sent == [("tfcompat.fleet_version", ARGS)] and letters.entries() == []


def test_a_letter_the_broker_did_not_take_stays(letters: DeadLetters) -> None:
    letter = letters.add("tfcompat.fleet_version", ARGS, "cause")

    def refuse(task: str, args: list[Any]) -> None:
        raise TransientError("broker down")

    with pytest.raises(TransientError):
        letters.retry(letter.id, refuse)
    assert [d.id for d in letters.entries()] == [letter.id]


def test_an_unknown_id_names_the_list_command(letters: DeadLetters) -> None:
    with pytest.raises(NotFound, match="dead-letters list"):
        letters.retry("nope", lambda task, args: None)
