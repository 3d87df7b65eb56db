"""Who may make the worker read an object: the bucket allowlist, the routes' secrets,
and settings that contradict each other (pure: no network)."""

from __future__ import annotations

import json

import pytest

from worker.errors import ConfigError
from worker.ingest.access import (
    BucketAllowlist,
    bucket_gaps,
    open_routes,
    refused_message,
    require_closed,
)
from worker.ingest.events import EventFilter, parse_s3_body
from worker.ingest.sqs_bridge import BridgeStats, handle_message
from worker.model.events import ObjectEvent
from worker.settings import Settings, load_settings

CLOSED = {
    "events_token": "t0ken",
    "sns_topic_arns": ["arn:aws:sns:us-east-1:1:models"],
    "github_webhook_secret": "s3cret",
    "buckets": ["models-*"],
}


# Entries: a bucket glob alone allows every key; BUCKET/KEYGLOB narrows; a key part
# ending in "/" is a prefix; matching is case-sensitive, as S3 names are.
@pytest.mark.parametrize(
    ("entries", "bucket", "key", "allowed"),
    [
        (("models",), "models", "a/b/saved_model.pb", True),
        (("models",), "models-2", "x.pb", False),
        (("models-*",), "models-2", "x.pb", True),
        (("models-*",), "Models-2", "x.pb", False),
        (("ml/prod/*",), "ml", "prod/v1/x.pb", True),
        (("ml/prod/*",), "ml", "dev/x.pb", False),
        (("ml/prod/",), "ml", "prod/x.pb", True),
        (("ml/prod/",), "ml", "production/x.pb", False),
        (("ml/*.tflite",), "ml", "edge/m.tflite", True),
        (("a", "b/keep/*"), "b", "keep/x", True),
        (("a", "b/keep/*"), "b", "drop/x", False),
        ((), "anything", "at/all", True),
    ],
)
def test_allowlist_entries(entries: tuple[str, ...], bucket: str, key: str, allowed: bool) -> None:
    assert BucketAllowlist(entries).allows(bucket, key) is allowed


def test_refused_message_names_the_objects_and_counts_the_rest() -> None:
    events = [ObjectEvent("other", f"k{i}", "ObjectCreated:Put") for i in range(5)]
    message = refused_message(events)
    assert message.startswith("not in TFCOMPAT_BUCKETS: s3://other/k0, s3://other/k1")
    assert message.endswith("and 2 more")


def test_every_route_with_its_secret_is_closed() -> None:
    assert open_routes(Settings(**CLOSED)) == []


@pytest.mark.parametrize(
    ("missing", "reason"),
    [
        ("events_token", "/events/s3 has no TFCOMPAT_EVENTS_TOKEN"),
        ("sns_topic_arns", "/events/sns would confirm any topic"),
        ("github_webhook_secret", "/webhooks/github has no TFCOMPAT_GITHUB_WEBHOOK_SECRET"),
        ("buckets", "events may name any bucket (TFCOMPAT_BUCKETS is empty)"),
    ],
)
def test_a_missing_secret_or_list_keeps_the_receiver_from_starting(
    missing: str, reason: str
) -> None:
    values = {name: value for name, value in CLOSED.items() if name != missing}
    settings = Settings(**values)
    with pytest.raises(ConfigError) as error:
        require_closed(settings, open_routes(settings), "the receiver")
    assert reason in str(error.value)
    assert "TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS=1" in str(error.value)


def test_routes_not_served_need_no_secret() -> None:
    settings = Settings(buckets=["m"], events_token="t", receiver_routes=["s3", "eventbridge"])
    assert open_routes(settings) == []


def test_the_opt_out_starts_and_names_what_is_open() -> None:
    settings = Settings(allow_unauthenticated_events=True)
    reasons = require_closed(settings, open_routes(settings), "the receiver")
    assert len(reasons) == 5  # s3, eventbridge, sns, github, buckets


def test_the_bridge_needs_only_the_bucket_list() -> None:
    assert bucket_gaps(Settings(buckets=["m"])) == []
    with pytest.raises(ConfigError, match="the SQS bridge will not start"):
        require_closed(Settings(), bucket_gaps(Settings()), "the SQS bridge")


def test_the_bridge_leaves_a_message_outside_the_allowlist_for_the_dead_letter_queue() -> None:
    body = json.dumps(
        {
            "Records": [
                {
                    "eventName": "ObjectCreated:Put",
                    "s3": {"bucket": {"name": "payroll"}, "object": {"key": "m/saved_model.pb"}},
                }
            ]
        }
    )
    enqueued: list[ObjectEvent] = []
    stats = BridgeStats()
    keep = handle_message(
        body, enqueued.append, EventFilter(("*.pb",)), stats, BucketAllowlist(("models",))
    )
    assert keep is False and enqueued == [] and stats.refused == 1
    assert parse_s3_body(body)[0].bucket == "payroll"


# Settings validated together: each contradiction is one line naming the variables.
@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"TFCOMPAT_BROKER_URL": "sqs://"}, "set TFCOMPAT_VISIBILITY_TIMEOUT above"),
        (
            {"TFCOMPAT_BROKER_URL": "sqs://", "TFCOMPAT_TASK_TIME_LIMIT": "0"},
            "TFCOMPAT_TASK_TIME_LIMIT (no limit)",
        ),
        (
            {
                "TFCOMPAT_BROKER_URL": "sqs://",
                "TFCOMPAT_VISIBILITY_TIMEOUT": "1500",
                "TFCOMPAT_BROKER_TRANSPORT_OPTIONS": '{"visibility_timeout": 60}',
            },
            "visibility timeout (60 s)",
        ),
        ({"TFCOMPAT_PUBLISH_TIMEOUT": "0"}, "TFCOMPAT_PUBLISH_TIMEOUT must be positive"),
        ({"TFCOMPAT_NOTIFY_LEASE": "-1"}, "TFCOMPAT_NOTIFY_LEASE must be positive"),
        ({"TFCOMPAT_TASK_TIME_LIMIT": "-5"}, "TFCOMPAT_TASK_TIME_LIMIT must be 0"),
        ({"TFCOMPAT_RECEIVER_ROUTES": '["s3", "ftp"]'}, "TFCOMPAT_RECEIVER_ROUTES names ftp"),
        ({"TFCOMPAT_LOG_FORMAT": "xml"}, "TFCOMPAT_LOG_FORMAT: Input should be"),
    ],
)
def test_contradictory_settings_are_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], reason: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as error:
        load_settings()
    assert reason in str(error.value)
    assert "\n" not in str(error.value)


def test_sqs_with_visibility_above_the_time_limit_is_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TFCOMPAT_BROKER_URL", "sqs://")
    monkeypatch.setenv("TFCOMPAT_VISIBILITY_TIMEOUT", "1260")
    assert load_settings().visibility_timeout == 1260


def test_the_mlflow_route_is_served_only_when_named_and_needs_its_secret() -> None:
    assert "mlflow" not in Settings().receiver_routes
    named = Settings(buckets=["m"], receiver_routes=["mlflow"])
    assert open_routes(named) == [
        "/webhooks/mlflow has no TFCOMPAT_MLFLOW_WEBHOOK_SECRET (or leave routes out of "
        "TFCOMPAT_RECEIVER_ROUTES: s3,eventbridge,sns,github,mlflow)"
    ]
    secret = Settings(buckets=["m"], receiver_routes=["mlflow"], mlflow_webhook_secret="s")
    assert open_routes(secret) == []
