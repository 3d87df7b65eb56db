"""The fleet page's trust boundary on a real stack: `tfcompat serve` (its event listener,
the page's listener and the metrics exporter, over sockets), a Celery worker that runs
previews, Redis (broker and state in two databases) and moto's S3.

What the public event listener answers to a spoofed proxy header, what the page's
listener does with it, the metrics token, sessions that end, the sign-in throttle, the
401 a script gets, and previews that run in the worker while the event routes answer
and nothing else in Redis or S3 changes.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.pipeline.services import (
    AUTH,
    cli,
    free_port,
    moto_server,
    process,
    s3,
    wait_until,
    worker_env,
    worker_ready,
)
from tests.redis_server import redis_url
from tests.sinks.documents import NEW_OP, NONDEFAULT, STRIPPED, checked
from worker.sinks import matrix
from worker.sinks.index import BUILT, ModelIndex, model_from_report
from worker.sinks.memory import MemoryObjectStore

ROOT = Path(__file__).resolve().parents[2]
BROKER_DB, STATE_DB = 1, 5
TOKEN = "page-stack-token"
PROXY_SECRET = "page-proxy-secret"
METRICS_TOKEN = "page-metrics-token"
USER = "X-Forwarded-User"
HTML = {"Accept": "text/html"}
pytestmark = [pytest.mark.services, pytest.mark.slow]


@dataclass
class Page:
    events: str  # the event listener's base URL
    page: str  # the page listener's base URL
    metrics: str  # the exporter's /metrics URL
    state: redis.Redis
    s3: Any


def index_three_models(client: redis.Redis) -> None:
    client.flushdb()
    store = MemoryObjectStore()
    index = ModelIndex(client, store, ["models"], "tfcompat-reports/")
    for model, prefix in ((NEW_OP, "vision/7"), (NONDEFAULT, "nlp/3"), (STRIPPED, "ranking/v1")):
        _, outcome, _ = checked(model, prefix=prefix, store=store)
        assert outcome.document is not None
        found = model_from_report(outcome.document, "models", str(outcome.report))
        assert found is not None
        index.put(found)
    client.set(BUILT, "1")
    client.set(matrix.BUILT, "1")


def page_env(endpoint: str, **extra: str) -> dict[str, str]:
    return worker_env(
        endpoint,
        BROKER_DB,
        TFCOMPAT_REDIS_URL=redis_url(STATE_DB),
        TFCOMPAT_INDEX_BUCKETS='["models"]',
        TFCOMPAT_OWNERS=str(ROOT / "config" / "owners.yaml"),
        TFCOMPAT_UI_ENABLED="true",
        TFCOMPAT_UI_TOKEN=TOKEN,
        TFCOMPAT_UI_TRUSTED_HEADER=USER,
        TFCOMPAT_UI_PROXY_SECRET=PROXY_SECRET,
        TFCOMPAT_METRICS_TOKEN=METRICS_TOKEN,
        **extra,
    )


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with moto_server(tmp_path_factory.mktemp("page-moto") / "moto.log") as url:
        s3(url).create_bucket(Bucket="models")  # the bucket /healthz probes
        yield url


def serving(env: dict[str, str], log: Path) -> Any:
    """`tfcompat serve` with the page and the exporter, each on a free port."""
    ports = [free_port() for _ in range(3)]
    args = cli(
        "serve",
        "--port",
        str(ports[0]),
        "--ui-port",
        str(ports[1]),
        "--metrics-port",
        str(ports[2]),
    )
    return process(args, env, log), [f"http://127.0.0.1:{p}" for p in ports]


def started(urls: list[str]) -> None:
    wait_until(lambda: httpx.get(f"{urls[0]}/healthz", timeout=5), 60, "the event listener")
    wait_until(lambda: httpx.get(f"{urls[1]}/ui/static/ui.css", timeout=5), 30, "the page")


@pytest.fixture(scope="module")
def stack(endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    logs = tmp_path_factory.mktemp("page-stack")
    broker = redis.Redis.from_url(redis_url(BROKER_DB))
    broker.flushdb()
    state = redis.Redis.from_url(redis_url(STATE_DB))
    index_three_models(state)
    env = page_env(endpoint, TFCOMPAT_UI_PREVIEWS_IN_FLIGHT="3")
    receiver, urls = serving(env, logs / "serve.log")
    worker = cli("worker", "--concurrency", "2", "--hostname", "page@%h")
    with process(worker, env, logs / "worker.log"), receiver:
        started(urls)
        wait_until(lambda: worker_ready(logs / "worker.log"), 60, "the worker")
        yield Page(urls[0], urls[1], f"{urls[2]}/metrics", state, s3(endpoint))
    state.flushdb()
    broker.flushdb()


@pytest.fixture
def strict(endpoint: str, tmp_path: Path) -> Iterator[str]:
    """A page alone (no worker) whose sessions last 2 s and whose sign-in form takes 3
    attempts a minute from one address: its URL."""
    index_three_models(redis.Redis.from_url(redis_url(STATE_DB)))
    env = page_env(endpoint, TFCOMPAT_UI_SESSION_TTL="2", TFCOMPAT_UI_SIGN_IN_PER_ADDRESS="3")
    receiver, urls = serving(env, tmp_path / "serve.log")
    with receiver:
        started(urls)
        yield urls[1]


def csrf(browser: httpx.Client, path: str = "/ui/login") -> str:
    """The CSRF token a form of the page carries (its cookie lands in the browser)."""
    found = re.search(r'name="csrf" value="([^"]+)"', browser.get(path, headers=HTML).text)
    assert found, path
    return found.group(1)


def signed_in(base: str) -> httpx.Client:
    browser = httpx.Client(base_url=base, headers=HTML, timeout=30)
    answer = browser.post("/ui/login", data={"token": TOKEN, "next": "/ui", "csrf": csrf(browser)})
    assert answer.status_code == 303, answer.text
    return browser


# --- the event listener: no page, no metrics, whatever the headers -----------------------------


def test_a_spoofed_user_header_on_the_event_listener_sees_nothing(stack: Page) -> None:
    spoofed = {USER: "mallory", "X-Tfcompat-Proxy-Secret": PROXY_SECRET, **HTML}
    for path in ("/ui", "/ui/matrix.json", "/ui/matrix.csv", "/ui/preview", "/metrics"):
        assert httpx.get(f"{stack.events}{path}", headers=spoofed).status_code == 404, path
    assert httpx.get(f"{stack.events}/healthz").status_code == 200


# --- the page's listener: the trusted header only from the proxy ------------------------------


def test_the_trusted_header_without_the_proxy_secret_is_ignored(stack: Page) -> None:
    page = f"{stack.page}/ui"
    alone = httpx.get(page, headers={USER: "mallory", **HTML})
    assert alone.status_code == 303 and alone.headers["location"].startswith("/ui/login")
    wrong = {USER: "mallory", "X-Tfcompat-Proxy-Secret": "guess", "Accept": "application/json"}
    assert httpx.get(page, headers=wrong).status_code == 401


def test_the_trusted_header_with_the_proxy_secret_lets_its_user_read(stack: Page) -> None:
    proxied = {USER: "ana", "X-Tfcompat-Proxy-Secret": PROXY_SECRET, **HTML}
    answer = httpx.get(f"{stack.page}/ui", headers=proxied)
    assert answer.status_code == 200 and "models/vision/7/saved_model.pb" in answer.text


def test_downloads_answer_a_script_without_credentials_401_and_bearer(stack: Page) -> None:
    for path in ("/ui/matrix.json", "/ui/matrix.csv"):
        for headers in ({}, HTML):  # a download is a script's even when it asks for HTML
            answer = httpx.get(f"{stack.page}{path}", headers=headers)
            assert answer.status_code == 401, path
            assert answer.headers["www-authenticate"].startswith("Bearer")
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(f"{stack.page}/ui/matrix.json", headers=bearer).status_code == 200


def test_the_healthcheck_probes_both_listeners(stack: Page) -> None:
    import subprocess

    page_port = stack.page.rsplit(":", 1)[1]
    env = page_env("http://127.0.0.1:1", TFCOMPAT_UI_PORT=page_port)
    probe = cli("healthcheck", "serve", "--url", f"{stack.events}/healthz", "--timeout", "5")
    ok = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "serve page: ok" in ok.stdout, ok.stdout + ok.stderr
    env["TFCOMPAT_UI_PORT"] = str(free_port())  # nothing listens there
    down = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=120)
    assert down.returncode == 1 and "serve page: error:" in down.stdout


# --- the metrics exporter ---------------------------------------------------------------------


def test_metrics_need_their_token(stack: Page) -> None:
    for headers in ({}, {"Authorization": "Bearer guess"}):
        answer = httpx.get(stack.metrics, headers=headers)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
    good = httpx.get(stack.metrics, headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert good.status_code == 200 and "tfcompat_events_received_total" in good.text


# --- sessions ---------------------------------------------------------------------------------


def test_sign_out_ends_the_session_and_a_replayed_cookie_fails(stack: Page) -> None:
    browser = signed_in(stack.page)
    assert browser.get("/ui").status_code == 200
    cookie = browser.cookies["tfcompat_ui"]
    token = csrf(browser, "/ui")
    left = browser.post("/ui/logout", data={"csrf": token})
    assert left.status_code == 303 and left.headers["location"] == "/ui/login"
    assert "tfcompat_ui" not in browser.cookies
    replay = httpx.Client(base_url=stack.page, headers=HTML, cookies={"tfcompat_ui": cookie})
    answer = replay.get("/ui")
    assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/login")


def test_a_form_without_its_csrf_token_is_refused(stack: Page) -> None:
    browser = signed_in(stack.page)
    answer = browser.post("/ui/logout", data={})
    assert answer.status_code == 403
    assert browser.get("/ui").status_code == 200  # still signed in
    forged = browser.post("/ui/preview", data={"action": "add", "spec": "tf==2.10", "csrf": "x"})
    assert forged.status_code == 403


def test_a_session_expires_after_its_ttl(strict: str) -> None:
    browser = signed_in(strict)
    assert browser.get("/ui").status_code == 200
    time.sleep(3.5)  # the TTL is 2 s; itsdangerous counts whole seconds
    answer = browser.get("/ui")
    assert answer.status_code == 303 and answer.headers["location"].startswith("/ui/login")


def test_sign_in_is_throttled_per_address(strict: str) -> None:
    browser = httpx.Client(base_url=strict, headers=HTML, timeout=30)
    token = csrf(browser)
    for _ in range(3):
        wrong = browser.post("/ui/login", data={"token": "guess", "csrf": token})
        assert wrong.status_code == 401
    throttled = browser.post("/ui/login", data={"token": TOKEN, "csrf": token})
    assert throttled.status_code == 429
    assert int(throttled.headers["retry-after"]) >= 1
    assert "tfcompat_ui" not in browser.cookies


# --- previews: in the worker, polled, never reading a file the form names ---------------------


def preview(browser: httpx.Client, **form: str) -> httpx.Response:
    return browser.post("/ui/preview", data={**form, "csrf": csrf(browser, "/ui/preview")})


def finished(browser: httpx.Client, location: str) -> str:
    """The preview's page once it no longer says it is running."""

    def done() -> str | None:
        text = browser.get(location).text
        return None if 'id="preview-running"' in text else text

    result: str = wait_until(done, 120, f"the preview {location}", interval=0.5)
    return result


