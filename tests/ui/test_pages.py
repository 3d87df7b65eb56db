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
from worker.errors import ConfigError
from worker.fleet.fleet import load_fleet
from worker.notify.owners import load_owners
from worker.settings import Settings
from worker.sinks import matrix
from worker.sinks.index import BUILT, ModelIndex, model_from_report
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.previews import LATEST, PREFIX, PreviewStore
from worker.ui.access import COOKIE, PageAccess, RedisRevocations
from worker.ui.routes import Previews, Sources, ui_routes

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


def app(
    indexed: tuple[ModelIndex, Store], previews: Previews | None = None, **changes: Any
) -> Starlette:
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
        previews=previews,
    )
    return Starlette(routes=ui_routes(sources))


@pytest.fixture
def client(indexed: tuple[ModelIndex, Store]) -> TestClient:
    return TestClient(app(indexed), headers={"Authorization": f"Bearer {TOKEN}"})


HTML = {"Accept": "text/html"}


def csrf(client: TestClient, path: str = "/ui/login") -> str:
    """The CSRF token of a form of the page (its cookie stays in the client)."""
    import re

    found = re.search(r'name="csrf" value="([^"]+)"', client.get(path).text)
    assert found
    return found.group(1)


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
    anonymous = TestClient(app(indexed), follow_redirects=False, headers=HTML)
    answer = anonymous.get("/ui/model/models/vision/7/saved_model.pb")
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/ui/login?next=%2Fui%2Fmodel%2F")
    assert anonymous.get("/ui", headers={"Authorization": "Bearer wrong"}).status_code == 303
    anonymous.cookies.set(COOKIE, TOKEN)  # the token itself is not a session
    assert anonymous.get("/ui").status_code == 303


def test_a_script_without_credentials_gets_401_not_a_redirect(
    indexed: tuple[ModelIndex, Store],
) -> None:
    script = TestClient(app(indexed), follow_redirects=False)
    for path in ("/ui", "/ui/matrix.csv", "/ui/matrix.json"):
        answer = script.get(path, headers={"Accept": "application/json"})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == 'Bearer realm="tfcompat"'


def test_signing_in_keeps_a_cookie_that_is_not_the_token(
    indexed: tuple[ModelIndex, Store],
) -> None:
    browser = TestClient(app(indexed), follow_redirects=False, headers=HTML)
    token = csrf(browser)
    refused = browser.post("/ui/login", data={"token": "nope", "next": "/ui", "csrf": token})
    assert refused.status_code == 401 and COOKIE not in refused.cookies
    sent = {"token": TOKEN, "next": "/ui?cell=fails", "csrf": token}
    answer = browser.post("/ui/login", data=sent)
    assert answer.status_code == 303 and answer.headers["location"] == "/ui?cell=fails"
    cookie = answer.cookies[COOKIE]
    set_cookie = answer.headers["set-cookie"].lower()
    assert TOKEN not in cookie and "httponly" in set_cookie and "max-age=28800" in set_cookie
    assert "samesite=lax" in set_cookie and "secure" not in set_cookie  # plain http
    assert browser.get("/ui").status_code == 200  # the client keeps the cookie


def test_cookies_are_secure_when_a_setting_says_the_page_is_behind_tls(
    indexed: tuple[ModelIndex, Store],
) -> None:
    browser = TestClient(app(indexed, ui_secure_cookies=True), follow_redirects=False)
    # The CSRF cookie is Secure too, so a plain-http client keeps none: only the header shows.
    assert "secure" in browser.get("/ui/login").headers["set-cookie"].lower()


def test_a_new_token_ends_every_session(indexed: tuple[ModelIndex, Store]) -> None:
    old = PageAccess(settings(), RedisRevocations(indexed[0].redis_client))
    new = PageAccess(settings(ui_token=SecretStr("rotated")), old.revocations)
    _, cookie = old.new_session()
    assert old.session_of(cookie) is not None and new.session_of(cookie) is None


def test_the_trusted_header_counts_from_a_trusted_proxy_address_only(
    indexed: tuple[ModelIndex, Store],
) -> None:
    from starlette.requests import Request

    access = PageAccess(
        settings(ui_trusted_header="X-Forwarded-User", ui_trusted_proxies="10.0.0.0/8"),
        RedisRevocations(indexed[0].redis_client),
    )

    def request(peer: str) -> Request:
        headers = [(b"x-forwarded-user", b"ana")]
        return Request({"type": "http", "headers": headers, "client": (peer, 4000)})

    assert access.reader(request("10.1.2.3")) is not None
    assert access.reader(request("192.168.1.9")) is None


def test_a_trusted_header_with_no_proof_of_the_proxy_refuses_to_start(
    indexed: tuple[ModelIndex, Store],
) -> None:
    with pytest.raises(ConfigError, match="TFCOMPAT_UI_PROXY_SECRET"):
        app(indexed, ui_token=None, ui_trusted_header="X-Forwarded-User")


def test_sign_in_never_sends_a_reader_to_another_site(indexed: tuple[ModelIndex, Store]) -> None:
    browser = TestClient(app(indexed), follow_redirects=False)
    token = csrf(browser)
    for elsewhere in ("https://evil.example/ui", "//evil.example/ui", "/ui//evil.example"):
        sent = {"token": TOKEN, "next": elsewhere, "csrf": token}
        answer = browser.post("/ui/login", data=sent)
        assert answer.headers["location"] == "/ui"


