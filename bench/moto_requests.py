"""moto's S3 server, each request it answers written down: one JSON line per request
(method, path, query parameter names, status, request and response body bytes).

Run by `local_s3.moto_s3(requests=PATH)`; `requests_per_upload` sums such a file per
bucket. What moto runs is its own server's application (`moto.server` builds the same),
behind a WSGI wrapper that only counts; writing the line costs moto a little CPU, so a
bench counts requests in a run of its own, not in the run it times.

Run: python bench/moto_requests.py PORT LOG
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Application = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def counting(app: Application, log: Path) -> Application:
    """`app`, writing one line to `log` per request it answers."""
    out = log.open("a", buffering=1)
    lock = threading.Lock()

    def answer(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        status: list[str] = []

        def start(code: str, headers: Any, exc_info: Any = None) -> Any:
            status.append(code)
            return start_response(code, headers, exc_info)

        body = list(app(environ, start))
        query = environ.get("QUERY_STRING", "")
        line = {
            "method": environ["REQUEST_METHOD"],
            "path": environ.get("PATH_INFO", ""),
            "query": sorted(p.split("=", 1)[0] for p in query.split("&") if p),
            "status": (status or ["?"])[0][:3],
            "sent": int(environ.get("CONTENT_LENGTH") or 0),
            "received": sum(len(part) for part in body),
        }
        with lock:
            out.write(json.dumps(line) + "\n")
        return body

    return answer


def answered(log: Path) -> int:
    """How many requests the log holds so far (moto writes each before it answers)."""
    return len(log.read_text().splitlines()) if log.exists() else 0


def requests_per_upload(
    log: Path, bucket: str, uploads: int, after: int = 0
) -> dict[str, tuple[float, float]]:
    """Per operation on `bucket` (`GET`, `GET tagging`, `PUT`, ...; `HEAD`) among the
    requests after the first `after`: requests per upload and body bytes per request
    (sent for a PUT, received for a GET)."""
    count: Counter[str] = Counter()
    size: defaultdict[str, int] = defaultdict(int)
    for text in log.read_text().splitlines()[after:]:
        line = json.loads(text)
        if line["path"].lstrip("/").split("/", 1)[0] != bucket:
            continue
        operation = " ".join([line["method"], *line["query"]])
        count[operation] += 1
        size[operation] += line["sent"] if line["method"] in ("PUT", "POST") else line["received"]
    return {op: (n / uploads, size[op] / n) for op, n in sorted(count.items())}


def main() -> None:
    from moto.moto_server.threaded_moto_server import (  # type: ignore[import-untyped]
        DomainDispatcherApplication,
        create_backend_app,
    )
    from moto.server import MotoRequestHandler  # type: ignore[import-untyped]
    from werkzeug.serving import run_simple

    port, log = int(sys.argv[1]), Path(sys.argv[2])
    os.environ.setdefault("MOTO_PORT", str(port))  # as moto.server sets it
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        "127.0.0.1",
        port,
        counting(app, log),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
