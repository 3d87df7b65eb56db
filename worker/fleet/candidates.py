"""The releases a consumer may move to, for `tfcompat fleet plan` (`worker.fleet.plan`).

The newest patch of every catalog minor (with an op registry) that the consumer's
`upgrade_to` in the fleet file admits (a PEP 440 range, ">=2.12,<2.19"), by default
every one not older than its own; each the consumer as it is but for its release.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from worker.catalog.catalog import Catalog
from worker.catalog.keras import keras_of_release
from worker.errors import ConfigError
from worker.fleet.fleet import fleet_file, load_yaml
from worker.model.consumer import Consumer

_LINE = "__line__"  # set by fleet.load_yaml on every mapping


@dataclass(frozen=True)
class Candidate:
    """One consumer at one release: `definition` is what `fleet impact` would be given
    (the consumer replaced, its name kept)."""

    consumer: str
    release: str
    definition: Consumer
    current: bool = False


def _declared_keras(consumer: Consumer) -> str | None:
    """The Keras the fleet entry declared (None: the one its release brings, which moves
    with the release)."""
    derived = keras_of_release(consumer.tensorflow)
    return consumer.keras if consumer.keras != derived else None


def moved(consumer: Consumer, release: str, catalog: Catalog) -> Consumer:
    """`consumer` running `release`: its loader, GPU, declared Keras and Python, custom
    objects, TF Serving, environment and owners kept."""
    base = catalog.consumer(release, consumer.loader, name=consumer.name)
    return replace(
        base,
        environment=consumer.environment,
        owners=consumer.owners,
        keras=_declared_keras(consumer) or base.keras,
        python=consumer.python,
        tf_serving=consumer.tf_serving,
        gpu=consumer.gpu,
        custom_objects=consumer.custom_objects,
    )


def plannable(consumer: Consumer) -> str | None:
    """Why a consumer has no candidates (None: it has): a TFLite runtime of its own or a
    build of no known release moves along no catalog."""
    if consumer.tflite is not None and consumer.tflite.standalone:
        return "a TFLite runtime: no TensorFlow release to move to"
    if consumer.tensorflow is None:
        return "no TensorFlow release known (a custom build)"
    return None


def candidates(
    consumer: Consumer, catalog: Catalog, allowed: SpecifierSet | None = None
) -> list[Candidate]:
    """The consumer as it is, then at the newest patch of every catalog minor (with an op
    registry) that `allowed` admits, by default every one not older than its own,
    ascending. Empty when it cannot move (`plannable`)."""
    if plannable(consumer) is not None:
        return []
    assert consumer.tensorflow is not None
    current = Version(consumer.tensorflow)
    newest: dict[tuple[int, int], str] = {}
    for release in catalog.releases:
        if release.registry_version is None:
            continue
        version = release.key
        if allowed is not None:
            if not allowed.contains(version, prereleases=True):
                continue
        elif (version.major, version.minor) < (current.major, current.minor):
            continue
        newest[(version.major, version.minor)] = release.version
    found = [Candidate(consumer.name, consumer.tensorflow, consumer, current=True)]
    for version_text in sorted(newest.values(), key=Version):
        if version_text != consumer.tensorflow:
            found.append(
                Candidate(consumer.name, version_text, moved(consumer, version_text, catalog))
            )
    return found


def upgrade_ranges(path: str | Path) -> dict[str, SpecifierSet]:
    """Each consumer's `upgrade_to` in the fleet file (a PEP 440 specifier such as
    ">=2.12,<2.19": the releases it may move to); ConfigError naming the line of one
    that is not a specifier."""
    data = load_yaml(fleet_file(path))
    found: dict[str, SpecifierSet] = {}
    for entry in data.get("consumers") or []:
        if not isinstance(entry, dict) or entry.get("upgrade_to") is None:
            continue
        value = entry["upgrade_to"]
        where = f"{fleet_file(path)}:{entry.get(_LINE, '?')}"
        try:
            if not isinstance(value, str) or not value.strip():
                raise InvalidSpecifier(repr(value))
            found[str(entry.get("name"))] = SpecifierSet(value)
        except InvalidSpecifier:
            raise ConfigError(
                f'{where}: upgrade_to must be a version range like ">=2.12,<2.19" (got {value!r})'
            ) from None
    return found
