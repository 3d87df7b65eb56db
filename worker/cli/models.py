"""Commands about models and releases: inspect, check, catalog, settings."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from worker.cli.errors import UsageError
from worker.errors import TfcompatError


def read_any(target: str) -> list[Any]:
    """Artifacts at a local path or s3:// URL."""
    if target.startswith("s3://"):
        from worker.settings import load_settings
        from worker.sinks.s3 import read_s3_artifacts

        return read_s3_artifacts(target, load_settings())
    from worker.formats.read import read_path

    return read_path(target)


# --- consumers --------------------------------------------------------------------------------


def parse_consumer_spec(spec: str, catalog: Any, cache: Any) -> Any:
    """'tf==2.12[,keras==3.6][,python==3.11][,custom_objects=A+B][@loader]', 'tflite==2.14',
    'litert==1.4' or
    'NAME=MANIFEST.json[@loader]'."""
    return _parse_consumer_spec(spec, catalog, cache)[0]


PINS = ("keras", "python")


def _pins(spec: str, body: str) -> tuple[str, dict[str, Any]]:
    """The spec without its `,keras==X,python==Y` pins, and the pins (Keras files)."""
    import re

    head, *rest = body.split(",")
    pins: dict[str, Any] = {}
    for part in rest:
        if part.startswith("custom_objects="):  # names joined by "+": MyLayer+my_loss
            names = [n for n in part.partition("=")[2].split("+") if n]
            if not names:
                raise UsageError(f"--consumer {spec}: custom_objects= needs NAME[+NAME...]")
            pins["custom_objects"] = tuple(sorted(set(names)))
            continue
        key, sep, value = part.partition("==")
        if not sep or key not in PINS or not re.fullmatch(r"\d+(\.\d+){0,2}", value):
            raise UsageError(
                f"--consumer {spec}: after the release, only keras==X.Y, python==X.Y and "
                f"custom_objects=NAME[+NAME...] may follow (got {part!r})"
            )
        pins[key] = value
    return head, pins


def _parse_consumer_spec(spec: str, catalog: Any, cache: Any) -> tuple[Any, bool]:
    """The consumer, and whether it is a catalog release (named after it)."""
    consumer, from_catalog, pins = _parse_consumer_body(spec, catalog, cache)
    if pins:
        from dataclasses import replace

        consumer = replace(consumer, **pins)
    return consumer, from_catalog


def _parse_consumer_body(spec: str, catalog: Any, cache: Any) -> tuple[Any, bool, dict[str, Any]]:
    from worker.fleet.manifest import consumer_from_manifest
    from worker.model.consumer import Loader

    for short in ("tflite", "litert"):  # a TFLite runtime of its own: no loader to pick
        if spec.startswith(f"{short}=="):
            from worker.catalog.tflite import load_tflite_catalog

            version = spec[len(short) + 2 :]
            if "@" in version:
                raise UsageError(f"--consumer {spec}: a TFLite runtime has no loader")
            try:
                return load_tflite_catalog().consumer(short, version), False, {}
            except TfcompatError as exc:
                raise UsageError(f"--consumer {spec}: {exc}") from None
    loader = Loader.SAVED_MODEL_V1
    body = spec
    if "@" in spec:
        head, _, tail = spec.rpartition("@")
        if tail in set(Loader):
            body, loader = head, Loader(tail)
        elif "==" in spec:
            raise UsageError(
                f"--consumer {spec}: unknown loader '{tail}' (one of: {', '.join(Loader)})"
            )
    body, pins = _pins(spec, body)
    for prefix in ("tf==", "tensorflow==", "serving=="):
        if body.startswith(prefix):
            consumer = catalog.consumer(body[len(prefix) :], loader)
            if prefix == "serving==":  # a TensorFlow Serving binary of that release
                pins.update(tf_serving=True, name=f"tf-serving-{consumer.tensorflow}")
            return consumer, True, pins
    name, sep, path = body.partition("=")
    if not sep or not name or not path:
        raise UsageError(
            f"--consumer {spec}: expected tf==X.Y[.Z][@LOADER], tflite==X.Y[.Z], "
            "litert==X.Y[.Z] or NAME=MANIFEST.json"
        )
    return consumer_from_manifest(name, path, loader, cache), False, pins


def consumers_from_specs(specs: list[str], catalog: Any, cache: Any) -> list[Any]:
    """The --consumer list; one release given with several loaders becomes one consumer
    per loader, each named `tf-X.Y.Z@LOADER`. The same release and loader twice is a
    usage error (the caller reports duplicate names)."""
    from dataclasses import replace

    parsed = [_parse_consumer_spec(spec, catalog, cache) for spec in specs]
    loaders: dict[str, set[str]] = {}
    for consumer, from_catalog in parsed:
        if from_catalog:
            loaders.setdefault(consumer.name, set()).add(str(consumer.loader))
    consumers = []
    for consumer, from_catalog in parsed:
        if from_catalog and len(loaders[consumer.name]) > 1:
            consumer = replace(consumer, name=f"{consumer.name}@{consumer.loader}")
        consumers.append(consumer)
    return consumers


