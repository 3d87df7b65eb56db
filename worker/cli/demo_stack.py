"""The demo's local stack: its own Redis, a local S3 endpoint and tfcompat's processes.

Everything runs on loopback ports picked free, and the Redis is a `redis-server`
the demo starts itself, so the demo never touches a Redis or a port of the
user's. `TFCOMPAT_DEMO_REDIS_URL` picks a Redis instead (its database is
emptied, and the demo says so first). The stack's processes, ports and
settings are written to a state folder (`stack.json`, `env.sh`, the logs), so
a stack the demo leaves running (`--keep`) can be used from a shell and
stopped later (`--stop`) by the process ids it recorded, and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL_VARIABLE = "TFCOMPAT_DEMO_REDIS_URL"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "demo",
    "AWS_SECRET_ACCESS_KEY": "demo",
    "AWS_DEFAULT_REGION": "us-east-1",
}
STOP_WAIT = 15.0


class DemoError(Exception):
    """Something the person running the demo has to fix; the message says what."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """The first truthy answer of `predicate` within `timeout` seconds (errors count as no)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            result = predicate()
            if result:
                return result
        time.sleep(0.3)
    raise DemoError(f"timed out waiting for {what}")


@dataclass
class Stack:
    """The running stack: where its state lives, its settings and its processes."""

    state: Path
    env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    def start(self, name: str, args: list[str]) -> None:
        """Start `args` in its own session (a kept stack outlives the demo), output to a log."""
        with (self.logs / f"{name}.log").open("wb") as log:
            self.processes[name] = subprocess.Popen(
                args,
                env={**os.environ, **self.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                start_new_session=True,
            )
        self.save()

    def save(self) -> None:
        """stack.json (what --stop ends) and env.sh (the settings, for a shell)."""
        record = {
            name: {"pid": proc.pid, "started": start_time(proc.pid)}
            for name, proc in self.processes.items()
        }
        (self.state / "stack.json").write_text(json.dumps(record, indent=1))
        lines = [f"export {k}={shlex.quote(v)}" for k, v in sorted(self.env.items())]
        lines.append(f'export PATH={shlex.quote(str(Path(sys.executable).parent))}:"$PATH"')
        (self.state / "env.sh").write_text("\n".join(lines) + "\n")

    def stop(self) -> None:
        """End every process this stack started, newest first, and forget them."""
        for proc in reversed(list(self.processes.values())):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(STOP_WAIT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.processes.clear()
        (self.state / "stack.json").unlink(missing_ok=True)


def prepare(state: Path) -> Stack:
    """A fresh state folder; a stack still running there (a kept demo) is stopped first."""
    if (state / "stack.json").is_file():
        print(f"demo: stopping the demo stack left running in {state}", flush=True)
        stop_recorded(state)
    if state.is_dir():
        shutil.rmtree(state)
    (state / "logs").mkdir(parents=True)
    return Stack(state)


def start_redis(stack: Stack) -> str:
    """The broker URL: TFCOMPAT_DEMO_REDIS_URL's (emptied), else our own redis-server."""
    import redis

    chosen = os.environ.get(REDIS_URL_VARIABLE)
    if chosen:
        client = redis.Redis.from_url(chosen, socket_timeout=3)
        try:
            client.ping()
        except redis.RedisError as exc:
            raise DemoError(
                f"{REDIS_URL_VARIABLE}={chosen}: Redis does not answer: {exc}"
            ) from None
        client.flushdb()
        stack.notes.append(f"Redis {chosen} (from {REDIS_URL_VARIABLE}; its database emptied)")
        return chosen
    server = shutil.which("redis-server")
    if server is None:
        raise DemoError(
            "redis-server is not installed (apt-get install redis-server; brew install redis); "
            f"or set {REDIS_URL_VARIABLE}=redis://HOST:PORT/DB to a Redis whose database DB "
            "the demo may empty"
        )
    port = free_port()
    stack.start(
        "redis",
        [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
    )
    url = f"redis://127.0.0.1:{port}/0"
    wait_for(lambda: redis.Redis.from_url(url, socket_timeout=1).ping(), 30, "redis-server")
    stack.notes.append(f"Redis: its own redis-server on 127.0.0.1:{port}")
    return url


def start_time(pid: int) -> str | None:
    """When `pid` started (clock ticks since boot, /proc/PID/stat field 22); None if it has
    ended or there is no /proc. With the pid, it names one process: pids are reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields[19]  # a zombie has ended


def alive(pid: int, started: str | None) -> bool:
    """Whether `pid` is still the process recorded with start time `started`."""
    if started is None or not Path("/proc").is_dir():  # no /proc (macOS): trust the record
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return start_time(pid) == started


def stop_recorded(state: Path) -> list[str]:
    """Stop the processes a kept stack recorded in `state`; the names of those stopped."""
    record_file = state / "stack.json"
    if not record_file.is_file():
        return []
    record = json.loads(record_file.read_text())
    ours = {n: int(p["pid"]) for n, p in record.items() if alive(int(p["pid"]), p["started"])}
    for pid in reversed(list(ours.values())):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT
    for name, pid in ours.items():
        started = record[name]["started"]
        while time.monotonic() < deadline and alive(pid, started):
            time.sleep(0.1)
        if alive(pid, started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    record_file.unlink()
    return list(ours)
