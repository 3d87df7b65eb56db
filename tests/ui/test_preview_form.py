"""What the preview form takes: releases and fleet consumers, never a manifest path;
the refusal is decided from the text, whether or not a file is there."""

from __future__ import annotations

import pytest

from worker.ui.preview_form import FormProblem, change_of, release_or_consumer

FLEET = ["serving-prod", "legacy-edge"]


# releases of the catalog, with or without a loader, and the fleet's own consumers
@pytest.mark.parametrize(
    "spec",
    ["tf==2.16", "tf==2.12.1", "tf==2.12@saved-model-v2", "serving==2.15", "legacy-edge"],
)
def test_a_release_or_a_fleet_consumer_is_taken(spec: str) -> None:
    assert release_or_consumer(spec, FLEET) == spec


# manifests, paths and anything a file could hide behind
@pytest.mark.parametrize(
    "spec",
    [
        "mine=/etc/passwd",
        "mine=/no/such/file.json",
        "mine=manifest.json",
        "tf==../../etc/passwd",
        "tf==2.16@/tmp/x",
        "/etc/passwd",
    ],
)
def test_a_manifest_or_a_path_is_refused_by_its_text(spec: str) -> None:
    with pytest.raises(FormProblem, match=r"not a manifest|neither a release"):
        release_or_consumer(spec, FLEET)


def test_the_refusal_is_the_same_for_a_file_that_exists_and_one_that_does_not() -> None:
    messages = set()
    for path in ("/etc/passwd", "/no/such/file.json"):
        with pytest.raises(FormProblem) as refused:
            release_or_consumer(f"mine={path}", FLEET)
        messages.add(str(refused.value))
    assert len(messages) == 1


def test_an_unknown_loader_is_refused() -> None:
    with pytest.raises(FormProblem, match="neither a release"):
        release_or_consumer("tf==2.16@pickle", FLEET)


# the change each action makes, as the preview task takes it
def test_each_action_makes_its_change() -> None:
    add = {"action": "add", "spec": "tf==2.10", "consumer": ""}
    assert change_of(add, FLEET) == {"add": [[None, "tf==2.10"]], "remove": []}
    move = {"action": "upgrade", "spec": "tf==2.21", "consumer": "serving-prod"}
    assert change_of(move, FLEET) == {
        "add": [["serving-prod", "tf==2.21"]],
        "remove": ["serving-prod"],
    }
    drop = {"action": "remove", "spec": "", "consumer": "legacy-edge"}
    assert change_of(drop, FLEET) == {"add": [], "remove": ["legacy-edge"]}


def test_adding_a_consumer_the_fleet_has_is_refused() -> None:
    with pytest.raises(FormProblem, match="already a consumer"):
        change_of({"action": "add", "spec": "legacy-edge", "consumer": ""}, FLEET)
