"""bench/moto_requests.py: the request log moto's wrapper writes, and its sums per upload."""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("moto_requests", ROOT / "bench" / "moto_requests.py")
assert spec is not None and spec.loader is not None
moto_requests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(moto_requests)


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("200 OK", [])
    return [b"x" * 10, b"y" * 5] if environ["REQUEST_METHOD"] == "GET" else [b""]


def ask(answer: Any, method: str, path: str, query: str = "", body: int = 0) -> None:
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "CONTENT_LENGTH": str(body) if body else "",
        "wsgi.input": io.BytesIO(b"z" * body),
    }
    assert list(answer(environ, lambda *a: None)) is not None


def test_requests_per_upload_by_operation_and_bucket(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    answer = moto_requests.counting(app, log)
    ask(answer, "PUT", "/rate/m0/frozen.pb", body=500)  # the model's own upload
    before = moto_requests.answered(log)
    for i in range(2):  # two uploads checked: a GET, a tags GET and PUT, a report PUT
        ask(answer, "GET", f"/rate/m{i}/frozen.pb")
        ask(answer, "GET", f"/rate/m{i}/frozen.pb", "tagging=")
        ask(answer, "PUT", f"/rate/m{i}/frozen.pb", "tagging=", body=40)
        ask(answer, "PUT", f"/rate/reports/m{i}.json", body=1000)
    ask(answer, "GET", "/other/m0/frozen.pb")  # another bucket: not counted
    counted = moto_requests.requests_per_upload(log, "rate", 2, before)
    assert counted == {
        "GET": (1.0, 15.0),
        "GET tagging": (1.0, 15.0),
        "PUT": (1.0, 1000.0),
        "PUT tagging": (1.0, 40.0),
    }
    assert moto_requests.answered(log) == before + 9