def test_a_preview_runs_in_the_worker_and_the_page_polls_for_it(stack: Page) -> None:
    browser = signed_in(stack.page)
    answer = preview(browser, action="add", spec="tf==2.10")
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert re.fullmatch(r"/ui/preview/[A-Za-z0-9_-]{16,64}", location)
    first = browser.get(location)
    assert first.status_code == 200
    if 'id="preview-running"' in first.text:
        assert first.headers["refresh"] == "2"
    page = re.sub(r"\s+", " ", finished(browser, location))
    assert "3 model(s) examined" in page
    assert "tf-2.10.1: (new) → incompatible" in page and "newly fails" in page


def test_a_failed_preview_shows_its_cause(stack: Page) -> None:
    browser = signed_in(stack.page)
    answer = preview(browser, action="add", spec="tf==2.99")  # no such release
    page = finished(browser, answer.headers["location"])
    assert "The preview failed: TensorFlow 2.99 is not in the catalog" in page


@pytest.mark.parametrize("path", ["/etc/passwd", "/nowhere/at/all.json"])
def test_a_manifest_path_is_refused_the_same_whether_or_not_it_exists(
    stack: Page, path: str
) -> None:
    browser = signed_in(stack.page)
    before = set(stack.state.keys("tfcompat:preview:*"))
    answer = preview(browser, action="add", spec=f"mine={path}")
    assert answer.status_code == 400
    assert "not a manifest" in answer.text
    assert path not in answer.text.replace(f"mine={path}", "")  # only the form echoes it
    assert set(stack.state.keys("tfcompat:preview:*")) == before


