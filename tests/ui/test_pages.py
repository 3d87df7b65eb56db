"""The fleet page over a real index (Redis) of real reports: what each page shows, who
may read it, and that reading changes nothing. The browser's view: tests/ui/test_browser.py."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.redis_server import redis_url
from tests.sinks.documents import NEW_OP, NONDEFAULT, STRIPPED, checked
from worker.catalog.catalog import load_catalog
from worker.cli.fleet import fleet_previewer
from worker.errors import ConfigError
from worker.fleet.fleet import load_fleet
from worker.notify.owners import load_owners
from worker.settings import Settings
from worker.sinks import matrix
from worker.sinks.index import BUILT, ModelIndex, model_from_report
from worker.sinks.memory import MemoryObjectStore
from worker.ui.access import COOKIE
from worker.ui.routes import Sources, ui_routes

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-ui-token"
DB = 8
TIMES = "\N{MULTIPLICATION SIGN}"
pytestmark = pytest.mark.services


class Store(MemoryObjectStore):
    """The in-memory store, with the version listing the model page asks for."""

    def versions(self, bucket: str, key: str, limit: int) -> list[tuple[str, bool, str]]:
        return [("v1", True, "2026-01-01T00:00:00+00:00")]


def settings(**changes: Any) -> Settings:
    values: dict[str, Any] = {
        "ui_enabled": True,
        "ui_token": SecretStr(TOKEN),
        "fleet": str(ROOT / "config" / "fleet.yaml"),
        "owners": str(ROOT / "config" / "owners.yaml"),
        "broker_url": redis_url(DB),
        **changes,
    }
    return Settings(**values)


@pytest.fixture(scope="module")
def indexed() -> Iterator[tuple[ModelIndex, Store]]:
    client = redis.Redis.from_url(redis_url(DB))
    client.flushdb()
    store = Store()
    index = ModelIndex(client, store, ["models"], "tfcompat-reports/")
    for model, prefix in ((NEW_OP, "vision/7"), (NONDEFAULT, "nlp/3"), (STRIPPED, "ranking/v1")):
        _, outcome, _ = checked(model, prefix=prefix, store=store)
        assert outcome.document is not None
        found = model_from_report(outcome.document, "models", str(outcome.report))
        assert found is not None
        index.put(found)
    client.set(BUILT, "1")
    client.set(matrix.BUILT, "1")
    yield index, store
    client.flushdb()


def app(indexed: tuple[ModelIndex, Store], **changes: Any) -> Starlette:
    index, store = indexed
    s = settings(**changes)
    catalog = load_catalog()
    sources = Sources(
        settings=s,
        index=index,
        store=store,
        catalog=catalog,
        fleet=lambda: load_fleet(s.fleet, catalog),
        owners=load_owners(s.owners),
        preview=fleet_previewer(s, index, catalog),
    )
    return Starlette(routes=ui_routes(sources))


@pytest.fixture
def client(indexed: tuple[ModelIndex, Store]) -> TestClient:
    return TestClient(app(indexed), headers={"Authorization": f"Bearer {TOKEN}"})


def text(html: str) -> str:
    """The page's words, tags dropped."""
    import html as markup
    import re

    return re.sub(r"\s+", " ", markup.unescape(re.sub(r"<[^>]+>", " ", html)))


# --- access -----------------------------------------------------------------------------------


def test_the_page_is_off_unless_enabled(indexed: tuple[ModelIndex, Store]) -> None:
    assert TestClient(app(indexed, ui_enabled=False)).get("/ui").status_code == 404


def test_it_refuses_to_start_enabled_without_a_token_or_a_trusted_header(
    indexed: tuple[ModelIndex, Store],
) -> None:
    with pytest.raises(ConfigError, match="TFCOMPAT_UI_TRUSTED_HEADER"):
        app(indexed, ui_token=None)


def test_without_credentials_a_reader_is_sent_to_sign_in(
    indexed: tuple[ModelIndex, Store],
) -> None:
    anonymous = TestClient(app(indexed), follow_redirects=False)
    answer = anonymous.get("/ui/model/models/vision/7/saved_model.pb")
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/ui/login?next=%2Fui%2Fmodel%2F")
    assert anonymous.get("/ui", headers={"Authorization": "Bearer wrong"}).status_code == 303
    anonymous.cookies.set(COOKIE, TOKEN)  # the token itself is not a session
    assert anonymous.get("/ui/matrix.csv").status_code == 303


