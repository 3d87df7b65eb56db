"""An artifact's JSON (the metadata stored in reports and the index) is what
`dataclasses.asdict` makes of it, value for value and type for type, on every
committed model file of every kind: `Artifact.to_json` builds it without asdict."""

from __future__ import annotations

import dataclasses
from collections import namedtuple
from pathlib import Path

from worker.errors import TfcompatError
from worker.formats.read import read_path
from worker.model.artifact import plain

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUFFIXES = (".h5", ".keras", ".tflite", ".pb", ".pbtxt", ".index")


def model_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def test_every_fixture_artifact_converts_as_asdict_does() -> None:
    compared = set()
    for path in model_files():
        try:
            artifacts = read_path(str(path))
        except TfcompatError:  # the invalid inputs among the fixtures
            continue
        for artifact in artifacts:
            assert artifact.to_json() == dataclasses.asdict(artifact), path
            compared.add(artifact.format)
    # every kind of artifact took part (a reader failing on all of one kind would hide it)
    assert compared == {"graphdef", "savedmodel", "checkpoint", "tflite", "keras", "keras-h5"}


Pair = namedtuple("Pair", "left right")


@dataclasses.dataclass(frozen=True)
class Inner:
    values: tuple[int, ...]
    named: Pair


@dataclasses.dataclass(frozen=True)
class Outer:
    inner: Inner
    mapping: dict[str, list[Inner]]
    data: bytes
    missing: None = None


def test_containers_keep_their_types_as_asdict_keeps_them() -> None:
    inner = Inner((1, 2), Pair([3], {"k": (4,)}))
    value = Outer(inner, {"a": [inner]}, b"\x00")
    found = plain(value)
    assert found == dataclasses.asdict(value)
    assert type(found["inner"]["values"]) is tuple
    assert type(found["inner"]["named"]) is Pair
    assert type(found["mapping"]["a"]) is list
    assert found["mapping"]["a"][0] is not found["inner"]  # a copy, as asdict makes
