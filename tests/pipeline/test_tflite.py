"""A .tflite upload, as the pipeline sees it: its key starts a check, the object is read
from a real S3 endpoint (moto's server) with few requests, and it is tagged and reported
like any model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.services import s3
from worker.formats.access import ReadPolicy
from worker.formats.read import read_path
from worker.ingest.events import EventFilter
from worker.model.events import ObjectEvent
from worker.pipeline.fixes import write_fixed_copies
from worker.pipeline.process import ReportLocation, process_event
from worker.pipeline.services import build_checker
from worker.settings import DEFAULT_MODEL_PATTERNS, Settings
from worker.sinks.memory import MemoryObjectStore
from worker.sinks.s3 import read_s3_artifacts

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "tflite" / "models" / "tf2.21"
INT8 = MODEL / "dense_int8.tflite"


def test_a_tflite_key_starts_a_check() -> None:
    wanted = EventFilter(DEFAULT_MODEL_PATTERNS)
    assert wanted.wants(ObjectEvent("b", "mobile/1/model.tflite", "ObjectCreated:Put"))


def test_a_tflite_upload_is_tagged_with_its_status_and_releases() -> None:
    store = MemoryObjectStore()
    store.put("b", "mobile/model.tflite", INT8.read_bytes())
    checker = build_checker(Settings(fleet="config/fleet.yaml"))
    event = ObjectEvent("b", "mobile/model.tflite", "ObjectCreated:Put")
    outcome = process_event(event, store, checker, ReportLocation(None, "reports/"), ReadPolicy())
    tags = {t["Key"]: t["Value"] for t in store.get_tags("b", "mobile/model.tflite", None)}
    # legacy-edge runs TensorFlow 1.15: it runs the file and answers zeros
    assert tags["tfcompat:status"] == "incompatible"
    assert tags["tfcompat:releases"] == "2.10.0-2.21.x"  # 1.15 to 2.9 answer zeros
    assert tags["tfcompat:graph-def"] == f"fleet={checker.fleet_digest}"  # no graph version
    report = json.loads(store.objects[("b", outcome.report or "")])
    (artifact,) = report["artifacts"]
    assert artifact["format"] == "tflite" and artifact["metadata"]["tflite"]["schema_version"] == 3
    assert report["fleet"]["verdicts"]["legacy-edge"] == "incompatible"
    # batch-scoring runs TensorFlow 2.12's interpreter; TF Serving reads no bare .tflite
    assert report["fleet"]["verdicts"]["batch-scoring"] == "compatible"
    assert report["fleet"]["verdicts"]["serving-canary"] == "incompatible"
    serving = next(c for c in artifact["consumers"] if c["name"] == "serving-canary")
    assert [f["code"] for f in serving["findings"]] == ["tflite.not-servable"]


def test_a_tflite_upload_gets_no_fixed_copy() -> None:
    store = MemoryObjectStore()
    store.put("b", "mobile/model.tflite", INT8.read_bytes())
    checker = build_checker(Settings(fleet="config/fleet.yaml"))
    event = ObjectEvent("b", "mobile/model.tflite", "ObjectCreated:Put")
    location = ReportLocation(None, "reports/")
    outcome = process_event(event, store, checker, location, ReadPolicy())
    assert outcome.status == "incompatible"
    assert (
        write_fixed_copies(event, outcome, store, checker, location, "fixed/", ReadPolicy()) == []
    )
    assert not any(key.startswith("fixed/") for _, key in store.objects)


def requests(client: Any) -> list[str]:
    """The Range of every GetObject the client sends (None for a whole-object GET)."""
    seen: list[str] = []
    client.meta.events.register(
        "before-call.s3.GetObject", lambda params, **_: seen.append(params.get("Range"))
    )
    return seen


@pytest.mark.services
def test_a_tflite_object_reads_as_the_local_file(endpoint: str) -> None:
    client = s3(endpoint)
    client.create_bucket(Bucket="tflite")
    client.put_object(Bucket="tflite", Key="m/model.tflite", Body=INT8.read_bytes())
    sent = requests(client)
    settings = Settings(s3_endpoint_url=endpoint)
    (artifact,) = read_s3_artifacts("s3://tflite/m/model.tflite", settings, client)
    (local,) = read_path(str(INT8))
    assert (artifact.format, artifact.sha256, artifact.tflite) == (
        "tflite",
        local.sha256,
        local.tflite,
    )
    assert len(sent) == 1


@pytest.mark.services
def test_a_large_tflite_costs_its_tables_not_its_bytes(endpoint: str) -> None:
    # 24 MB after the flatbuffer, as TFLite files with packed metadata or buffers outside
    # the flatbuffer (schema 3c) have; the store holds the SHA-256, so nothing else is read.
    data = INT8.read_bytes() + bytes(24 << 20)
    client = s3(endpoint)
    client.create_bucket(Bucket="tflite-big")
    client.put_object(Bucket="tflite-big", Key="big.tflite", Body=data, ChecksumAlgorithm="SHA256")
    sent = requests(client)
    received: list[int] = []
    settings = Settings(s3_endpoint_url=endpoint)
    (artifact,) = read_s3_artifacts(
        "s3://tflite-big/big.tflite", settings, client, on_read=received.append
    )
    assert artifact.sha256 == hashlib.sha256(data).hexdigest()
    assert artifact.tflite is not None and artifact.tflite.operators == 3
    assert sum(received) < 1 << 20
    assert len(sent) <= 2
