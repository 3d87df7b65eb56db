"""What one upload costs on a real S3 endpoint (moto's server): the requests the work
needs and no more. Owners routed on the object's own metadata are found from the
metadata its GET returned, not from a HEAD of their own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.services import AWS_ENV, s3
from tests.truth import SHARED
from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.notify.dispatch import MemoryNotifier
from worker.once import MemoryClaims
from worker.pipeline.notifications import notification_hook
from worker.pipeline.process import ReportLocation, process_event
from worker.pipeline.services import build_checker
from worker.settings import Settings
from worker.sinks.s3 import S3ObjectStore

pytestmark = pytest.mark.services
FROZEN = SHARED / "artifacts/tf2.21/frozen_graph/frozen_graph.pb"
OWNERS = """
owners:
  - name: vision
    slack: [webhook: TFCOMPAT_SLACK_WEBHOOK_VISION]
  - name: platform
    slack: [webhook: TFCOMPAT_SLACK_WEBHOOK_URL]
routes:
  - metadata: {team: vision}
    owner: vision
    notify: [incompatible, at-risk, compatible]
default:
  owner: platform
  notify: [incompatible]
"""


def counted(client: Any) -> Counter[str]:
    """Every S3 operation the client sends, by name."""
    calls: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    client.meta.events.register("before-call.s3", count)
    return calls


def test_a_frozen_graph_costs_its_get_the_report_and_the_tags_and_routes_on_its_metadata(
    endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TFCOMPAT_SLACK_WEBHOOK_VISION", "https://hooks.slack.example/T/B/v")
    client = s3(endpoint)
    client.create_bucket(Bucket="requests")
    client.put_object(
        Bucket="requests",
        Key="edge/frozen.pb",
        Body=FROZEN.read_bytes(),
        Metadata={"team": "vision"},
    )
    owners = tmp_path / "owners.yaml"
    owners.write_text(OWNERS)
    settings = Settings(
        s3_endpoint_url=endpoint,
        fleet="config/fleet.yaml",
        owners=str(owners),
        slack_webhook_url="https://hooks.slack.example/T/B/x",
    )
    store = S3ObjectStore(client, settings)
    notifier = MemoryNotifier()
    notify = notification_hook(settings, store, notifier, MemoryClaims())
    assert notify is not None
    calls = counted(client)
    event = ObjectEvent("requests", "edge/frozen.pb", "ObjectCreated:Put")
    outcome = process_event(
        event, store, build_checker(settings), ReportLocation(None, "r/"), ReadPolicy()
    )
    notify(event, outcome)
    assert outcome.action == "checked"
    assert [destination.key for destination, _ in notifier.sent] == [
        "webhook:TFCOMPAT_SLACK_WEBHOOK_VISION"
    ]
    assert calls == Counter(
        {"GetObject": 1, "PutObject": 1, "GetObjectTagging": 1, "PutObjectTagging": 1}
    )
