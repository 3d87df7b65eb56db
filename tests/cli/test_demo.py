"""`make demo`: its own Redis, a stack left running on request, stopped by its own ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.kept_demo import ENV, STACK, KeptDemo, demo
from tests.redis_server import REDIS_PORT, redis_url
from worker.cli.demo import KEPT_INSTRUCTIONS
from worker.cli.demo_stack import (
    REDIS_URL_VARIABLE,
    DemoError,
    Stack,
    alive,
    start_redis,
    start_time,
    stop_recorded,
)

CLI = [sys.executable, "-m", "worker.cli"]


def test_without_redis_server_the_demo_says_how_to_pick_a_redis(tmp_path: Path) -> None:
    result = demo("--state", str(tmp_path / "state"), env={**ENV, "PATH": str(tmp_path)})
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert "redis-server is not installed" in line and REDIS_URL_VARIABLE in line
    assert "Traceback" not in result.stdout


def test_a_chosen_redis_is_emptied_and_said_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = redis_url(14)
    redis.Redis.from_url(url).set("left-over", "1")
    monkeypatch.setenv(REDIS_URL_VARIABLE, url)
    stack = Stack(tmp_path)
    assert start_redis(stack) == url
    assert stack.processes == {}  # nothing started
    assert redis.Redis.from_url(url).dbsize() == 0
    assert "its database emptied" in stack.notes[-1]


def test_a_chosen_redis_that_does_not_answer_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(REDIS_URL_VARIABLE, "redis://127.0.0.1:1/0")
    with pytest.raises(DemoError, match=r"redis://127\.0\.0\.1:1/0: Redis does not answer"):
        start_redis(Stack(tmp_path))


def test_stop_ends_only_the_processes_recorded(tmp_path: Path) -> None:
    ours = subprocess.Popen(["sleep", "60"], start_new_session=True)
    reused = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        record = {
            "mine": {"pid": ours.pid, "started": start_time(ours.pid)},
            # the same pid number, a process started at another time: not ours any more
            "gone": {"pid": reused.pid, "started": "1"},
        }
        (tmp_path / "stack.json").write_text(json.dumps(record))
        assert stop_recorded(tmp_path) == ["mine"]
        assert ours.wait(15) is not None
        assert reused.poll() is None and alive(reused.pid, start_time(reused.pid))
        assert not (tmp_path / "stack.json").exists()
    finally:
        reused.kill()
        ours.kill()
        reused.wait()
        ours.wait()


@pytest.mark.services
def test_kept_demo_runs_on_its_own_redis(kept_demo: KeptDemo, tmp_path: Path) -> None:
    """The kept stack (its stop is checked where the suite's fixture ends it)."""
    assert "legacy-edge FAILS" in kept_demo.stdout
    assert "tfcompat fleet impact" in kept_demo.stdout and "make demo-stop" in kept_demo.stdout
    assert KEPT_INSTRUCTIONS in kept_demo.stdout  # as docs/getting-started.md quotes it
    assert "shared/" not in kept_demo.stdout
    assert "s after upload)" in kept_demo.stdout
    assert kept_demo.env["DEMO_RECEIVER_URL"].startswith("http://127.0.0.1:")
    env = kept_demo.env
    port = int(env["TFCOMPAT_BROKER_URL"].rsplit(":", 1)[1].split("/")[0])
    assert port not in (6379, REDIS_PORT)
    assert set(kept_demo.record) == set(STACK)
    # the registered MLflow version is in the table, with the verdict of its upload twin
    lines = kept_demo.stdout.splitlines()
    (row,) = [line for line in lines if line.startswith("MLflow version")]
    (twin,) = [line for line in lines if line.startswith("new op DecodeWebP")]
    assert "mlflow://vision-dnn/1" in row
    verdict = row.split("incompatible", 1)[1].split()  # releases, then each consumer's
    assert verdict == twin.split("incompatible", 1)[1].split()
    # the stack outlived the demo: the index it built answers a fleet change
    impact = subprocess.run(
        [*CLI, "fleet", "impact", "--add-consumer", "tf==2.10", "--json"],
        capture_output=True,
        text=True,
        env={**ENV, **env},
        cwd=tmp_path,
        timeout=300,
    )
    assert impact.returncode == 1, impact.stderr  # DecodeWebP cannot load in 2.10
    found = json.loads(impact.stdout)
    assert found["models_examined"] >= 7
    # a catalog release: every verdict, errors included, recorded when the worker
    # checked the model (its report's release_verdicts), none checked again
    assert found["checks_run"] == 0 and found["consumers_rechecked"] == ["tf-2.10.1"]
    judged = [
        m for m in found["changed"] if any(c["consumer"] == "tf-2.10.1" for c in m["changes"])
    ]
    assert found["verdicts_recorded_at_upload"] == len(judged) >= 7  # all but invalid ones
    reasons = [r for m in found["changed"] for c in m["changes"] for r in c["reasons"]]
    assert any("DecodeWebP" in r for r in reasons)
