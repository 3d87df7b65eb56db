"""The read rule (`worker.formats.access.decide`): what the worker may read, for every
kind of model source, and the setting each refusal names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from worker.formats.access import BUCKETS, LOCAL_ROOTS, TRACKING_URI, ReadPolicy, decide

MODELS = ReadPolicy(("models-*", "shared/team-a/"), (), tracking_server=True)


# s3:// and s3a:// objects: the bucket and key globs of TFCOMPAT_BUCKETS
@pytest.mark.parametrize(
    ("uri", "allowed"),
    [
        ("s3://models-prod/m/saved_model.pb", True),
        ("s3a://models-prod/m", True),
        ("s3://shared/team-a/m/model.tflite", True),
        ("s3://shared/team-b/m/model.tflite", False),
        ("s3://secrets/model", False),
        ("s3:///no-bucket", False),
    ],
)
def test_objects_are_read_only_inside_the_bucket_list(uri: str, allowed: bool) -> None:
    decision = decide(MODELS, uri)
    assert (decision.allowed, decision.kind) == (allowed, "s3")
    assert decision.allowed or decision.setting == BUCKETS


def test_an_empty_bucket_list_allows_every_bucket() -> None:
    assert decide(ReadPolicy(), "s3://anything/at/all").allowed


# local paths and file:// URIs: only under TFCOMPAT_LOCAL_ROOTS, after resolving
def test_a_local_path_is_refused_without_local_roots(tmp_path: Path) -> None:
    for uri in (str(tmp_path), f"file://{tmp_path}"):
        decision = decide(MODELS, uri)
        assert not decision.allowed and decision.setting == LOCAL_ROOTS
        assert LOCAL_ROOTS in decision.reason


def test_a_local_path_under_a_root_is_allowed_resolved(tmp_path: Path) -> None:
    (tmp_path / "models" / "m").mkdir(parents=True)
    policy = ReadPolicy(local_roots=(str(tmp_path / "models"),))
    decision = decide(policy, f"file://{tmp_path}/models/m")
    assert decision.allowed and decision.path == os.path.realpath(tmp_path / "models" / "m")


@pytest.mark.parametrize(
    "path",
    [
        "{root}/../outside",  # `..` out of the root
        "{root}-sibling/m",  # a sibling whose name starts like the root
        "{root}/link-out/m",  # a symlink inside the root that leads outside
        "/etc",
    ],
)
def test_a_local_path_that_resolves_outside_every_root_is_refused(
    tmp_path: Path, path: str
) -> None:
    root = tmp_path / "models"
    (tmp_path / "outside" / "m").mkdir(parents=True)
    root.mkdir()
    (root / "link-out").symlink_to(tmp_path / "outside")
    decision = decide(ReadPolicy(local_roots=(str(root),)), path.format(root=root))
    assert not decision.allowed and decision.setting == LOCAL_ROOTS


def test_a_root_given_through_a_symlink_is_compared_resolved(tmp_path: Path) -> None:
    (tmp_path / "real" / "m").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    policy = ReadPolicy(local_roots=(str(tmp_path / "alias"),))
    assert decide(policy, str(tmp_path / "real" / "m")).allowed


def test_a_relative_path_and_a_file_uri_of_another_host_are_refused(tmp_path: Path) -> None:
    policy = ReadPolicy(local_roots=(str(tmp_path),))
    assert not decide(policy, "models/m").allowed
    assert not decide(policy, f"file://fileserver{tmp_path}/m").allowed


# mlflow-artifacts: through the configured tracking server's proxy only
@pytest.mark.parametrize(
    ("policy", "uri", "allowed"),
    [
        (MODELS, "mlflow-artifacts:/1/abc/artifacts/model", True),
        (ReadPolicy(), "mlflow-artifacts:/1/abc/artifacts/model", False),
        (MODELS, "mlflow-artifacts://elsewhere:5000/1/abc/artifacts/model", False),
        (MODELS, "mlflow-artifacts:/1/../../etc", False),
    ],
)
def test_proxied_artifacts_are_read_only_through_our_tracking_server(
    policy: ReadPolicy, uri: str, allowed: bool
) -> None:
    decision = decide(policy, uri)
    assert decision.allowed == allowed
    assert allowed or decision.setting == TRACKING_URI
    assert not allowed or decision.proxied == "1/abc/artifacts/model"


# every other scheme: refused, naming what is read
@pytest.mark.parametrize(
    "uri", ["gs://b/m", "wasbs://c@acct.blob.core.windows.net/m", "dbfs:/m", "http://h/m"]
)
def test_other_schemes_are_refused_with_what_the_worker_reads(uri: str) -> None:
    decision = decide(MODELS, uri)
    assert not decision.allowed and decision.kind == "other"
    assert BUCKETS in decision.reason and LOCAL_ROOTS in decision.reason
