"""Report names and tags: the report tag always holds the report's key, our four tag
keys are the only ones we touch."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.model.events import ObjectEvent
from worker.sinks.reports import report_key, report_tag, tag_safe_key
from worker.sinks.tags import MAX_TAGS, merge_tags

PREFIX = "tfcompat-reports/"


def key_of(key: str, version: str | None = None) -> str:
    return report_key(PREFIX, ObjectEvent("models", key, "ObjectCreated:Put", version_id=version))


# Keys whose report keeps its readable name.
@pytest.mark.parametrize(
    ("key", "version", "expected"),
    [
        ("ranking/1/saved_model.pb", None, "ranking/1/saved_model.pb/latest.json"),
        ("ranking/new op/1/saved_model.pb", "v1", "ranking/new op/1/saved_model.pb/v1.json"),
        ("a+b=c@d:e_f.pb", None, "a+b=c@d:e_f.pb/latest.json"),
    ],
)
def test_a_readable_key_keeps_its_name(key: str, version: str | None, expected: str) -> None:
    assert key_of(key, version) == f"{PREFIX}models/{expected}"


# Keys whose report is named by the key's digest: outside the tag alphabet, ambiguous, long.
@pytest.mark.parametrize(
    "key",
    [
        "my model (v2)/frozen.pb",
        "a,b;c/frozen.pb",
        "%2e%2e/frozen.pb",
        "x/../y/frozen.pb",
        "./frozen.pb",
        "a//frozen.pb",
        "/frozen.pb",
        "modèle/frozen.pb",
        "deep/" + "k" * 1010 + "/frozen.pb",
    ],
)
def test_any_other_key_gets_a_digest_name_that_is_a_tag_value(key: str) -> None:
    name = key_of(key, "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo")
    assert tag_safe_key(name) and report_tag(name) == name
    assert "/" not in name.removeprefix(f"{PREFIX}models/")  # never a readable name's shape


@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300))
def test_different_keys_never_share_a_report(a: str, b: str) -> None:
    if a != b:
        assert key_of(a) != key_of(b)


@given(st.text(min_size=1, max_size=1024))
def test_every_report_key_is_a_tag_value(key: str) -> None:
    assert report_tag(key_of(key)) == key_of(key)


def test_a_prefix_outside_the_tag_alphabet_gives_no_report_tag() -> None:
    name = report_key("reports (v1)/", ObjectEvent("models", "m.pb", "ObjectCreated:Put"))
    assert report_tag(name) is None


def tags(**pairs: str) -> list[dict[str, str]]:
    return [{"Key": k.replace("__", ":").replace("_", "-"), "Value": v} for k, v in pairs.items()]


def test_a_users_own_tfcompat_tags_are_theirs() -> None:
    existing = tags(tfcompat__approved_by="alice", tfcompat__status="incompatible", team="ml")
    merge = merge_tags(existing, {"tfcompat:status": "compatible"})
    assert {t["Key"]: t["Value"] for t in merge.tags} == {
        "tfcompat:approved-by": "alice",
        "team": "ml",
        "tfcompat:status": "compatible",
    }


def test_a_users_tfcompat_tags_count_against_the_room_for_ours() -> None:
    existing = [{"Key": f"tfcompat:user-{i}", "Value": "x"} for i in range(MAX_TAGS - 2)]
    ours = {"tfcompat:status": "ok", "tfcompat:releases": "none", "tfcompat:report": "r"}
    merge = merge_tags(existing, ours)
    assert len(merge.tags) == MAX_TAGS
    assert merge.dropped == ["tfcompat:report"]


# An unsafe tag takes the graph-def tag's place: never more than four of ours.
def test_the_unsafe_tag_replaces_the_graph_def_tag() -> None:
    from worker.sinks import tags as T

    ours = {
        T.STATUS: "at-risk",
        T.RELEASES: "2.10.0-2.21.x",
        T.GRAPH_DEF: "producer 2474 min-consumer 0",
        T.REPORT: "tfcompat-reports/m/a.json",
        T.UNSAFE: "file-io=ReadFile",
    }
    user = [{"Key": "team", "Value": "x"}, {"Key": T.UNSAFE + "-note", "Value": "theirs"}]
    merge = T.merge_tags(user, ours)
    assert set(merge.written) == {T.STATUS, T.RELEASES, T.REPORT, T.UNSAFE}
    assert {"Key": T.UNSAFE + "-note", "Value": "theirs"} in merge.tags
    # re-checked clean: our old unsafe tag goes, the user's stay
    clean = {k: v for k, v in ours.items() if k != T.UNSAFE}
    again = T.merge_tags(merge.tags, clean)
    assert T.UNSAFE not in {t["Key"] for t in again.tags}
    assert {"Key": "team", "Value": "x"} in again.tags


# The fleet digest rides at the end of the third of our tags (no fifth tag of ours).
def test_the_fleet_digest_ends_the_graph_def_value_and_is_read_back() -> None:
    from worker.sinks import tags as T

    value = T.with_fleet("producer 2474 min-consumer 0", "3f2a9c1b7d004e12")
    assert value == "producer 2474 min-consumer 0 fleet=3f2a9c1b7d004e12"
    assert T.fleet_of([{"Key": T.GRAPH_DEF, "Value": value}]) == "3f2a9c1b7d004e12"


def test_a_model_without_a_graph_version_carries_the_digest_alone() -> None:
    from worker.sinks import tags as T

    assert T.with_fleet(None, "3f2a9c1b7d004e12") == "fleet=3f2a9c1b7d004e12"
    assert T.fleet_of([{"Key": T.GRAPH_DEF, "Value": "fleet=3f2a9c1b7d004e12"}])


def test_a_long_unsafe_value_is_shortened_to_keep_the_digest() -> None:
    from worker.sinks import tags as T

    value = T.with_fleet("python=" + "Lambda," * 60, "3f2a9c1b7d004e12")
    assert len(value) <= T.MAX_VALUE
    assert T.fleet_of([{"Key": T.UNSAFE, "Value": value}]) == "3f2a9c1b7d004e12"


def test_tags_without_a_digest_or_from_a_user_name_no_fleet() -> None:
    from worker.sinks import tags as T

    assert T.fleet_of([{"Key": T.GRAPH_DEF, "Value": "producer 2474 min-consumer 0"}]) is None
    assert T.fleet_of([{"Key": "note", "Value": "fleet=3f2a9c1b7d004e12"}]) is None
