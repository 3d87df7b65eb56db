"""A fleet change re-checks every indexed model: exactly the expected tags change,
exactly the expected owners are told once each, and a Redis flush loses nothing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.pipeline.conftest import _redis_ready
from tests.pipeline.services import (
    AWS_ENV,
    cli,
    process,
    s3,
    tags_of,
    upload_tree,
    wait_for_tags,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.redis_server import REDIS_PORT
from tests.truth import SHARED
from worker.fleet.impact import ModelImpact
from worker.model.events import ObjectEvent
from worker.pipeline.app import TASK_CHECK_OBJECT, create_app
from worker.pipeline.reevaluate import reevaluate
from worker.pipeline.services import build_services
from worker.settings import Settings
from worker.sinks.index import HASH

pytestmark = pytest.mark.services
DB = 10
A = SHARED / "artifacts"
MODELS = {  # key prefix -> fixture
    "ranking/new-op/1": A / "tf2.21/new_op",
    "ranking/attr/1": A / "tf2.21/new_attr_nondefault",
    "search/stripped/1": A / "tf2.12/savedmodel_v1_stripped",
    "ads/xlogy/1": A / "tf2.12/new_allowed_value",
}
BEFORE = "consumers:\n  - {name: canary, owners: [platform], tensorflow: '2.21'}\n"
AFTER = BEFORE + "  - {name: batch, owners: [platform], tensorflow: '2.12'}\n"


@pytest.fixture
def indexed(endpoint: str, logs: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Four models checked by a real worker against the fleet BEFORE, reports in one bucket."""
    _redis_ready(DB)
    client = s3(endpoint)
    client.create_bucket(Bucket="fleet-models")
    client.create_bucket(Bucket="fleet-reports")
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(BEFORE)
    after.write_text(AFTER)
    env = worker_env(
        endpoint, DB, TFCOMPAT_FLEET=str(before), TFCOMPAT_REPORT_BUCKET="fleet-reports"
    )
    for prefix, root in MODELS.items():
        upload_tree(client, "fleet-models", prefix, root)
    app = create_app(Settings(broker_url=f"redis://127.0.0.1:{REDIS_PORT}/{DB}"))
    with process(
        cli("worker", "--concurrency", "2", "--hostname", "fleet@%h"),
        env,
        logs / "fleet-worker.log",
    ):
        wait_until(lambda: worker_ready(logs / "fleet-worker.log"), 60, "worker")
        for prefix in MODELS:
            app.send_task(
                TASK_CHECK_OBJECT,
                args=[
                    ObjectEvent(
                        "fleet-models", f"{prefix}/saved_model.pb", "ObjectCreated:Put"
                    ).to_json()
                ],
            )
        tags = {p: wait_for_tags(client, "fleet-models", f"{p}/saved_model.pb") for p in MODELS}
        wait_until(
            lambda: redis.Redis(port=REDIS_PORT, db=DB).hlen(HASH) == len(MODELS),
            30,
            "the index to hold every model",
        )
    yield {"client": client, "env": env, "after": after, "tags": tags}


