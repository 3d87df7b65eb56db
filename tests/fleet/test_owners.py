"""Owners files: routes by location, tags and metadata; secrets only by name; errors at lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.errors import ConfigError
from worker.notify.owners import (
    DEFAULT_NOTIFY,
    DEFAULT_WEBHOOK,
    SlackDestination,
    default_owners,
    glob_regex,
    load_owners,
)

ROOT = Path(__file__).resolve().parents[2]

OWNERS = """
owners:
  - name: ranking
    team: Ranking
    slack:
      - webhook: TFCOMPAT_SLACK_WEBHOOK_RANKING
      - channel: "#ranking"
    github: acme/ranking-models
  - name: search
  - name: platform
routes:
  - locations: ["s3://models/ranking/**"]
    owner: ranking
    notify: [incompatible]
  - tags: {team: search*}
    owner: search
  - metadata: {Team: platform}
    owner: platform
  - owner_tag: owner
default:
  owner: platform
  notify: incompatible
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "owners.yaml"
    path.write_text(text)
    return path


# Globs: `**` crosses '/', `*` and `?` stay inside one segment.
@pytest.mark.parametrize(
    ("pattern", "url", "matches"),
    [
        ("s3://models/ranking/**", "s3://models/ranking/a/b/saved_model.pb", True),
        ("s3://models/ranking/**", "s3://models/search/a.pb", False),
        ("s3://models/*/v1.pb", "s3://models/ranking/v1.pb", True),
        ("s3://models/*/v1.pb", "s3://models/ranking/x/v1.pb", False),
        ("s3://models-*/**", "s3://models-eu/x.pb", True),
        ("s3://models/a?.pb", "s3://models/ab.pb", True),
        ("s3://models/a.pb", "s3://models/aXpb", False),  # '.' is literal
    ],
)
def test_location_globs(pattern: str, url: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(url)) is matches


def test_location_route_wins_first(tmp_path: Path) -> None:
    routing = load_owners(write(tmp_path, OWNERS)).route(
        "models", "ranking/v3/1/saved_model.pb", tags={"team": "search"}
    )
    assert routing.owner.name == "ranking"
    assert routing.notify == frozenset({"incompatible"})
    assert routing.route.endswith("owners.yaml:12")
    assert routing.owner.slack == (
        SlackDestination(webhook="TFCOMPAT_SLACK_WEBHOOK_RANKING"),
        SlackDestination(channel="#ranking"),
    )
    assert routing.owner.github == "acme/ranking-models"


def test_tag_route_matches_value_globs(tmp_path: Path) -> None:
    routing = load_owners(write(tmp_path, OWNERS)).route("b", "k.pb", tags={"team": "search-eu"})
    assert routing.owner.name == "search"
    assert routing.notify == DEFAULT_NOTIFY  # incompatible and at-risk


def test_metadata_keys_match_case_insensitively(tmp_path: Path) -> None:
    routing = load_owners(write(tmp_path, OWNERS)).route("b", "k.pb", metadata={"team": "platform"})
    assert routing.owner.name == "platform"
    assert routing.route != "default"


def test_owner_tag_names_the_owner(tmp_path: Path) -> None:
    owners = load_owners(write(tmp_path, OWNERS))
    assert owners.route("b", "k.pb", tags={"owner": "search"}).owner.name == "search"
    assert owners.route("b", "k.pb", metadata={"owner": "ranking"}).owner.name == "ranking"


def test_owner_tag_naming_nobody_falls_to_the_default_with_a_note(tmp_path: Path) -> None:
    routing = load_owners(write(tmp_path, OWNERS)).route("b", "k.pb", tags={"owner": "ghost"})
    assert (routing.owner.name, routing.route) == ("platform", "default")
    assert routing.notify == frozenset({"incompatible"})
    assert routing.note is not None and "ghost" in routing.note


def test_owner_without_slack_posts_to_the_default_webhook(tmp_path: Path) -> None:
    owners = load_owners(write(tmp_path, OWNERS))
    assert owners.owners["search"].slack == (SlackDestination(webhook=DEFAULT_WEBHOOK),)


def test_which_labels_the_routes_need(tmp_path: Path) -> None:
    owners = load_owners(write(tmp_path, OWNERS))
    assert owners.uses_tags and owners.uses_metadata
    assert not default_owners().uses_tags


def test_no_default_routes_to_the_default_webhook(tmp_path: Path) -> None:
    owners = load_owners(write(tmp_path, "owners: [{name: a}]\n"))
    routing = owners.route("b", "k.pb")
    assert routing.owner.slack == (SlackDestination(webhook=DEFAULT_WEBHOOK),)
    assert routing.notify == DEFAULT_NOTIFY


def test_repository_finds_its_owner(tmp_path: Path) -> None:
    owners = load_owners(write(tmp_path, OWNERS))
    owner = owners.for_repository("Acme/Ranking-Models")
    assert owner is not None and owner.name == "ranking"
    assert owners.for_repository("acme/other") is None


def test_the_example_owners_file_loads() -> None:
    owners = load_owners(ROOT / "config" / "owners.yaml")
    assert owners.route("models", "ranking/a/saved_model.pb").owner.name == "ranking"
    assert owners.route("other", "x.pb").owner.name == owners.default.owner


# Errors name the file and the line of the entry at fault; secrets in the file are refused.
@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (
            "owners:\n  - name: a\n    slack:\n      - webhook: https://hooks.slack.com/services/T/B/X\n",
            4,
            "looks like a secret",
        ),
        (
            "owners:\n  - name: a\n    slack:\n      - channel: '#a'\n        token: xoxb-123\n",
            4,
            "looks like a secret",
        ),
        ("owners:\n  - name: a\n    slack:\n      - webhook: SLACK_URL\n", 4, "not a TFCOMPAT_"),
        ("owners:\n  - name: a\nroutes:\n  - owner: b\n", 4, "unknown owner 'b'"),
        (
            "owners:\n  - name: a\nroutes:\n  - owner: a\n    notify: [broken]\n",
            4,
            "unknown status",
        ),
        ("owners:\n  - name: a\nroutes:\n  - locations: [models/*]\n    owner: a\n", 4, "s3://"),
        ("owners:\n  - name: a\n  - name: a\n", 3, "duplicate owner"),
        ("owners:\n  - name: a\n    github: not a repo\n", 2, "OWNER/REPOSITORY"),
        ("owners:\n  - name: a\ndefault:\n  owner_tag: owner\n", 4, "names an owner"),
        ("owners:\n  - name: a\ndefault:\n  owner: a\n  tags: {x: y}\n", 4, "no conditions"),
        (
            "owners:\n  - name: a\nroutes:\n  - owner: a\n    owner_tag: o\n",
            4,
            "owner or owner_tag",
        ),
    ],
)
def test_errors_point_at_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as error:
        load_owners(path)
    assert f"{path}:{line}:" in str(error.value)
    assert words in str(error.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_owners(tmp_path / "nope.yaml")
