"""Telling owners: routing and policy, one message per (destination, artifact version,
verdict), retries after failures, one message per owner for many models."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.sinks.documents import NEW_OP, STRIPPED, UNSTRIPPED, checked
from worker.errors import DestinationBroken, TransientError
from worker.notify.dispatch import MemoryNotifier, group_by_owner, notify_owners
from worker.notify.owners import Owners, load_owners
from worker.once import MemoryClaims
from worker.pipeline.notifications import notification_hook
from worker.pipeline.services import Services
from worker.settings import Settings

TTL = 3600
OWNERS = """
owners:
  - name: ranking
    team: Ranking
    slack: [{webhook: TFCOMPAT_SLACK_WEBHOOK_RANKING}, {channel: "#ranking"}]
  - name: search
    slack: [{webhook: TFCOMPAT_SLACK_WEBHOOK_SEARCH}]
  - name: platform
routes:
  - locations: ["s3://models/ranking/**"]
    owner: ranking
  - owner_tag: owner
default:
  owner: platform
  notify: [incompatible]
"""


@pytest.fixture
def owners_file(tmp_path: Path) -> Path:
    path = tmp_path / "owners.yaml"
    path.write_text(OWNERS)
    return path


@pytest.fixture
def owners(owners_file: Path) -> Owners:
    return load_owners(owners_file)


@functools.cache
def _document(model: Path, prefix: str) -> dict[str, Any]:
    _, outcome, _ = checked(model, prefix=prefix)
    assert outcome.document is not None
    return outcome.document


def document(model: Path, prefix: str = "ranking/m/1") -> dict[str, Any]:
    return copy.deepcopy(_document(model, prefix))


def test_one_message_per_destination_then_duplicates_post_nothing(owners: Owners) -> None:
    notifier, claims = MemoryNotifier(), MemoryClaims()
    groups = {"ranking": [document(NEW_OP)]}
    first = notify_owners(groups, owners, notifier, claims, ttl=TTL)
    again = notify_owners(groups, owners, notifier, claims, ttl=TTL)
    assert [d.result for d in first] == ["sent", "sent"]
    assert [d.result for d in again] == ["duplicate", "duplicate"]
    assert [dest.key for dest, _ in notifier.sent] == [
        "webhook:TFCOMPAT_SLACK_WEBHOOK_RANKING",
        "channel:#ranking",
    ]


def test_a_new_verdict_for_the_same_version_is_told_again(owners: Owners) -> None:
    notifier, claims = MemoryNotifier(), MemoryClaims()
    doc = document(NEW_OP)
    notify_owners({"ranking": [doc]}, owners, notifier, claims, ttl=TTL)
    changed = copy.deepcopy(doc)
    changed["artifacts"][0]["consumers"][1]["loads"] = False  # a fleet change: canary fails too
    notify_owners({"ranking": [changed]}, owners, notifier, claims, ttl=TTL)
    assert len(notifier.sent) == 4


def test_a_failed_message_releases_its_claim_so_a_retry_posts(owners: Owners) -> None:
    claims = MemoryClaims()
    failing = MemoryNotifier(fail={"channel:#ranking": TransientError("slack 503")})
    first = notify_owners({"ranking": [document(NEW_OP)]}, owners, failing, claims, ttl=TTL)
    assert [d.result for d in first] == ["sent", "failed"]
    healthy = MemoryNotifier()
    notify_owners({"ranking": [document(NEW_OP)]}, owners, healthy, claims, ttl=TTL)
    assert [dest.key for dest, _ in healthy.sent] == ["channel:#ranking"]


def test_claims_expire_when_a_process_died_before_confirming(owners: Owners) -> None:
    now = [0.0]
    claims = MemoryClaims(now=lambda: now[0])
    doc = document(NEW_OP)
    from worker.notify.dispatch import dedupe_key
    from worker.notify.owners import SlackDestination

    key = dedupe_key(SlackDestination(webhook="TFCOMPAT_SLACK_WEBHOOK_RANKING"), doc)
    assert claims.claim(key, 600) is not None  # taken, then the process died
    notifier = MemoryNotifier()
    notify_owners({"ranking": [doc]}, owners, notifier, claims, ttl=TTL)
    assert len(notifier.sent) == 1  # only the channel: the webhook's claim is held
    now[0] = 601
    notify_owners({"ranking": [doc]}, owners, notifier, claims, ttl=TTL)
    assert len(notifier.sent) == 2


def test_a_broken_destination_is_logged_once(owners: Owners) -> None:
    claims = MemoryClaims()
    notifier = MemoryNotifier(
        fail={"webhook:TFCOMPAT_SLACK_WEBHOOK_SEARCH": DestinationBroken("404 no_service")}
    )
    with capture_logs() as logs:
        for i in range(3):
            doc = document(NEW_OP)
            doc["object"]["key"] = f"search/m{i}/saved_model.pb"
            deliveries = notify_owners({"search": [doc]}, owners, notifier, claims, ttl=TTL)
            assert [d.result for d in deliveries] == ["broken"]
    errors = [e for e in logs if e["log_level"] == "error"]
    assert [e["event"] for e in errors] == ["slack.destination_broken"]
    assert "404 no_service" in errors[0]["error"]


def test_several_models_for_one_owner_make_one_message(owners: Owners) -> None:
    docs = []
    for i in range(3):
        doc = document(NEW_OP)
        doc["object"]["key"] = f"ranking/m{i}/saved_model.pb"
        docs.append(doc)
    notifier, claims = MemoryNotifier(), MemoryClaims()
    notify_owners({"ranking": docs}, owners, notifier, claims, ttl=TTL, reason="fleet change")
    assert len(notifier.sent) == 2  # one per destination
    notify_owners({"ranking": docs[:2]}, owners, notifier, claims, ttl=TTL)
    assert len(notifier.sent) == 2  # nothing new to say


def test_grouping_follows_routes_and_their_policy(owners: Owners) -> None:
    incompatible = document(NEW_OP, "other/a")
    tagged = document(NEW_OP, "other/b")
    at_risk = document(UNSTRIPPED, "other/c")
    at_risk["status"] = "at-risk"
    compatible = document(STRIPPED, "ranking/d")
    compatible["status"] = "compatible"  # as if the fleet had no legacy consumer
    labels = {"other/b/saved_model.pb": {"owner": "search"}}
    groups = group_by_owner(
        [incompatible, tagged, at_risk, compatible],
        owners,
        lambda d: (labels.get(d["object"]["key"], {}), {}),
    )
    assert {k: [d["object"]["key"] for d in v] for k, v in groups.items()} == {
        "platform": ["other/a/saved_model.pb"],  # the default route tells incompatible only
        "search": ["other/b/saved_model.pb"],
    }


def test_hook_tells_the_owner_named_by_the_object_tag(owners_file: Path) -> None:
    event, outcome, store = checked(
        NEW_OP, prefix="misc/m/1", tags=[{"Key": "owner", "Value": "search"}]
    )
    notifier = MemoryNotifier()
    settings = Settings(owners=str(owners_file))
    hook = notification_hook(settings, store, notifier, MemoryClaims())
    assert hook is not None
    services = Services(store, None, None, None, hooks=[hook])  # type: ignore[arg-type]
    services.after(event, outcome)
    services.after(event, outcome)  # a redelivered task
    ((destination, message),) = notifier.sent
    assert destination.key == "webhook:TFCOMPAT_SLACK_WEBHOOK_SEARCH"
    assert "misc/m/1" in message.blocks[0]["text"]["text"]
    assert "report `tfcompat-reports/models/misc/m/1/saved_model.pb/v1.json`" in str(message.blocks)


def test_no_owners_file_and_no_webhook_means_notifications_off(tmp_path: Path) -> None:
    settings = Settings(owners=str(tmp_path / "none.yaml"))
    assert notification_hook(settings, None, MemoryNotifier(), MemoryClaims()) is None  # type: ignore[arg-type]


class DiesAfterSending(MemoryNotifier):
    """Slack takes the message, then the sender dies before it can mark it sent."""

    def send(self, destination: Any, message: Any, delivery: str) -> None:
        super().send(destination, message, delivery)
        raise SystemExit("killed")


# A sender killed after Slack took the message: the redelivery asks a channel for the
# delivery id the message carries and sends nothing; a webhook cannot be asked, and
# gets the message a second time (the window incoming webhooks leave).
@pytest.mark.parametrize(
    ("destination", "messages"),
    [('{channel: "#ranking"}', 1), ("{webhook: TFCOMPAT_SLACK_WEBHOOK_RANKING}", 2)],
)
def test_a_sender_killed_after_slack_took_it(
    tmp_path: Path, destination: str, messages: int
) -> None:
    path = tmp_path / "owners.yaml"
    path.write_text(
        f"owners:\n  - name: ranking\n    slack: [{destination}]\ndefault:\n  owner: ranking\n"
    )
    owners = load_owners(path)
    clock = [0.0]
    claims = MemoryClaims(now=lambda: clock[0])
    dying = DiesAfterSending()
    groups = {"ranking": [document(NEW_OP)]}
    with pytest.raises(SystemExit):
        notify_owners(groups, owners, dying, claims, ttl=TTL, lease=3)
    clock[0] += 10  # the dead sender's lease lapses
    redelivered = MemoryNotifier(deliveries=set(dying.deliveries))
    (result,) = notify_owners(groups, owners, redelivered, claims, ttl=TTL, lease=3)
    assert result.result == "sent"
    assert len(dying.sent) + len(redelivered.sent) == messages
    again = notify_owners(groups, owners, redelivered, claims, ttl=TTL, lease=3)
    assert [d.result for d in again] == ["duplicate"]