# --- commands ---------------------------------------------------------------------------------


def cmd_inspect(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.cli.render import render_inspect
    from worker.fix.summary import fixable_releases
    from worker.formats.summary import inspect_json

    documents: list[dict[str, Any]] = []
    failed = False
    for target in args.paths:
        try:
            for artifact in read_any(target):
                document = inspect_json(artifact)
                document["fixable_releases"] = fixable_releases(artifact, load_catalog())
                documents.append(document)
        except TfcompatError as exc:
            failed = True
            documents.append({"path": target, "error": str(exc)})
            if not args.json:
                print(f"tfcompat: error: {exc}", file=sys.stderr)
    if args.json:
        json.dump({"artifacts": documents}, sys.stdout, indent=1, sort_keys=True)
        print()
    else:
        print(render_inspect([d for d in documents if "error" not in d]), end="")
    return 2 if failed else 0


def check_reports(
    paths: list[str], specs: list[str], fleet_path: str | None
) -> tuple[list[dict[str, Any]], list[Any]]:
    """The `check --json` report of every path, and the consumers it was judged for
    (the `--consumer` specs, then the fleet's); what `check` and the CI Action render."""
    from worker.catalog.catalog import load_catalog
    from worker.catalog.opdefs import OpDefCache
    from worker.compat.policy import Policy
    from worker.compat.report import artifact_report, invalid_report

    catalog = load_catalog()
    cache = OpDefCache()
    consumers = consumers_from_specs(specs, catalog, cache)
    policy = Policy()
    if fleet_path:
        from worker.fleet.fleet import load_fleet  # YAML: imported only when a fleet is given

        fleet = load_fleet(fleet_path, catalog)
        consumers += list(fleet.consumers)
        policy = fleet.policy
    names = [c.name for c in consumers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"consumer named twice: {', '.join(duplicates)}")
    releases = catalog.range_consumers()
    reports: list[dict[str, Any]] = []
    for target in paths:
        try:
            artifacts = read_any(target)
        except TfcompatError as exc:
            reports.append(invalid_report(target, str(exc)))
            continue
        for artifact in artifacts:
            report = artifact_report(artifact, consumers, releases, catalog, policy)
            add_fixable(report, artifact, consumers, catalog)
            reports.append(report)
    return reports, consumers


def cmd_check(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.cli.render import render_check
    from worker.compat.report import exit_status

    catalog = load_catalog()
    releases = catalog.range_consumers()
    reports, consumers = check_reports(args.paths, args.consumer, args.fleet)
    form = args.format or ("json" if args.json else "text")
    if form == "json":
        text = json.dumps({"artifacts": reports}, indent=1) + "\n"
    elif form == "sarif":
        from worker.cli.ci_formats import sarif_document

        text = json.dumps(sarif_document(reports, _version()), indent=1) + "\n"
    elif form == "junit":
        from worker.cli.ci_formats import junit_document

        text = junit_document(reports) + "\n"
    else:
        first, last = releases[0].tensorflow, releases[-1].tensorflow
        checked = f"{len(releases)} catalog releases with an op registry ({first} to {last})"
        text = render_check(reports, checked if not consumers else None)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return exit_status(reports)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tfcompat-worker")
    except PackageNotFoundError:
        return "unknown"


def add_fixable(report: dict[str, Any], artifact: Any, consumers: list[Any], catalog: Any) -> None:
    """Each consumer entry's `fixable`: true when `tfcompat fix` would write a copy it
    serves, false when no safe rewrite helps, null when it serves the model already."""
    from worker.fix.summary import fixable_by_consumer

    by_name = fixable_by_consumer(artifact, consumers, catalog)
    for entry in report["consumers"]:
        entry["fixable"] = by_name.get(entry["name"])


def cmd_catalog(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog

    catalog = load_catalog()
    rows = [
        {
            "version": r.version,
            "graph_def_version": r.graph_def_version,
            "graph_def_min_consumer": r.graph_def_min_consumer,
            "graph_def_min_producer": r.graph_def_min_producer,
            "checkpoint_version": r.checkpoint_version,
            "registry": r.registry_version,
        }
        for r in catalog.releases
    ]
    if args.json:
        json.dump({"releases": rows}, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'release':<10} {'graph-def':>9} {'min-cons':>8} {'min-prod':>8}  registry")
    for row in rows:
        print(
            f"{row['version']:<10} {row['graph_def_version']:>9} "
            f"{row['graph_def_min_consumer']:>8} {row['graph_def_min_producer']:>8}  "
            f"{row['registry'] or '-'}"
        )
    return 0


def cmd_settings(args: argparse.Namespace) -> int:
    from worker.settings import load_settings, masked

    for key, value in masked(load_settings()).items():
        print(f"{key}={json.dumps(value) if not isinstance(value, str) else value}")
    return 0
