"""A retried error leaves its frames behind (`pipeline.app.RetryingTask`): what the
failed attempt held (a chunk's decoded models, the report it meant to write) is freed
at once, not kept by the retry Celery sends on."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
import redis
from celery import Celery
from celery.exceptions import Retry

from tests.redis_server import redis_url
from worker.errors import TransientError
from worker.pipeline.app import RetryingTask, create_app, without_frames
from worker.settings import Settings

DB = 10  # the retry's message goes here; emptied before and after


class Held:
    """Stands for what a failed attempt's frames hold."""


@pytest.fixture
def app() -> Iterator[Celery]:
    client = redis.Redis.from_url(redis_url(DB))
    client.flushdb()
    app = create_app(Settings(broker_url=redis_url(DB)))
    yield app
    app.close()
    client.flushdb()


def _failing(held: list[weakref.ref[Held]]) -> None:
    chunk = Held()  # a local of a frame the error unwinds
    held.append(weakref.ref(chunk))
    try:
        raise ConnectionRefusedError("connection refused")
    except ConnectionRefusedError as exc:
        raise TransientError("s3://reports/r.json: endpoint unreachable") from exc


def test_every_task_of_the_app_sheds_the_frames_of_what_it_retries(app: Celery) -> None:
    app.loader.import_default_modules()
    ours = {name: task for name, task in app.tasks.items() if name.startswith("tfcompat.")}
    assert len(ours) > 8
    assert all(isinstance(task, RetryingTask) for task in ours.values()), [
        name for name, task in ours.items() if not isinstance(task, RetryingTask)
    ]


def test_a_retried_error_keeps_its_message_and_frees_what_its_frames_held(app: Celery) -> None:
    held: list[weakref.ref[Held]] = []

    @app.task(bind=True, name="test.flaky", autoretry_for=(TransientError,), max_retries=3)
    def flaky(self: RetryingTask) -> None:
        _failing(held)

    enabled = gc.isenabled()
    gc.disable()  # freed by reference counts, not by a collection that may not come
    try:
        flaky.push_request(id="attempt-1", retries=0, called_directly=False)  # as a worker runs it
        try:
            with pytest.raises(Retry) as caught:
                flaky.run()
        finally:
            flaky.pop_request()
        retried = caught.value.exc
        assert isinstance(retried, TransientError)
        assert str(retried) == "s3://reports/r.json: endpoint unreachable"
        assert retried.__traceback__ is None and retried.__cause__ is None
        assert held and held[0]() is None, "the failed attempt's frames are still held"
    finally:
        if enabled:
            gc.enable()


def test_without_frames_drops_traceback_cause_and_context() -> None:
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise TransientError("outer") from inner
    except TransientError as exc:
        shed = without_frames(exc)
    assert str(shed) == "outer"
    assert shed.__traceback__ is None and shed.__cause__ is None and shed.__context__ is None
