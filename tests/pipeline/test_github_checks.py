"""The tf-compat check run, written through PyGithub to a local GitHub stand-in that
checks every request against GitHub's OpenAPI description; jobs come from GitHub's
own example deliveries; models are real TensorFlow-written files."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from hypothesis import given
from hypothesis import strategies as st

from tests.sinks.documents import NEW_OP, STRIPPED, UNSTRIPPED, checker
from tests.standins.github import GitHubStandIn
from tests.truth import ROOT, SHARED
from worker.errors import InvalidArtifact, MalformedEvent, TfcompatError, TransientError
from worker.formats.read import read_path
from worker.github.checks import ANNOTATIONS_PER_REQUEST, CHECK_NAME, check_commit, pointer_target
from worker.github.ports import ChangedFile, MemoryChecks
from worker.github.webhook import job_from_delivery
from worker.model.artifact import Artifact
from worker.model.github import GithubJob
from worker.settings import Settings
from worker.sinks.github import GitHubClients

FIXTURES = ROOT / "tests" / "fixtures" / "github"
TOKEN = "ghp_standin"
PATTERNS = Settings().model_patterns
FLEET = (ROOT / "config" / "fleet.yaml").read_bytes()


def job(name: str, event: str) -> GithubJob:
    found = job_from_delivery(event, "d-1", json.loads((FIXTURES / name).read_text()))
    assert found is not None
    return found


OPENED = functools.partial(job, "pull_request.opened.json", "pull_request")
RERUN = functools.partial(job, "check_run.rerequested.json", "check_run")


@functools.cache
def pointed(url: str) -> list[Artifact]:
    """The stand-in object store for pointers: s3://models/<fixture path under SHARED>."""
    return read_path(str(SHARED / url.removeprefix("s3://models/")))


@pytest.fixture
def github() -> Iterator[GitHubStandIn]:
    with GitHubStandIn(personal_token=TOKEN) as server:
        yield server  # type: ignore[misc]
    assert server.violations == []  # every request matched GitHub's published contract


def client(github: GitHubStandIn) -> Any:
    settings = Settings(github_api_url=github.url, github_token=TOKEN)  # type: ignore[arg-type]
    return GitHubClients(settings, write_interval=0).for_installation(1)


def run(github: GitHubStandIn, job: GithubJob) -> Any:
    return check_commit(
        job,
        client(github),
        checker(),
        fleet_path="config/fleet.yaml",
        patterns=PATTERNS,
        read_pointer=pointed,
    )


def pull(github: GitHubStandIn, files: dict[str, bytes], removed: tuple[str, ...] = ()) -> None:
    github.state.files.update(files)
    github.state.pull_files[2] = [{"filename": p, "status": "added"} for p in files] + [
        {"filename": p, "status": "removed"} for p in removed
    ]


def model_bytes(model: Path) -> bytes:
    return (model / "saved_model.pb").read_bytes()


def the_run(github: GitHubStandIn) -> dict[str, Any]:
    (only,) = github.state.check_runs.values()
    return only


def test_pull_request_with_a_model_and_a_pointer_fails_with_the_matrix(
    github: GitHubStandIn,
) -> None:
    pull(
        github,
        {
            "models/ranking/saved_model.pb": model_bytes(NEW_OP),
            "models/search.tfmodel": b"# search model v3\ns3://models/artifacts/tf2.12/savedmodel_v1_stripped\n",
            "README.md": b"# docs",
        },
        removed=("models/old/saved_model.pb",),
    )
    opened = OPENED()
    output = run(github, opened)
    check = the_run(github)
    assert (check["name"], check["head_sha"]) == (CHECK_NAME, opened.head_sha)
    assert check["statuses"] == ["in_progress", "completed"]
    assert check["conclusion"] == output.conclusion == "failure"
    summary = check["output"]["summary"]
    assert check["output"]["title"] == "1 of 2 models cannot serve in every consumer"
    assert "| Model | Status | serving-prod<br>2.15.1 | serving-canary<br>2.21.0 |" in summary
    assert (
        "| `models/ranking/saved_model.pb` | ❌ incompatible | ❌ | ✅ | ❌ | ❌ | 2.20.0-2.21.x |"
        in summary
    )
    assert (
        "`models/search.tfmodel`<br>→ `s3://models/artifacts/tf2.12/savedmodel_v1_stripped`"
        in summary
    )
    assert (
        "`models/ranking/saved_model.pb`: Upgrade `serving-prod` to TensorFlow >= 2.20.0" in summary
    )
    assert "README" not in summary and "models/old" not in summary
    by_title = {a["title"]: a for a in check["annotations"]}
    failing = by_title[
        "serving-prod (TensorFlow 2.15.1) cannot serve models/ranking/saved_model.pb"
    ]
    assert (failing["path"], failing["start_line"], failing["annotation_level"]) == (
        "models/ranking/saved_model.pb",
        1,
        "failure",
    )
    assert "op `DecodeWebP` not registered" in failing["message"]
    assert "Fix: Upgrade `serving-prod` to TensorFlow >= 2.20.0" in failing["message"]
    assert {a["path"] for a in check["annotations"]} <= {
        "models/ranking/saved_model.pb",
        "models/search.tfmodel",
    }


