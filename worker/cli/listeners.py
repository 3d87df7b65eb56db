"""Several uvicorn servers on one event loop: `tfcompat serve`'s event listener and the
fleet page's listener, in one process.

uvicorn's `Server` installs its own SIGINT/SIGTERM handlers while it serves, and a
second one would replace the first's, so only one listener would hear a stop. Here no
server installs any: one handler asks every listener to finish its requests and stop
(a second SIGINT stops them at once), and when one listener ends (it could not bind
its port) the others stop too, so the process never half-serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Generator, Sequence
from typing import Any

import uvicorn


class Listener(uvicorn.Server):
    """A uvicorn server that leaves signals to `serve_all`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def listener(app: Any, host: str, port: int, *, proxy_headers: bool = True) -> Listener:
    """`proxy_headers=False` keeps the peer's own address as the client's (the page's
    trusted proxies are judged by it, never by an X-Forwarded-For anyone can send)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        proxy_headers=proxy_headers,
    )
    return Listener(config)


def serve_all(servers: Sequence[Listener]) -> None:
    """Serve every listener until a signal (or one of them ending) stops them all."""

    def stop(sig: int, frame: Any) -> None:
        for server in servers:
            if server.should_exit and sig == signal.SIGINT:
                server.force_exit = True
            server.should_exit = True

    async def run() -> None:
        tasks = [asyncio.ensure_future(server.serve()) for server in servers]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for server in servers:
                server.should_exit = True
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in tasks:
            if task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        asyncio.run(run())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