def test_signing_in_keeps_a_cookie_that_is_not_the_token(
    indexed: tuple[ModelIndex, Store],
) -> None:
    browser = TestClient(app(indexed), follow_redirects=False)
    refused = browser.post("/ui/login", data={"token": "nope", "next": "/ui"})
    assert refused.status_code == 401 and COOKIE not in refused.cookies
    answer = browser.post("/ui/login", data={"token": TOKEN, "next": "/ui?cell=fails"})
    assert answer.status_code == 303 and answer.headers["location"] == "/ui?cell=fails"
    cookie = answer.cookies[COOKIE]
    assert TOKEN not in cookie and "httponly" in answer.headers["set-cookie"].lower()
    assert "samesite=strict" in answer.headers["set-cookie"].lower()
    assert browser.get("/ui").status_code == 200  # the client keeps the cookie


def test_sign_in_never_sends_a_reader_to_another_site(indexed: tuple[ModelIndex, Store]) -> None:
    browser = TestClient(app(indexed), follow_redirects=False)
    for elsewhere in ("https://evil.example/ui", "//evil.example/ui", "/ui//evil.example"):
        answer = browser.post("/ui/login", data={"token": TOKEN, "next": elsewhere})
        assert answer.headers["location"] == "/ui"


def test_a_proxy_s_trusted_header_lets_its_user_read(indexed: tuple[ModelIndex, Store]) -> None:
    proxied = TestClient(
        app(indexed, ui_token=None, ui_trusted_header="X-Forwarded-User"), follow_redirects=False
    )
    assert proxied.get("/ui", headers={"X-Forwarded-User": "ana"}).status_code == 200
    assert proxied.get("/ui", headers={"X-Forwarded-User": " "}).status_code == 401
    assert proxied.get("/ui").status_code == 401  # no sign-in form without a token


# --- what the pages show ----------------------------------------------------------------------


def test_each_cell_says_its_state_in_a_symbol_a_word_and_a_label(client: TestClient) -> None:
    page = client.get("/ui")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    html = page.text
    assert 'aria-label="serving-prod: fails: Op type not registered &#39;DecodeWebP&#39;' in html
    assert '<span aria-hidden="true">✗</span> fails</span>' in html
    assert '<span aria-hidden="true">✓</span> serves</span>' in html
    assert f"3 model(s) indexed {TIMES} 4 consumer(s)" in text(html)


def test_filtering_to_failing_cells_of_one_consumer(client: TestClient) -> None:
    html = client.get("/ui", params={"consumer": "serving-prod", "cell": "fails"}).text
    assert "models/vision/7/saved_model.pb" in html and "models/nlp/3/saved_model.pb" in html
    assert "models/ranking/v1/saved_model.pb" not in html  # serving-prod serves it
    owned = client.get("/ui", params={"owner": "ranking"}).text  # owners.yaml by location
    assert "models/ranking/v1/saved_model.pb" in owned and "vision/7" not in owned


def test_a_model_page_shows_findings_fixes_releases_and_the_release_loader_grid(
    client: TestClient,
) -> None:
    page = text(client.get("/ui/model/models/vision/7/saved_model.pb").text)
    assert "Op type not registered" in page
    assert "Fix: Upgrade serving-prod to TensorFlow >= 2.20.0" in page
    assert "Compatible releases 2.20.0-2.21.x" in page
    assert "2.21.0 ✓ serves ✓ serves ✓ serves" in page  # every loader serves it on 2.21
    assert "2.19.1 ✗ fails ✗ fails ✗ fails" in page
    assert "v1 (current)" in page
    assert client.get("/ui/model/models/nowhere.pb").status_code == 404


def test_a_consumer_page_groups_what_it_cannot_serve_by_cause(client: TestClient) -> None:
    page = text(client.get("/ui/consumer/serving-prod").text)
    assert "serving-prod cannot serve 2 model(s)" in page
    assert f"op missing or changed 1 op.not-registered {TIMES} 1" in page
    assert f"edge types 1 edge.type-mismatch {TIMES} 1" in page  # a new attr changes a dtype