def test_annotations_go_out_fifty_at_a_time(github: GitHubStandIn) -> None:
    # 21 models, 3 consumers that cannot load each: 63 annotations.
    pull(github, {f"m{i:02d}.tfmodel": b"s3://models/artifacts/tf2.21/new_op\n" for i in range(21)})
    output = run(github, OPENED())
    assert len(output.annotations) == 63
    (create,) = [body for method, _, body in github.writes if method == "POST"]
    assert create["status"] == "in_progress" and "output" not in create
    patches = [body for method, _, body in github.writes if method == "PATCH"]
    sizes = [len(body["output"]["annotations"]) for body in patches]
    assert sizes == [ANNOTATIONS_PER_REQUEST, 13]
    assert patches[0]["status"] == "completed" and patches[0]["conclusion"] == "failure"
    assert "status" not in patches[1]  # later batches only add annotations
    assert len(the_run(github)["annotations"]) == 63


def test_a_change_without_models_succeeds(github: GitHubStandIn) -> None:
    pull(github, {"README.md": b"docs", "src/app.py": b"print()"})
    output = run(github, OPENED())
    check = the_run(github)
    assert output.conclusion == check["conclusion"] == "success"
    assert check["output"]["title"] == "No TensorFlow model, model pointer or fleet file changed"


def test_at_risk_and_unreadable_files_are_neutral(github: GitHubStandIn) -> None:
    lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12345\n"
    big = b"\x0a" + bytes(range(256)) * 6000  # 1.5 MB: read through the blob API
    pull(github, {"lfs/saved_model.pb": lfs, "big.pb": big, "bad.tfmodel": b"https://x/y"})
    output = run(github, OPENED())
    assert output.conclusion == "neutral"
    annotations = {a["path"]: a for a in the_run(github)["annotations"]}
    assert "Git LFS pointer" in annotations["lfs/saved_model.pb"]["message"]
    assert "one s3://bucket/key line" in annotations["bad.tfmodel"]["message"]
    assert annotations["big.pb"]["annotation_level"] == "warning"
    assert github.seen("GET", next(r.path for r in github.requests if "/git/blobs/" in r.path))


def test_fleet_change_checks_the_repositorys_models_with_the_new_fleet(
    github: GitHubStandIn,
) -> None:
    github.state.files["models/a/saved_model.pb"] = model_bytes(UNSTRIPPED)
    new_fleet = (
        b"consumers:\n"
        b"  - name: old-edge\n    tensorflow: '1.15'\n    loader: graph-import\n"
        b"  - name: new-serving\n    serving: '2.21'\n"
    )
    pull(github, {"config/fleet.yaml": new_fleet})
    output = run(github, OPENED())
    check = the_run(github)
    assert output.conclusion == "failure"
    assert "old-edge<br>1.15.5 | new-serving<br>2.21.0" in check["output"]["summary"]
    assert "the fleet file changed in this pull request" in check["output"]["summary"]
    (annotation,) = check["annotations"]
    assert (annotation["path"], annotation["start_line"]) == ("config/fleet.yaml", 2)
    assert annotation["title"].startswith("old-edge (TensorFlow 1.15.5) cannot serve models/a")


