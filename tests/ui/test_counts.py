"""The fleet page counts models, as `tfcompat check` does over the same files.

A fixture fleet is uploaded the way a bucket sees it: each SavedModel is several
objects, and its `saved_model.pb` and `variables/variables.index` each send an upload
event (both match the default model patterns). Every event is processed and indexed
as the worker does (a real index on Redis); the page's counts (models indexed, what
each consumer cannot serve, what adding a consumer would newly break) must equal the
ones `tfcompat check` gives over the same models.
"""

from __future__ import annotations

import json
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
from worker.cli.preview_run import change_view
from worker.fleet.fleet import load_fleet
from worker.formats.access import ReadPolicy
from worker.model.events import ObjectEvent
from worker.model.verdict import Status, consumer_status_json
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
        view = change_view(index, load_fleet(s.fleet, catalog), catalog, change)
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
