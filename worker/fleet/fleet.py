"""The fleet: the consumers an organisation runs, read from `fleet.yaml`.

```yaml
consumers:
  - name: ranking-serving          # unique
    environment: prod
    owners: [ranking]              # owner names from owners.yaml
    tensorflow: "2.15.1"           # a catalog release ("2.15" = newest 2.15.x) ...
    # serving: "2.15.1"            # ... or a TF Serving release (same numbers as TF)
    # manifest: manifests/edge.json  ... or a manifest from dump-manifest
    # tflite: "2.14"               # ... or a TFLite runtime: tflite-runtime 2.14.x ...
    # litert: "1.4"                # ... or LiteRT (ai-edge-litert); both read .tflite only
    loader: saved-model-v1         # saved-model-v1 (default) | saved-model-v2 | graph-import
policy:
  bad_consumers:                   # releases the organisation bans, as TF bans consumers
    - tensorflow: "2.4.4"          # or graph_def_version: 561
      reason: "..."
  require_models_to_ban: false     # models must list those versions in bad_consumers
  unsafe_ops: warning              # file I/O, Python, network ops: warning (default) | error
  same_answer: warn                # a measured change of results: warn (default) | strict
```
A consumer may also say which Keras and Python it runs (`keras: "3.6"`,
`python: "3.11"`; the Keras defaults to the one its TensorFlow release brings), the
Keras objects its process registers (`custom_objects: [MyLayer, my_loss]`),
`gpu: true` when it runs on a GPU (an op with GPU kernels only then runs), and
`same_answer: strict` when a measured change of results (`kernel.changed`, an
`attr.ignored` that changes results) must block a model for it, not only warn.
Every error names the file and line of the entry at fault.

A TensorFlow consumer checks a `.tflite` file with that release's
`tf.lite.Interpreter`; a `tflite:` or `litert:` consumer is judged on `.tflite`
files only. A version without a measured TFLite table gives unknown verdicts.

`builtin` names the fleet shipped in the package (`data/builtin-fleet.yaml`):
every catalogued release, as a consumer `tf-X.Y.Z` with the default loader, so
`tfcompat check --fleet builtin` and `fleet list` work without a file of one's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from worker.catalog.catalog import Catalog, consumer_for_release
from worker.catalog.opdefs import OpDefCache
from worker.catalog.tflite import FAMILIES as TFLITE_FAMILIES
from worker.catalog.tflite import load_tflite_catalog
from worker.compat.policy import BannedRelease, Policy
from worker.errors import ConfigError, UnknownRelease
from worker.fleet.manifest import consumer_from_manifest
from worker.model.consumer import Consumer, Loader
from worker.model.findings import Severity

_LINE = "__line__"
SOURCES = ("tensorflow", "serving", "manifest", *TFLITE_FAMILIES)
DEFAULT_FLEET = "config/fleet.yaml"  # TFCOMPAT_FLEET's default, relative to the working dir
BUILTIN = "builtin"
BUILTIN_FILE = Path(__file__).resolve().parent / "data" / "builtin-fleet.yaml"
BUILTIN_TEXT = "every TensorFlow release in `tfcompat catalog`, loaded by saved-model-v1"


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that records each mapping's line, for errors that point at it."""


def _mapping_with_line(loader: _LineLoader, node: yaml.MappingNode) -> dict[str, Any]:
    mapping = {str(k): v for k, v in loader.construct_mapping(node, deep=True).items()}
    mapping[_LINE] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


def load_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    try:
        data = yaml.load(text, Loader=_LineLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        return {_LINE: 1}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}:1: expected a mapping at the top level")
    return data


@dataclass(frozen=True)
class Fleet:
    consumers: tuple[Consumer, ...]
    policy: Policy = field(default_factory=Policy)
    source: str = ""

    def names(self) -> list[str]:
        return [c.name for c in self.consumers]


def _where(path: Path, entry: dict[str, Any]) -> str:
    return f"{path}:{entry.get(_LINE, '?')}"


def _loader(value: Any, where: str) -> Loader:
    try:
        return Loader(value or Loader.SAVED_MODEL_V1)
    except ValueError:
        options = ", ".join(loader.value for loader in Loader)
        raise ConfigError(f"{where}: unknown loader {value!r} (one of: {options})") from None


def parse_consumer(
    path: Path, entry: dict[str, Any], catalog: Catalog, cache: OpDefCache
) -> Consumer:
    where = _where(path, entry)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: consumer needs a name")
    loader = _loader(entry.get("loader"), where)
    sources = [k for k in SOURCES if entry.get(k) is not None]
    if len(sources) != 1:
        raise ConfigError(
            f"{where}: consumer {name} needs exactly one of tensorflow, serving, manifest, "
            "tflite or litert"
        )
    owners = entry.get("owners") or []
    if isinstance(owners, str):
        owners = [owners]
    if sources[0] in TFLITE_FAMILIES:
        if entry.get("loader") is not None:
            raise ConfigError(f"{where}: consumer {name}: a TFLite runtime has no loader")
        try:
            consumer = load_tflite_catalog().consumer(sources[0], str(entry[sources[0]]), name)
        except UnknownRelease as exc:
            raise UnknownRelease(f"{where}: consumer {name}: {exc}") from None
    elif sources[0] == "manifest":
        manifest = Path(str(entry["manifest"]))
        if not manifest.is_absolute():
            manifest = path.parent / manifest
        try:
            consumer = consumer_from_manifest(name, manifest, loader, cache)
        except ConfigError as exc:
            raise ConfigError(f"{where}: consumer {name}: {exc}") from None
    else:
        try:
            release = catalog.resolve(str(entry[sources[0]]))
        except UnknownRelease as exc:
            raise UnknownRelease(f"{where}: consumer {name}: {exc}") from None
        consumer = consumer_for_release(catalog, release, loader, name)
    return replace(
        consumer,
        environment=str(entry.get("environment") or ""),
        owners=tuple(str(o) for o in owners),
        keras=_version_entry(entry, "keras", where) or consumer.keras,
        python=_version_entry(entry, "python", where) or consumer.python,
        tf_serving=sources[0] == "serving",
        gpu=_gpu_entry(entry, where),
        same_answer_strict=_same_answer_entry(entry, where),
        custom_objects=_custom_objects_entry(entry, where),
    )