def test_fleet_change_fails_when_it_would_break_a_model_checked_elsewhere(
    github: GitHubStandIn,
) -> None:
    """The repository has no models; the impact on the index decides."""
    from worker.catalog.catalog import load_catalog
    from worker.fleet.digests import consumer_digest
    from worker.fleet.impact import LOADS, assess
    from worker.model.index import IndexedModel

    catalog = load_catalog()
    serving = catalog.consumer("2.21", name="new-serving")
    indexed = IndexedModel(
        "models",
        "vision/7/saved_model.pb",
        None,
        "models",
        "r.json",
        "compatible",
        tuple(read_path(str(NEW_OP))),
        {"new-serving": LOADS},
        {"new-serving": consumer_digest(serving)},
    )
    seen: list[list[str]] = []

    def impact(proposed: Any) -> Any:
        seen.append([c.name for c in proposed.consumers])
        return assess([indexed], proposed.consumers, history=proposed.catalog)

    new_fleet = (
        b"consumers:\n  - name: new-serving\n    serving: '2.21'\n"
        b"  - name: batch\n    tensorflow: '2.12'\n"
    )
    pull(github, {"config/fleet.yaml": new_fleet})
    output = check_commit(
        OPENED(),
        client(github),
        checker(),
        fleet_path="config/fleet.yaml",
        patterns=PATTERNS,
        read_pointer=pointed,
        fleet_impact=impact,
    )
    assert seen == [["new-serving", "batch"]]  # the proposed fleet, not the deployed one
    assert output.conclusion == "failure"
    summary = the_run(github)["output"]["summary"]
    assert "Impact on every model checked so far" in summary
    assert (
        "s3://models/vision/7/saved_model.pb" in summary and "`batch` new → incompatible" in summary
    )


def test_a_fleet_file_that_does_not_load_fails_on_its_line(github: GitHubStandIn) -> None:
    bad = FLEET.replace(b'serving: "2.15.1"', b'serving: "2.99"')
    pull(github, {"config/fleet.yaml": bad})
    output = run(github, OPENED())
    (annotation,) = the_run(github)["annotations"]
    assert output.conclusion == "failure"
    assert annotation["path"] == "config/fleet.yaml"
    assert (
        annotation["start_line"] == FLEET.decode().splitlines().index("  - name: serving-prod") + 1
    )
    assert "2.99" in annotation["message"] and "/tmp" not in annotation["message"]


def test_rerequested_run_without_pull_requests_checks_the_whole_repository(
    github: GitHubStandIn,
) -> None:
    github.state.files.update(
        {"a/saved_model.pb": model_bytes(STRIPPED), "b/saved_model.pb": model_bytes(NEW_OP)}
    )
    rerun = RERUN()
    github.state.check_runs[99] = {
        "name": CHECK_NAME,
        "head_sha": rerun.head_sha,
        "status": "completed",
        "statuses": ["completed"],
        "annotations": [],
    }
    output = run(github, rerun)
    assert output.conclusion == "failure"
    assert len(github.state.check_runs) == 2  # a re-run gets a new run, as GitHub expects
    (new,) = [i for i in github.state.check_runs if i != 99]
    assert "`b/saved_model.pb`" in github.state.check_runs[new]["output"]["summary"]
    assert not github.seen(path=f"/repos/github/hello-world/commits/{rerun.head_sha}/check-runs")


def test_a_retried_task_reuses_the_run_it_left_in_progress(github: GitHubStandIn) -> None:
    opened = OPENED()
    pull(github, {"m/saved_model.pb": model_bytes(STRIPPED)})
    github.state.check_runs[7] = {
        "name": CHECK_NAME,
        "head_sha": opened.head_sha,
        "status": "in_progress",
        "statuses": ["in_progress"],
        "annotations": [],
    }
    run(github, opened)
    assert list(github.state.check_runs) == [7]
    assert github.state.check_runs[7]["status"] == "completed"