def test_a_proxy_s_trusted_header_lets_its_user_read(indexed: tuple[ModelIndex, Store]) -> None:
    proxied = TestClient(
        app(
            indexed,
            ui_token=None,
            ui_trusted_header="X-Forwarded-User",
            ui_proxy_secret=SecretStr("proxy"),
        ),
        follow_redirects=False,
        headers={"X-Tfcompat-Proxy-Secret": "proxy", **HTML},
    )
    assert proxied.get("/ui", headers={"X-Forwarded-User": "ana"}).status_code == 200
    assert proxied.get("/ui", headers={"X-Forwarded-User": " "}).status_code == 401
    assert proxied.get("/ui").status_code == 401  # no sign-in form without a token
    not_proxied = {"X-Forwarded-User": "ana", "X-Tfcompat-Proxy-Secret": "guess"}
    assert proxied.get("/ui", headers=not_proxied).status_code == 401


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


def test_a_preview_form_that_names_no_consumer_of_the_fleet_is_refused(
    client: TestClient,
) -> None:
    sent = {"action": "remove", "consumer": "nobody", "csrf": csrf(client, "/ui/preview")}
    bad = client.post("/ui/preview", data=sent)
    assert bad.status_code == 400 and "choose a consumer of the fleet" in bad.text


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


# --- the upgrade plan while a worker computes it -----------------------------------------------


@pytest.fixture
def planning(indexed: tuple[ModelIndex, Store]) -> Iterator[tuple[TestClient, list[str]]]:
    """A page whose plans are handed to a worker that has not answered yet (the ids
    handed over are listed)."""
    handed: list[str] = []
    previews = Previews(PreviewStore(indexed[0].redis_client, 60), lambda i, c: handed.append(i))
    yield TestClient(app(indexed, previews), headers={"Authorization": f"Bearer {TOKEN}"}), handed
    for prefix in (PREFIX, LATEST):
        for key in indexed[0].redis_client.scan_iter(match=prefix + "*"):
            indexed[0].redis_client.delete(key)


def test_the_plan_page_reloads_itself_while_a_worker_computes_the_plan(
    planning: tuple[TestClient, list[str]],
) -> None:
    client, handed = planning
    first, again = client.get("/ui/plan", headers=HTML), client.get("/ui/plan", headers=HTML)
    assert first.status_code == 200 and first.headers["Refresh"]
    assert "Computing the plan" in first.text and "Computing the plan" in again.text
    assert len(handed) == 1  # every reader waits for the same one


def test_the_plan_downloads_answer_503_with_retry_after_while_it_is_computed(
    planning: tuple[TestClient, list[str]],
) -> None:
    client, handed = planning
    for path in ("/ui/plan.json", "/ui/plan.csv"):
        answer = client.get(path)
        assert answer.status_code == 503 and answer.headers["Retry-After"], path
        assert "being computed" in answer.json()["error"]
    assert len(handed) == 1


def test_a_failed_plan_says_why(
    planning: tuple[TestClient, list[str]], indexed: tuple[ModelIndex, Store]
) -> None:
    client, handed = planning
    client.get("/ui/plan")
    store = PreviewStore(indexed[0].redis_client, 60)
    asked = (store.get(handed[0]) or {})["change"]
    store.failed(handed[0], asked, "stopped after 300 s")
    page = text(client.get("/ui/plan", headers=HTML).text)
    assert "The plan failed: stopped after 300 s" in page
    failed = client.get("/ui/plan.json")
    assert failed.status_code == 500 and "stopped after 300 s" in failed.json()["error"]


def test_computing_the_plan_again_needs_the_form_s_csrf_token(
    planning: tuple[TestClient, list[str]],
) -> None:
    client, handed = planning
    client.get("/ui/plan")
    assert client.post("/ui/plan", data={"csrf": "forged"}).status_code == 403
    assert len(handed) == 1
    token = csrf(client, "/ui/preview")  # the running page offers no form; any page's token
    answer = client.post("/ui/plan", data={"csrf": token}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/ui/plan"
    assert len(handed) == 2


def test_an_edited_fleet_file_gets_a_new_plan(
    planning: tuple[TestClient, list[str]], indexed: tuple[ModelIndex, Store], tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text((ROOT / "config" / "fleet.yaml").read_text())
    handed: list[str] = []
    previews = Previews(PreviewStore(indexed[0].redis_client, 60), lambda i, c: handed.append(i))
    client = TestClient(
        app(indexed, previews, fleet=str(fleet)), headers={"Authorization": f"Bearer {TOKEN}"}
    )
    client.get("/ui/plan")
    client.get("/ui/plan")
    assert len(handed) == 1
    fleet.write_text(fleet.read_text().replace("consumers:", "consumers:  # upgrade_to edited"))
    client.get("/ui/plan")
    assert len(handed) == 2


def test_without_workers_the_plan_page_says_there_is_none(client: TestClient) -> None:
    answer = client.get("/ui/plan", headers=HTML)
    assert answer.status_code == 503 and "no plan here" in answer.text


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
    runs.complete("f1eetd1ge5t0", chunk, ok=True, changed=1)
    try:
        page = text(client.get("/ui").text)
        assert "Fleet change f1eetd1ge5t0: running, 2 of 3 examined (1 changed), 0 failed." in page
    finally:
        index.redis_client.delete(RUN)