def test_a_preview_lists_what_a_new_consumer_breaks_and_applies_nothing(
    client: TestClient, indexed: tuple[ModelIndex, Store]
) -> None:
    index, _ = indexed
    r = index.redis_client
    before = {k: r.dump(k) for k in sorted(r.keys("*"))}
    page = client.get("/ui/preview", params={"action": "add", "spec": "tf==2.10"})
    assert page.status_code == 200
    words = text(page.text)
    assert "3 model(s) examined" in words
    assert "tf-2.10.1: (new) → incompatible ✗ newly fails" in words
    moved = text(
        client.get(
            "/ui/preview",
            params={"action": "upgrade", "consumer": "serving-prod", "spec": "tf==2.21"},
        ).text
    )
    assert "serving-prod: incompatible → compatible" in moved
    bad = client.get("/ui/preview", params={"action": "remove", "consumer": "nobody"})
    assert bad.status_code == 400 and "choose a consumer of the fleet" in bad.text
    assert {k: r.dump(k) for k in sorted(r.keys("*"))} == before


def test_downloads_hold_the_filtered_matrix(client: TestClient) -> None:
    answer = client.get("/ui/matrix.csv", params={"cell": "fails"})
    rows = list(csv.reader(io.StringIO(answer.text)))
    assert rows[0][:4] == ["location", "version_id", "owner", "status"]
    assert {r[0] for r in rows[1:]} == {
        "s3://models/vision/7/saved_model.pb",
        "s3://models/nlp/3/saved_model.pb",
    }  # ranking/v1 (exported stripped) serves everywhere
    document = json.loads(client.get("/ui/matrix.json").text)
    fleet = ["serving-prod", "serving-canary", "batch-scoring", "legacy-edge"]
    assert document["consumers"] == fleet
    cell = next(m for m in document["models"] if "vision" in m["object"])["cells"]["serving-prod"]
    assert cell["state"] == "fails" and cell["code"] == "op.not-registered"


def test_no_page_shows_the_token(client: TestClient) -> None:
    for path in (
        "/ui",
        "/ui/model/models/vision/7/saved_model.pb",
        "/ui/consumer/serving-prod",
        "/ui/preview",
        "/ui/matrix.json",
        "/ui/login",
    ):
        assert TOKEN not in client.get(path).text


def test_an_index_that_does_not_answer_is_said_so_not_a_crash() -> None:
    gone = redis.Redis.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=1)
    index = ModelIndex(gone, Store(), ["models"], "tfcompat-reports/")
    s = settings()
    catalog = load_catalog()
    sources = Sources(s, index, Store(), catalog, lambda: load_fleet(s.fleet, catalog))
    answer = TestClient(
        Starlette(routes=ui_routes(sources)), headers={"Authorization": f"Bearer {TOKEN}"}
    ).get("/ui")
    assert answer.status_code == 503
    assert "model index: Redis unavailable" in answer.text


def test_the_receiver_refuses_to_start_with_the_page_on_and_no_authentication() -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TFCOMPAT_")}
    env.update(TFCOMPAT_UI_ENABLED="true", TFCOMPAT_BROKER_URL=redis_url(DB))
    result = subprocess.run(
        [sys.executable, "-m", "worker.cli", "serve", "--port", "1"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode != 0
    assert "TFCOMPAT_UI_TOKEN" in result.stderr and "Traceback" not in result.stderr


# --- a fleet change in progress ---------------------------------------------------------------


def test_a_running_fleet_change_shows_its_counts_in_one_line(
    indexed: tuple[ModelIndex, Store], client: TestClient
) -> None:
    from worker.sinks.fleet_runs import RUN, FleetRuns, Unit

    index, _ = indexed
    assert "Fleet change" not in text(client.get("/ui").text)  # none recorded
    runs = FleetRuns(index.redis_client)
    chunk = Unit("objects:a", "objects", ("models/a", "models/b"))
    runs.start("f1eetd1ge5t0", "fleet.yaml", [chunk, Unit("mlflow:x", "mlflow", ("m", "1"))])
    runs.complete("f1eetd1ge5t0", chunk, ok=True)
    try:
        page = text(client.get("/ui").text)
        assert "Fleet change f1eetd1ge5t0: running, 2 of 3 done, 0 failed." in page
    finally:
        index.redis_client.delete(RUN)
