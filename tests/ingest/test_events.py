"""Event parsing and the filter that decides which events start work."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.errors import MalformedEvent
from worker.ingest.events import (
    EventFilter,
    parse_eventbridge_body,
    parse_queue_message,
    parse_s3_body,
)
from worker.model.events import ObjectEvent
from worker.settings import DEFAULT_MODEL_PATTERNS

FILTER = EventFilter(DEFAULT_MODEL_PATTERNS, ("tfcompat-reports/",))


def created(key: str, name: str = "ObjectCreated:Put") -> ObjectEvent:
    return ObjectEvent("b", key, name)


WANTED = [
    # models and the parts of a SavedModel that are checked
    ("team/m/1/saved_model.pb", True),
    ("team/m/1/variables/variables.index", True),
    ("frozen/graph.pbtxt", True),
    ("ckpt/model.ckpt-100.index", True),
    ("sagemaker/model.tar.gz", True),
    # parts of a SavedModel that are no model, and everything else
    ("team/m/1/fingerprint.pb", False),
    ("team/m/1/keras_metadata.pb", False),
    ("team/m/1/assets/vocab.pb", False),
    ("team/m/1/variables/variables.data-00000-of-00001", False),
    ("docs/readme.md", False),
    # our own writes never start work
    ("tfcompat-reports/b/team/m/1/saved_model.pb/latest.json", False),
    ("tfcompat-reports/b/x.pb", False),
]


@pytest.mark.parametrize(("key", "wanted"), WANTED)
def test_which_keys_start_work(key: str, wanted: bool) -> None:
    assert FILTER.wants(created(key)) is wanted


def test_tagging_events_start_nothing() -> None:
    assert not FILTER.wants(created("m/saved_model.pb", "ObjectTagging:Put"))
    assert FILTER.wants(created("m/saved_model.pb", "ObjectRemoved:Delete"))


def test_keys_are_url_decoded_with_plus_as_space() -> None:
    body = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {
                    "bucket": {"name": "b"},
                    "object": {"key": "a+b%2Fc%2Bd.pb", "sequencer": "0A"},
                },
            }
        ]
    }
    (event,) = parse_s3_body(json.dumps(body))
    assert event.key == "a b/c+d.pb" and event.sequencer == "0A"


def test_sns_envelope_and_eventbridge_in_a_queue() -> None:
    inner = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": "b"}, "object": {"key": "k.pb"}},
            }
        ]
    }
    envelope = json.dumps({"Type": "Notification", "Message": json.dumps(inner)})
    assert [e.source for e in parse_queue_message(envelope)] == ["sns"]
    bridge = {
        "source": "aws.s3",
        "detail-type": "Object Created",
        "detail": {"bucket": {"name": "b"}, "object": {"key": "a b.pb"}},
    }
    (event,) = parse_eventbridge_body(json.dumps(bridge))
    assert event.key == "a b.pb"  # EventBridge keys are not URL-encoded


@given(st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_any_body_gives_events_or_malformed_event(body: bytes | str) -> None:
    for parse in (parse_s3_body, parse_eventbridge_body):
        with contextlib.suppress(MalformedEvent):
            parse(body)
    with contextlib.suppress(MalformedEvent):
        parse_queue_message(body if isinstance(body, str) else body.decode("latin-1"))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_any_json_gives_events_or_malformed_event(doc: object) -> None:
    body = json.dumps({"Records": [doc]} if isinstance(doc, dict) else doc)
    with contextlib.suppress(MalformedEvent):
        parse_s3_body(body)


# MinIO's metadata-only ObjectCreated events (tags, retention, legal hold) start nothing;
# every event that writes bytes does, whatever carried it.
@pytest.mark.parametrize(
    ("name", "wanted"),
    [
        ("ObjectCreated:Put", True),
        ("ObjectCreated:Post", True),
        ("ObjectCreated:Copy", True),
        ("ObjectCreated:CompleteMultipartUpload", True),
        ("ObjectCreated:PutObject", True),  # EventBridge's reason
        ("ObjectCreated:PutTagging", False),
        ("ObjectCreated:DeleteTagging", False),
        ("ObjectCreated:PutRetention", False),
        ("ObjectCreated:PutLegalHold", False),
        ("ObjectTagging:Put", False),  # AWS's own tagging events
        ("ObjectRemoved:Delete", True),
    ],
)
def test_which_event_names_start_work(name: str, wanted: bool) -> None:
    assert FILTER.wants(created("m/1/saved_model.pb", name)) is wanted


def test_minio_s3_prefixed_tagging_event_is_parsed_and_ignored() -> None:
    body = {
        "Records": [
            {
                "eventName": "s3:ObjectCreated:PutTagging",
                "s3": {"bucket": {"name": "models"}, "object": {"key": "m/1/saved_model.pb"}},
            }
        ]
    }
    (event,) = parse_s3_body(json.dumps(body))
    assert event.event_name == "ObjectCreated:PutTagging" and not FILTER.wants(event)


# Sizes: numbers and digit strings within range; absurd ones are malformed, not converted.
@pytest.mark.parametrize(
    ("size", "parsed"),
    [
        (1024, 1024),
        ("1024", 1024),
        (None, None),
        (True, None),
        ("12kB", None),
        (1.5, None),
    ],
)
def test_sizes(size: object, parsed: int | None) -> None:
    body = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": "b"}, "object": {"key": "k.pb", "size": size}},
            }
        ]
    }
    (event,) = parse_s3_body(json.dumps(body))
    assert event.size == parsed


@pytest.mark.parametrize("size", ["5" * 5000, 10**4000, -1, 1 << 63])
def test_absurd_sizes_are_malformed(size: object) -> None:
    body = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": "b"}, "object": {"key": "k.pb", "size": size}},
            }
        ]
    }
    with pytest.raises(MalformedEvent, match="size"):
        parse_s3_body(json.dumps(body))


def test_deep_nesting_is_malformed_not_a_recursion_error() -> None:
    with pytest.raises(MalformedEvent, match="not JSON"):
        parse_s3_body("[" * 100_000 + "]" * 100_000)
