"""Slack is told once per upload even when pool processes are SIGKILLed while they post.

A real worker (prefork pool, tasks acknowledged late and requeued when their process
dies) notifies the Slack stand-in about every upload. The stand-in kills, at random,
the pool process whose request it is holding:
- before Slack takes the message (the sender vanished mid-request): the redelivered
  task must wait for the dead process's lease to lapse and send it, exactly once;
- after Slack took it but before the answer reached the sender: with a bot token and a
  channel, the redelivered task finds the message's delivery id in the channel's history
  and sends nothing more: exactly once. An incoming webhook cannot be asked: the one
  window it leaves, so the redelivered task sends again: never lost, one extra message
  per such kill (docs/operating/what-is-kept.md).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pipeline.conftest import _redis_ready
from tests.pipeline.services import (
    cli,
    process,
    s3,
    s3_event,
    upload_tree,
    wait_for_tags,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.standins.http import Request
from tests.standins.slack import SlackStandIn
from tests.truth import SHARED
from worker.ingest.events import parse_records
from worker.pipeline.app import TASK_CHECK_OBJECT, create_app
from worker.settings import Settings

pytestmark = pytest.mark.services
DB = 7
MODEL = SHARED / "artifacts/tf2.21/new_op"  # incompatible with the fleet: always notified
LEASE = 3  # TFCOMPAT_NOTIFY_LEASE here: a killed sender's claim lapses after 3 s


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def sender_of(port: int, candidates: list[int]) -> int | None:
    """The process among `candidates` whose TCP socket has local port `port`."""
    wanted = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    wanted.add(fields[9])
    for pid in candidates:
        if socket_inodes(pid) & wanted:
            return pid
    return None


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


class Killer:
    """Kills the sender of a request with probability `odds`, at most `budget` times."""

    def __init__(self, worker_pid: int, odds: float, budget: int, seed: int) -> None:
        self.worker_pid = worker_pid
        self.odds = odds
        self.budget = budget
        self.random = random.Random(seed)
        self.killed: list[str] = []  # the killed senders' message texts
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> bool:
        with self.lock:
            if len(self.killed) >= self.budget or self.random.random() >= self.odds:
                return True
            pid = sender_of(request.client_port, children(self.worker_pid))
            if pid is None:
                return True
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not os.path.exists(f"/proc/{pid}/fd"), 10, f"{pid} to die")
            self.killed.append(str(request.json()["text"]))
            return False


@pytest.fixture
def slack() -> Iterator[SlackStandIn]:
    with SlackStandIn() as server:
        yield server  # type: ignore[misc]


def run_uploads(
    slack: SlackStandIn,
    endpoint: str,
    logs: Path,
    tmp_path: Path,
    name: str,
    uploads: int,
    channel: bool = False,
) -> tuple[list[str], Counter[str], Counter[str]]:
    """Uploads checked and notified under kills: (keys, messages per key, kills per key).
    `channel`: to `#models` with the bot token, else to the default webhook."""
    _redis_ready(DB)
    client = s3(endpoint)
    bucket = f"kills-{name}"
    client.create_bucket(Bucket=bucket)
    keys = []
    for n in range(uploads):
        upload_tree(client, bucket, f"m/{n}", MODEL)
        keys.append(f"m/{n}/saved_model.pb")
    owners = tmp_path / "owners.yaml"
    if channel:
        owners.write_text(
            'owners:\n  - name: models\n    slack: [{channel: "#models"}]\n'
            "default:\n  owner: models\n"
        )
    env = worker_env(
        endpoint,
        DB,
        # Without the file, everything goes to the default webhook.
        TFCOMPAT_OWNERS=str(owners),
        TFCOMPAT_SLACK_WEBHOOK_URL=slack.webhook_url("models"),
        TFCOMPAT_SLACK_BOT_TOKEN=slack.bot_token,
        TFCOMPAT_SLACK_API_URL=slack.api_url,
        TFCOMPAT_NOTIFY_LEASE=str(LEASE),
    )
    app = create_app(Settings(broker_url=env["TFCOMPAT_BROKER_URL"]))
    log = logs / f"kills-{name}-worker.log"
    with process(cli("worker", "--concurrency", "2", "--hostname", f"{name}@%h"), env, log) as w:
        wait_until(lambda: worker_ready(log), 60, "the worker")
        killer = Killer(w.pid, odds=0.5, budget=uploads // 2, seed=11)
        if name.startswith("before"):
            slack.before_taking = killer
        else:
            slack.after_taking = killer
        for key in keys:
            (event,) = parse_records(s3_event(client, bucket, key))
            app.send_task(TASK_CHECK_OBJECT, args=[event.to_json()])
        for key in keys:
            wait_for_tags(client, bucket, key)
        # Killed tasks never succeed; their redeliveries do, after notifying.
        wait_until(lambda: succeeded(log) >= uploads, 180, "every task to succeed")
        per_upload = messages_per_upload(slack, bucket, keys)
    print(
        f"\nSlack, kills {name} Slack takes it: {uploads} uploads, {len(killer.killed)} "
        f"senders killed, {sum(per_upload.values())} messages, per upload {dict(per_upload)}"
    )
    assert killer.killed, "no sender was killed: the test proved nothing"
    assert slack.violations == []
    kills: Counter[str] = Counter()
    for text in killer.killed:
        found = re.search(rf"s3://{bucket}/(\S+?/saved_model\.pb)", text)
        assert found, text
        kills[found.group(1)] += 1
    return keys, per_upload, kills


def succeeded(log: Path) -> int:
    return len(re.findall(r"tfcompat\.check_object\[[^]]+\] succeeded", log.read_text()))


def messages_per_upload(slack: SlackStandIn, bucket: str, keys: list[str]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for _, body in list(slack.messages):
        found = re.search(rf"s3://{bucket}/(\S+?/saved_model\.pb)", body["text"])
        if found and found.group(1) in keys:
            counts[found.group(1)] += 1
    return counts


def test_senders_killed_before_slack_takes_it_still_send_exactly_once(
    slack: SlackStandIn, endpoint: str, logs: Path, tmp_path: Path
) -> None:
    keys, per_upload, _ = run_uploads(slack, endpoint, logs, tmp_path, "before", uploads=12)
    assert per_upload == Counter(dict.fromkeys(keys, 1))


def test_senders_killed_after_slack_took_it_never_lose_the_message(
    slack: SlackStandIn, endpoint: str, logs: Path, tmp_path: Path
) -> None:
    keys, per_upload, kills = run_uploads(slack, endpoint, logs, tmp_path, "after", uploads=4)
    assert per_upload == Counter({key: 1 + kills[key] for key in keys})


def test_senders_killed_after_slack_took_it_send_once_to_a_channel(
    slack: SlackStandIn, endpoint: str, logs: Path, tmp_path: Path
) -> None:
    keys, per_upload, _ = run_uploads(
        slack, endpoint, logs, tmp_path, "after-channel", uploads=6, channel=True
    )
    assert per_upload == Counter(dict.fromkeys(keys, 1))
