"""MLflow webhook deliveries: the signature checked as MLflow makes it, freshness, payloads."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.errors import MalformedEvent
from worker.model.registry import RegistryJob
from worker.registries.mlflow_webhook import (
    job_from_delivery,
    signature,
    signature_valid,
    timestamp_fresh,
)

SECRET = "webhook-secret"


def mlflow_signature(secret: str, delivery: str, timestamp: str, body: bytes) -> str:
    """MLflow's own signing function (mlflow/webhooks/delivery.py)."""
    from mlflow.webhooks.delivery import _generate_hmac_signature

    return str(_generate_hmac_signature(secret, delivery, timestamp, body.decode()))


def created(name: str = "churn", version: object = "3") -> dict[str, object]:
    return {
        "entity": "model_version",
        "action": "created",
        "timestamp": "2026-12-03T12:00:00+00:00",
        "data": {"name": name, "version": version, "source": "models:/m-1", "tags": {}},
    }


# The signature: MLflow's, over delivery id, timestamp and the raw body.
def test_our_signature_is_mlflows() -> None:
    body = json.dumps(created()).encode()
    delivery = str(uuid.uuid4())
    assert signature(SECRET.encode(), delivery, "1796300000", body) == mlflow_signature(
        SECRET, delivery, "1796300000", body
    )


def test_a_signature_over_another_delivery_id_or_timestamp_does_not_verify() -> None:
    body = b'{"entity": "model_version"}'
    header = mlflow_signature(SECRET, "a", "1796300000", body)
    assert signature_valid(SECRET.encode(), "a", "1796300000", body, header)
    assert not signature_valid(SECRET.encode(), "b", "1796300000", body, header)
    assert not signature_valid(SECRET.encode(), "a", "1796300001", body, header)
    assert not signature_valid(SECRET.encode(), "a", "1796300000", body + b" ", header)
    assert not signature_valid(b"other", "a", "1796300000", body, header)


def test_one_matching_signature_among_several_verifies() -> None:
    body = b"{}"
    good = mlflow_signature(SECRET, "d", "1", body)
    assert signature_valid(SECRET.encode(), "d", "1", body, f"v1,AAAA {good}")
    assert not signature_valid(SECRET.encode(), "d", "1", body, "v1,AAAA v2,BBBB")
    assert not signature_valid(SECRET.encode(), "d", "1", body, "")
    assert not signature_valid(SECRET.encode(), "d", "1", body, None)


# Freshness: Unix seconds within the tolerance, either side of our clock.
@pytest.mark.parametrize(
    ("timestamp", "fresh"),
    [
        ("1000", True),
        ("700", True),
        ("1300", True),
        ("699", False),
        ("1301", False),
        ("", False),
        ("-5", False),
        ("1e3", False),
        ("\u0661\u0660\u0660\u0660", False),  # Arabic-Indic digits: isdigit(), not ASCII
        ("9" * 40, False),
    ],
)
def test_timestamp_freshness(timestamp: str, fresh: bool) -> None:
    assert timestamp_fresh(timestamp, now=1000.0, tolerance=300) is fresh


# Payloads: model_version.created starts a check; other events start nothing.
def test_a_created_version_is_a_job() -> None:
    assert job_from_delivery("d-1", created()) == RegistryJob("mlflow", "churn", "3", "d-1")
    assert job_from_delivery("d-2", created(version=4)) == RegistryJob(
        "mlflow", "churn", "4", "d-2"
    )


@pytest.mark.parametrize(
    ("entity", "action"),
    [
        ("model_version_tag", "set"),
        ("model_version_tag", "deleted"),
        ("model_version_alias", "created"),
        ("registered_model", "created"),
    ],
)
def test_other_events_start_nothing(entity: str, action: str) -> None:
    assert job_from_delivery("d", {"entity": entity, "action": action, "data": {}}) is None


@pytest.mark.parametrize(
    "payload",
    [
        [],
        {"entity": "model_version"},
        {"entity": "model_version", "action": "created"},
        {"entity": "model_version", "action": "created", "data": {"name": "x"}},
        {"entity": "model_version", "action": "created", "data": {"name": "", "version": "1"}},
        {"entity": "model_version", "action": "created", "data": {"name": "x", "version": True}},
    ],
)
def test_malformed_payloads_are_refused(payload: object) -> None:
    with pytest.raises(MalformedEvent):
        job_from_delivery("d", payload)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
    )
)
def test_any_json_is_a_job_none_or_malformed(payload: object) -> None:
    try:
        job = job_from_delivery("d", payload)
    except MalformedEvent:
        return
    assert job is None or (job.name and job.version)


def test_a_job_round_trips_through_json() -> None:
    job = RegistryJob("mlflow", "churn", "3", "d-1")
    assert RegistryJob.from_json(json.loads(json.dumps(job.to_json()))) == job
    with pytest.raises(MalformedEvent):
        RegistryJob.from_json({**job.to_json(), "registry": "hub"})
