"""`tfcompat inspect|check s3://bucket/key`: the same answers as for local paths."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.pipeline.services import AWS_ENV, ROOT, cli, s3, upload_tree
from tests.truth import SHARED

pytestmark = pytest.mark.services


def test_inspect_and_check_read_objects_from_the_store(endpoint: str) -> None:
    client = s3(endpoint)
    client.create_bucket(Bucket="cli-models")
    upload_tree(client, "cli-models", "m/1", SHARED / "artifacts/tf2.21/new_op")
    client.put_object(
        Bucket="cli-models",
        Key="g.pb",
        Body=(SHARED / "artifacts/tf2.21/frozen_graph/frozen_graph.pb").read_bytes(),
    )
    env = {**AWS_ENV, "PATH": "/usr/bin:/bin", "TFCOMPAT_S3_ENDPOINT_URL": endpoint}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            cli(*args), env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )

    inspect = run("inspect", "s3://cli-models/m/1/saved_model.pb", "--json")
    assert inspect.returncode == 0, inspect.stderr
    (doc,) = json.loads(inspect.stdout)["artifacts"]
    assert doc["path"] == "s3://cli-models/m/1"
    assert doc["checkpoint"]["tensors"] > 0  # variables/ came along with saved_model.pb
    check = run(
        "check", "s3://cli-models/g.pb", "s3://cli-models/m/1/", "--consumer", "tf==2.12", "--json"
    )
    assert check.returncode == 1, check.stderr  # new_op cannot load in 2.12
    reports = json.loads(check.stdout)["artifacts"]
    assert [r["format"] for r in reports] == ["graphdef", "savedmodel"]
    missing = run("check", "s3://cli-models/nothing.pb", "--consumer", "tf==2.12")
    assert missing.returncode == 2 and "not found" in missing.stdout