def test_fleet_change_retags_exactly_the_broken_models_and_tells_owners_once(
    indexed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    client, env = indexed["client"], indexed["env"]
    assert all(
        t["tfcompat:status"] != "incompatible" or "new-op" in p or "attr" in p
        for p, t in indexed["tags"].items()
    )

    redis.Redis(port=REDIS_PORT, db=DB).flushdb()  # the index must come back from the reports

    impact = subprocess.run(
        cli("fleet", "impact", "--fleet", str(indexed["after"]), "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert impact.returncode == 1, impact.stderr
    doc = json.loads(impact.stdout)
    assert doc["models_examined"] == len(MODELS)
    assert doc["consumers_rechecked"] == ["batch"]  # canary is unchanged: its verdicts are reused
    broken = {
        c["object"]
        for c in doc["changed"]
        if any(x["after"] == "incompatible" for x in c["changes"])
    }
    assert broken == {
        "s3://fleet-models/ranking/new-op/1/saved_model.pb",
        "s3://fleet-models/ranking/attr/1/saved_model.pb",
    }

    settings = Settings(
        broker_url=f"redis://127.0.0.1:{REDIS_PORT}/{DB}",
        s3_endpoint_url=env["TFCOMPAT_S3_ENDPOINT_URL"],
        report_bucket="fleet-reports",
        fleet=str(indexed["after"]),
    )
    services = build_services(settings)
    told: list[dict[str, list[ModelImpact]]] = []
    result = reevaluate(
        services.index,
        services.store,
        services.checker,
        services.location,
        route=lambda m: [m.key.split("/")[0]],
        notify=told.append,
    )
    assert result.rewritten == len(doc["changed"])
    (messages,) = told  # one call, coalesced: one message per owner
    assert set(messages) == {"ranking"}
    assert len(messages["ranking"]) == 2

    after = {p: tags_of(client, "fleet-models", f"{p}/saved_model.pb") for p in MODELS}
    changed = {
        p for p in MODELS if after[p]["tfcompat:status"] != indexed["tags"][p]["tfcompat:status"]
    }
    assert changed == {"ranking/new-op/1", "ranking/attr/1"}
    assert all(after[p]["tfcompat:status"] == "incompatible" for p in changed)
    # every re-checked model's tags name the fleet they were computed against
    digest = services.checker.fleet_digest
    assert all(after[p]["tfcompat:graph-def"].endswith(f" fleet={digest}") for p in MODELS)

    # Applying the same fleet again changes nothing and tells nobody.
    told.clear()
    again = reevaluate(
        services.index,
        services.store,
        services.checker,
        services.location,
        route=lambda m: [m.key.split("/")[0]],
        notify=told.append,
    )
    assert again.rewritten == 0 and told == []


def test_a_newly_deployed_fleet_is_claimed_by_one_worker_once(
    endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from worker.pipeline.reevaluate import claim_fleet_change
    from worker.pipeline.services import build_checker
    from worker.sinks.index import FLEET_APPLIED

    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    _redis_ready(DB)
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(AFTER)
    settings = Settings(
        broker_url=f"redis://127.0.0.1:{REDIS_PORT}/{DB}",
        s3_endpoint_url=endpoint,
        fleet=str(fleet),
    )
    enqueued: list[str] = []
    assert claim_fleet_change(settings, enqueued.append)
    assert not claim_fleet_change(settings, enqueued.append)  # a second worker starting
    assert enqueued == [str(fleet)]
    client = redis.Redis(port=REDIS_PORT, db=DB)
    client.set(FLEET_APPLIED, build_checker(settings).fleet_digest)
    client.delete(*client.keys(f"{FLEET_APPLIED}:claim:*"))
    assert not claim_fleet_change(settings, enqueued.append)  # already applied


OWNERS = """
owners:
  - {name: platform, slack: [{webhook: TFCOMPAT_SLACK_WEBHOOK_URL}]}
  - {name: ranking, slack: [{webhook: TFCOMPAT_SLACK_WEBHOOK_RANKING}]}
routes:
  - {locations: ["s3://fleet-models/ranking/**"], owner: ranking}
default: {owner: platform}
"""


def test_fleet_apply_tells_each_owner_once_on_slack(
    indexed: dict[str, Any], tmp_path: Path
) -> None:
    from tests.standins.slack import SlackStandIn

    owners = tmp_path / "owners.yaml"
    owners.write_text(OWNERS)
    with SlackStandIn() as slack:
        env = {
            **indexed["env"],
            "TFCOMPAT_OWNERS": str(owners),
            "TFCOMPAT_SLACK_WEBHOOK_URL": slack.webhook_url("platform"),
            "TFCOMPAT_SLACK_WEBHOOK_RANKING": slack.webhook_url("ranking"),
        }
        command = cli("fleet", "apply", "--fleet", str(indexed["after"]))
        first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
        assert first.returncode == 0, first.stderr
        # all four re-tagged: each tag set now names the new fleet's digest
        assert "updated 4 report(s), re-tagged 4 model(s); told 1 owner(s): ranking" in (
            first.stdout
        )
        assert [path for path, _ in slack.messages] == ["/hooks/ranking"], first.stderr
        (_, message) = slack.messages[0]
        text = json.dumps(message)
        assert "ranking/new-op/1" in text and "ranking/attr/1" in text  # both models in it
        assert slack.violations == []
        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
        assert again.returncode == 0, again.stderr
        assert len(slack.messages) == 1  # nothing new broke: nobody is told again