def test_app_installation_token_is_fetched_once_and_reused() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with GitHubStandIn(app_id="4242", public_key=key.public_key()) as github:
        settings = Settings(
            github_api_url=github.url,
            github_app_id="4242",
            github_app_private_key=pem,  # type: ignore[arg-type]
        )
        clients = GitHubClients(settings, write_interval=0)
        pull(github, {"README.md": b"x"})
        for _ in range(2):
            check_commit(
                OPENED(),
                clients.for_installation(1),
                checker(),
                fleet_path="config/fleet.yaml",
                patterns=PATTERNS,
                read_pointer=pointed,
            )
        assert len(github.seen("POST", "/app/installations/1/access_tokens")) == 1
        assert clients.for_installation(1) is clients.for_installation(1)
        assert clients.for_installation(1) is not clients.for_installation(2)
        assert github.violations == []


def test_an_installation_token_near_expiry_is_fetched_again() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with GitHubStandIn(
        app_id="7", public_key=key.public_key(), token_lifetime=timedelta(seconds=10)
    ) as github:
        settings = Settings(
            github_api_url=github.url,
            github_app_id="7",
            github_app_private_key=pem.replace("\n", "\\n"),  # as one env line
        )
        checks = GitHubClients(settings, write_interval=0).for_installation(3)
        pull(github, {"README.md": b"x"})
        checks.changed_files("o/r", 2)
        checks.changed_files("o/r", 2)
        assert len(github.seen("POST", "/app/installations/3/access_tokens")) == 2
        assert github.violations == []


# Pointer files: one s3:// line, comments and blank lines aside.
@pytest.mark.parametrize(
    ("text", "url"),
    [
        (b"s3://models/ranking/v3/saved_model.pb\n", "s3://models/ranking/v3/saved_model.pb"),
        (b"# owner: ranking\n\n  s3://models/ranking/v3/  \n", "s3://models/ranking/v3/"),
        (b"s3://models/a\ns3://models/b\n", None),
        (b"https://example.com/model.pb", None),
        (b"s3:///no-bucket", None),
        (b"\xff\xfe", None),
        (b"", None),
    ],
)
def test_pointer_files(text: bytes, url: str | None) -> None:
    if url is None:
        with pytest.raises(InvalidArtifact):
            pointer_target(text, "m.tfmodel")
    else:
        assert pointer_target(text, "m.tfmodel") == url


@given(st.binary(max_size=200))
def test_any_pointer_bytes_give_a_url_or_our_error(data: bytes) -> None:
    with contextlib.suppress(InvalidArtifact):
        assert pointer_target(data, "m.tfmodel").startswith("s3://")


@given(
    st.recursive(
        st.none() | st.integers() | st.text(max_size=5),
        lambda c: (
            st.lists(c)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "action",
                        "pull_request",
                        "head",
                        "sha",
                        "number",
                        "repository",
                        "full_name",
                        "check_run",
                        "head_sha",
                        "pull_requests",
                    ]
                ),
                c,
            )
        ),
        max_leaves=20,
    )
)
def test_any_payload_gives_a_job_nothing_or_our_error(payload: Any) -> None:
    for event in ("pull_request", "check_run", "check_suite"):
        with contextlib.suppress(MalformedEvent):
            job_from_delivery(event, "d", payload)


def test_a_transient_failure_leaves_the_run_in_progress_for_the_retry() -> None:
    checks = MemoryChecks(changed=[ChangedFile("m.tfmodel", "added")])
    checks.files["m.tfmodel"] = b"s3://models/x\n"

    def unavailable(url: str) -> list[Artifact]:
        raise TransientError("s3 slow down")

    with pytest.raises(TransientError):
        check_commit(
            OPENED(),
            checks,
            checker(),
            fleet_path="f.yaml",
            patterns=PATTERNS,
            read_pointer=unavailable,
        )
    assert [run["status"] for run in checks.runs.values()] == ["in_progress"]
    check_commit(
        OPENED(), checks, checker(), fleet_path="f.yaml", patterns=PATTERNS, read_pointer=pointed
    )
    assert [run["status"] for run in checks.runs.values()] == ["completed"]