def _custom_objects_entry(entry: dict[str, Any], where: str) -> tuple[str, ...]:
    """`custom_objects: [MyLayer, my_loss, "Custom>Name"]`: Keras objects the consumer's
    process registers or passes to load_model, which then resolve by those names."""
    value = entry.get("custom_objects")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: custom_objects must be a list of names (got {value!r})")
    return tuple(sorted(set(value)))


def _gpu_entry(entry: dict[str, Any], where: str) -> bool:
    """`gpu: true`: the binary runs on a GPU, so an op whose kernels are GPU-only still
    runs (the measured kernel tables are the CPU builds')."""
    value = entry.get("gpu", False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: gpu must be true or false (got {value!r})")
    return value


def _same_answer_entry(entry: dict[str, Any], where: str) -> bool:
    """`same_answer: strict` (a measured change of results is an error) or `warn`."""
    value = entry.get("same_answer") or "warn"
    if value not in ("warn", "strict"):
        raise ConfigError(f"{where}: same_answer is warn or strict (got {value!r})")
    return bool(value == "strict")


def _version_entry(entry: dict[str, Any], key: str, where: str) -> str | None:
    """`keras: "3.6"` / `python: "3.11"`: a dotted version number, kept as written."""
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, float):  # YAML reads 3.10 as 3.1
        raise ConfigError(
            f'{where}: write {key} as a string ("{value}"), YAML reads it as a number'
        )
    text = str(value).strip()
    if not re.fullmatch(r"\d+(\.\d+){0,2}", text):
        raise ConfigError(f'{where}: {key} must be a version number like "3.6" (got {value!r})')
    return text


def _parse_policy(path: Path, data: dict[str, Any], catalog: Catalog) -> Policy:
    bans = []
    for entry in data.get("bad_consumers") or []:
        where = _where(path, entry) if isinstance(entry, dict) else str(path)
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: bad_consumers entries are mappings")
        reason = str(entry.get("reason") or "").strip()
        if not reason:
            raise ConfigError(f"{where}: a banned release needs a reason")
        if entry.get("tensorflow") is not None:
            try:
                release = catalog.resolve(str(entry["tensorflow"]))
            except UnknownRelease as exc:
                raise UnknownRelease(f"{where}: {exc}") from None
            bans.append(
                BannedRelease(release.graph_def_version, f"TensorFlow {release.version}", reason)
            )
        elif isinstance(entry.get("graph_def_version"), int):
            version = entry["graph_def_version"]
            bans.append(BannedRelease(version, f"GraphDef version {version}", reason))
        else:
            raise ConfigError(f"{where}: a banned release needs tensorflow or graph_def_version")
    unsafe = data.get("unsafe_ops") or "warning"
    if unsafe not in ("warning", "error"):
        where = f"{path}:{data.get(_LINE, '?')}"
        raise ConfigError(f"{where}: unsafe_ops is warning or error (got {unsafe!r})")
    return Policy(
        tuple(bans),
        bool(data.get("require_models_to_ban", False)),
        Severity(unsafe),
        same_answer_strict=_same_answer_entry(data, f"{path}:{data.get(_LINE, '?')}"),
    )


def fleet_file(path: str | Path) -> Path:
    """The file a fleet setting or `--fleet` names: `builtin` is the packaged one."""
    return BUILTIN_FILE if str(path) == BUILTIN else Path(path)


def missing_fleet(path: str | Path) -> ConfigError:
    """A fleet file that is not there, with the ways to name one."""
    return ConfigError(
        f"{path}: fleet file not found (in {Path.cwd()}); name yours with --fleet FILE or "
        f"TFCOMPAT_FLEET=FILE, or use the built-in fleet ({BUILTIN_TEXT}) with --fleet {BUILTIN}"
    )


def load_fleet(path: str | Path, catalog: Catalog) -> Fleet:
    """The fleet in a YAML file, or the built-in one for `builtin`; ConfigError and
    UnknownRelease name the line at fault, or say how to name a fleet when there is none."""
    p = fleet_file(path)
    if not p.is_file():
        raise missing_fleet(path)
    data = load_yaml(p)
    entries = data.get("consumers")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{p}:{data.get(_LINE, 1)}: no consumers listed")
    cache = OpDefCache()
    consumers: list[Consumer] = []
    seen: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ConfigError(f"{p}: each consumer is a mapping (got {entry!r})")
        consumer = parse_consumer(p, entry, catalog, cache)
        if consumer.name in seen:
            raise ConfigError(
                f"{_where(p, entry)}: duplicate consumer name {consumer.name} "
                f"(first at {seen[consumer.name]})"
            )
        seen[consumer.name] = _where(p, entry)
        consumers.append(consumer)
    policy_data = data.get("policy") or {}
    if not isinstance(policy_data, dict):
        raise ConfigError(f"{p}: policy must be a mapping")
    source = BUILTIN if p == BUILTIN_FILE else str(p)
    return Fleet(tuple(consumers), _parse_policy(p, policy_data, catalog), source)
