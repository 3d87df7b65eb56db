"""The fleet page counts models, as `tfcompat check` does over the same files, and plans
upgrades as `tfcompat fleet plan` does over the same index.

A fixture fleet is uploaded the way a bucket sees it: each SavedModel is several
objects, and its `saved_model.pb` and `variables/variables.index` each send an upload
event (both match the default model patterns). Every event is processed and indexed
as the worker does (a real index on Redis); the page's counts (models indexed, what
each consumer cannot serve, what adding a consumer would newly break) must equal the
ones `tfcompat check` gives over the same models.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.redis_server import redis_url
from tests.sinks.documents import LOCATION, checker
from tests.truth import BASE, ROOT
from worker.catalog.catalog import load_catalog
from worker.cli.preview_run import change_view, plan_view
from worker.fleet.candidates import upgrade_ranges
from worker.fleet.fleet import load_fleet
from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.model.verdict import Status, consumer_status_json
from worker.notify.fixes import fix_text, plain
from worker.pipeline.process import process_event
from worker.pipeline.services import index_hook
from worker.settings import Settings
from worker.sinks import matrix
from worker.sinks.index import BUILT, ModelIndex
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.previews import PreviewStore
from worker.ui.routes import Previews, Sources, ui_routes

TOKEN = "counts-token"
DB = 9
FLEET = ROOT / "config" / "fleet.yaml"
A = BASE / "artifacts"
# (fixture, prefix in the bucket): four SavedModels (one TF2, with fingerprint.pb), a
# frozen graph and a checkpoint: six models, ten objects that notify.
MODELS = [
    (A / "tf2.21/new_op", "vision/7"),
    (A / "tf2.21/new_attr_nondefault", "nlp/3"),
    (A / "tf2.12/savedmodel_v1_stripped", "ranking/v1"),
    (A / "tf2.12/savedmodel_v2", "search/2"),
    (A / "tf2.21/frozen_graph", "edge/frozen"),
    (A / "tf2.12/checkpoint", "training/ckpt"),
]
PATTERNS = re.compile(r"(saved_model\.pb|variables/variables\.index|frozen_graph\.pb|\.index)$")
pytestmark = pytest.mark.services


class Store(MemoryObjectStore):
    def versions(self, bucket: str, key: str, limit: int) -> list[tuple[str, bool, str]]:
        return []


def settings() -> Settings:
    return Settings(
        ui_enabled=True,
        ui_token=SecretStr(TOKEN),
        fleet=str(FLEET),
        broker_url=redis_url(DB),
    )


@pytest.fixture(scope="module")
def indexed() -> Iterator[tuple[ModelIndex, Store, int]]:
    """The fixture fleet uploaded and every notifying object's event processed and
    indexed; and how many events were indexed."""
    client = redis.Redis.from_url(redis_url(DB))
    client.flushdb()
    client.set(BUILT, "1")
    client.set(matrix.BUILT, "1")
    store = Store()
    index = ModelIndex(client, store, ["models"], "tfcompat-reports/")
    record = index_hook(index, store, LOCATION)
    events = 0
    for model, prefix in MODELS:
        for path in sorted(model.rglob("*")):
            if path.is_file():
                key = f"{prefix}/{path.relative_to(model).as_posix()}"
                store.put("models", key, path.read_bytes())
    for model, prefix in MODELS:
        for path in sorted(model.rglob("*")):
            key = f"{prefix}/{path.relative_to(model).as_posix()}"
            if not path.is_file() or not PATTERNS.search(key):
                continue
            etag = store.head("models", key, None).etag
            event = ObjectEvent("models", key, "ObjectCreated:Put", etag=etag)
            outcome = process_event(event, store, checker(), LOCATION, ReadPolicy())
            assert outcome.action == "checked", (key, outcome)
            record(event, outcome)
            events += 1
    yield index, store, events
    client.flushdb()


@pytest.fixture(scope="module")
def client(indexed: tuple[ModelIndex, Store, int]) -> TestClient:
    index, store, _ = indexed
    s = settings()
    catalog = load_catalog()
    results = PreviewStore(redis.Redis.from_url(redis_url(DB)), ttl=600)

    def assess_here(preview_id: str, change: dict[str, Any]) -> None:
        """What the preview task does, in this process: the view, stored as done."""
        fleet = load_fleet(s.fleet, catalog)
        if change.get("kind") == "plan":
            view = plan_view(index, fleet, catalog, upgrade_ranges(s.fleet))
        else:
            view = change_view(index, fleet, catalog, change)
        results.done(preview_id, change, view)

    sources = Sources(
        settings=s,
        index=index,
        store=store,
        catalog=catalog,
        fleet=lambda: load_fleet(s.fleet, catalog),
        previews=Previews(results, assess_here),
    )
    app = Starlette(routes=ui_routes(sources))
    return TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})


def check(*consumers: str) -> list[dict[str, Any]]:
    """`tfcompat check --json` over the fixture models (the folders, the graph file, the
    checkpoint's index), as a user runs it."""
    paths = []
    for model, _ in MODELS:
        if (model / "saved_model.pb").exists():
            paths.append(str(model))
        else:
            paths += [str(p) for p in sorted(model.glob("*.pb")) + sorted(model.glob("*.index"))]
    args = [a for c in consumers for a in ("--consumer", c)] or ["--fleet", str(FLEET)]
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", "check", *paths, *args, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    artifacts: list[dict[str, Any]] = json.loads(done.stdout)["artifacts"]
    return artifacts


def text(html: str) -> str:
    import html as markup

    return re.sub(r"\s+", " ", markup.unescape(re.sub(r"<[^>]+>", " ", html)))


def cannot_serve(artifacts: list[dict[str, Any]], consumer: str) -> int:
    return sum(
        1
        for a in artifacts
        for c in a["consumers"]
        if c["name"] == consumer and (c["loads"] is False or c["serves"] is False)
    )


def test_each_savedmodel_sends_more_than_one_event(indexed: tuple[ModelIndex, Store, int]) -> None:
    _, _, events = indexed
    assert events == 10 and len(MODELS) == 6


def test_the_matrix_counts_models_as_check_does(client: TestClient) -> None:
    artifacts = check()
    page = text(client.get("/ui").text)
    assert f"{len(artifacts)} model(s) indexed" in page


def test_each_consumer_page_counts_the_models_check_says_it_cannot_serve(
    client: TestClient,
) -> None:
    artifacts = check()
    names = {c["name"] for a in artifacts for c in a["consumers"]}
    assert len(names) >= 4
    failing = 0
    for name in sorted(names):
        expected = cannot_serve(artifacts, name)
        failing += expected
        page = text(client.get(f"/ui/consumer/{name}").text)
        assert f"{name} cannot serve {expected} model(s)" in page, (name, page[:300])
    assert failing > 0


def test_a_consumer_page_says_which_release_it_runs(client: TestClient) -> None:
    page = text(client.get("/ui/consumer/legacy-edge").text)
    fleet = load_fleet(str(FLEET), load_catalog())
    edge = next(c for c in fleet.consumers if c.name == "legacy-edge")
    assert f"Runs TensorFlow {edge.tensorflow}," in page
    assert f"({edge.loader})" in page


def test_a_preview_counts_the_models_check_says_a_new_consumer_breaks(
    client: TestClient,
) -> None:
    artifacts = check("tf==2.10")
    breaks = cannot_serve(artifacts, "tf-2.10.1")
    not_serving = sum(
        1 for a in artifacts if consumer_status_json(a["consumers"][0]) != Status.COMPATIBLE
    )
    assert 0 < breaks < len(artifacts)
    form = client.get("/ui/preview").text
    token = re.search(r'name="csrf" value="([^"]+)"', form)
    assert token
    sent = {"action": "add", "spec": "tf==2.10", "csrf": token.group(1)}
    page = text(client.post("/ui/preview", data=sent).text)  # follows to the result
    assert f"{len(artifacts)} model(s) examined; {not_serving} would change." in page
    assert f"{breaks} model(s) would newly fail ({breaks} consumer verdict(s))" in page
    assert "(new) → compatible" not in page


# --- the upgrade plan: the page and its downloads agree with `tfcompat fleet plan` -------------


def fleet_plan(*args: str) -> str:
    """`tfcompat fleet plan ARGS` over the fixture index, as a user runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFCOMPAT_")}
    env.update(TFCOMPAT_BROKER_URL=redis_url(DB), TFCOMPAT_FLEET=str(FLEET))
    done = subprocess.run(
        [sys.executable, "-m", "worker.cli", "fleet", "plan", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_the_plan_download_is_fleet_plan_json(client: TestClient) -> None:
    answer = client.get("/ui/plan.json")
    assert answer.status_code == 200, answer.text
    assert answer.json() == json.loads(fleet_plan("--json"))


def test_the_plan_csv_download_is_fleet_plan_csv(client: TestClient) -> None:
    answer = client.get("/ui/plan.csv")
    assert answer.status_code == 200, answer.text
    assert answer.text == fleet_plan("--csv")


def test_the_plan_page_shows_each_consumer_s_recommendation_and_counts(
    client: TestClient,
) -> None:
    plan = json.loads(fleet_plan("--json"))
    page = text(client.get("/ui/plan").text)
    assert f"{plan['models_examined']} model(s) examined" in page
    planned = [c for c in plan["consumers"] if c["recommended"]]
    assert len(planned) >= 4
    for c in planned:
        said = "Recommended:" if c["serves_all"] else "No release serves every model it must:"
        assert f"{said} {c['recommended']}" in page, (c["name"], page[:500])
        for row in c["candidates"]:
            counts = [row[k] for k in ("serves", "at_risk", "fails", "unknown", "gains")]
            counts += [row["loses"], row["misses"]]
            assert " ".join(str(n) for n in counts) in page, (c["name"], row["release"])


def test_the_plan_page_shows_blockers_with_their_fix_and_the_comparison(
    client: TestClient,
) -> None:
    plan = json.loads(fleet_plan("--json"))
    shown = fleet_plan()
    page = text(client.get("/ui/plan").text)
    causes = [g for c in plan["consumers"] for g in c["blockers"] + c["reexport_instead"]]
    assert causes
    for group in causes:
        assert group["code"] in page
        for model in group["listed"]:
            assert model in page
    compares = [line.split("compare: ", 1)[1] for line in shown.splitlines() if "compare: " in line]
    assert compares
    for line in compares:
        assert line in page
    fixed = 0
    for c in plan["consumers"]:
        for group in c["blockers"] + c["reexport_instead"]:
            said = fix_text(group["reexport"] or group["fix"], c["name"], plain)
            fixed += bool(said)
            assert not said or said in page, (c["name"], said)
    assert fixed
    for p in plan["producers"]:
        if p["newest_now"]:
            assert f"<= {p['newest_now']} until {p['held_by']} moves" in page


def test_the_plan_downloads_refuse_a_script_without_credentials(client: TestClient) -> None:
    anonymous = TestClient(client.app)
    for path in ("/ui/plan.json", "/ui/plan.csv"):
        answer = anonymous.get(path, headers={"Accept": "text/html"})
        assert answer.status_code == 401, path
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