def test_any_other_failure_completes_the_run_as_neutral() -> None:
    checks = MemoryChecks(changed=[ChangedFile("m.tfmodel", "added")])
    checks.files["m.tfmodel"] = b"s3://models/x\n"

    def denied(url: str) -> list[Artifact]:
        raise TfcompatError("s3://models/x: S3 error AccessDenied")

    output = check_commit(
        OPENED(), checks, checker(), fleet_path="f.yaml", patterns=PATTERNS, read_pointer=denied
    )
    assert output.conclusion == "neutral"
    assert checks.runs[1]["conclusion"] == "neutral"
    assert "AccessDenied" in checks.updates[-1][1]["output"]["summary"]


PUSH = json.loads((FIXTURES / "push.json").read_text())


def touching(paths: list[str], ref: str = "refs/heads/master") -> dict[str, Any]:
    """GitHub's example push, its commit now modifying `paths`."""
    payload = json.loads(json.dumps(PUSH))
    payload["ref"] = ref
    payload["commits"][0]["modified"] = paths
    return payload


@pytest.mark.parametrize(
    ("payload", "wanted"),
    [
        (PUSH, False),  # GitHub's own example modifies nothing
        (touching(["config/fleet.yaml"]), True),
        (touching(["README.md"]), False),
        (touching(["config/fleet.yaml"], ref="refs/heads/feature"), False),  # not the default
        ({**touching(["config/fleet.yaml"]), "after": "0" * 40}, False),  # a branch deleted
        ({**touching([]), "commits": []}, True),  # too many commits to list: assume it may
    ],
)
def test_a_push_of_the_fleet_file_to_the_default_branch_asks_for_reevaluation(
    payload: dict[str, Any], wanted: bool
) -> None:
    job = job_from_delivery("push", "d-9", payload, "config/fleet.yaml")
    assert (job is not None) == wanted
    if job is not None:
        assert (job.event, job.head_sha, job.repository) == (
            "push",
            payload["after"],
            payload["repository"]["full_name"],
        )


def test_a_pushed_fleet_retags_indexed_models_from_stored_metadata(
    github: GitHubStandIn,
) -> None:
    from types import SimpleNamespace

    from tests.sinks.test_index import FakeRedis
    from worker.catalog.catalog import load_catalog
    from worker.fleet.digests import consumer_digest
    from worker.fleet.impact import LOADS
    from worker.model.index import IndexedModel
    from worker.pipeline.github_tasks import reevaluate_pushed_fleet
    from worker.pipeline.process import ReportLocation
    from worker.sinks.index import BUILT, ModelIndex
    from worker.sinks.memory import MemoryObjectStore

    catalog = load_catalog()
    store = MemoryObjectStore()
    store.put("models", "vision/7/saved_model.pb", model_bytes(NEW_OP))
    redis = FakeRedis()
    index = ModelIndex(redis, store, ["models"], "r/")
    redis.set(BUILT, "1")
    serving = catalog.consumer("2.21", name="new-serving")
    index.put(
        IndexedModel(
            "models",
            "vision/7/saved_model.pb",
            None,
            "models",
            "r/x.json",
            "compatible",
            tuple(read_path(str(NEW_OP))),
            {"new-serving": LOADS},
            {"new-serving": consumer_digest(serving)},
        )
    )
    github.state.files["config/fleet.yaml"] = (
        b"consumers:\n  - {name: new-serving, serving: '2.21'}\n"
        b"  - {name: batch, tensorflow: '2.12'}\n"
    )
    job = job_from_delivery("push", "d-10", touching(["config/fleet.yaml"]), "config/fleet.yaml")
    assert job is not None
    services = SimpleNamespace(
        store=store, index=index, checker=checker(), location=ReportLocation(None, "r/")
    )
    settings = Settings(github_fleet_path="config/fleet.yaml")
    result = reevaluate_pushed_fleet(job, client(github), settings, services)
    assert (result["examined"], result["changed"]) == (1, 1)
    tags = {t["Key"]: t["Value"] for t in store.tags[("models", "vision/7/saved_model.pb")]}
    assert tags["tfcompat:status"] == "incompatible"
    assert github.state.check_runs == {}  # a push re-evaluates; it opens no check run