def snapshot(stack: Page) -> dict[str, Any]:
    """Every state key but the previews' and the ended sessions', and every S3 object."""
    keys = {
        k: stack.state.dump(k)
        for k in sorted(stack.state.keys("*"))
        if not k.startswith((b"tfcompat:preview:", b"tfcompat:ui:signed-out:"))
    }
    objects = {
        (b["Name"], o["Key"], o["ETag"])
        for b in stack.s3.list_buckets()["Buckets"]
        for o in stack.s3.list_objects_v2(Bucket=b["Name"]).get("Contents", [])
    }
    return {"keys": keys, "objects": objects}


def test_previews_leave_the_event_routes_answering_and_write_only_their_results(
    stack: Page,
) -> None:
    browser = signed_in(stack.page)
    before = snapshot(stack)
    locations: list[str] = []

    def start() -> None:
        answer = preview(signed_in(stack.page), action="add", spec="tf==2.9")
        locations.append(answer.headers["location"])

    starters = [threading.Thread(target=start) for _ in range(3)]
    for thread in starters:
        thread.start()
    for thread in starters:
        thread.join()
    answered = []
    for _ in range(5):  # while the worker runs them
        event = httpx.post(f"{stack.events}/events/s3", json={"Records": []}, headers=AUTH)
        health = httpx.get(f"{stack.events}/healthz")
        answered.append((event.status_code, health.status_code))
    assert answered == [(202, 200)] * 5
    for location in locations:
        assert "model(s) examined" in finished(browser, location)
    assert len(locations) == 3
    assert snapshot(stack) == before
