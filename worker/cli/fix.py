"""`tfcompat fix`: write a copy of a model that the named consumers can serve.

Exit statuses: 0 the copy is written (or, with --dry-run, could be); 1 some
consumer cannot serve the model whatever safe rewrite is applied (nothing is
written); 2 invalid model, unsafe path or usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from worker.cli.errors import UsageError
from worker.errors import TfcompatError


class CopyCheckFailed(TfcompatError):
    """The written copy does not read back as planned (a defect: the copy is removed)."""


def _consumers(specs: list[str]) -> list[Any]:
    from worker.catalog.catalog import load_catalog
    from worker.catalog.opdefs import OpDefCache
    from worker.cli.models import parse_consumer_spec

    if not specs:
        raise UsageError("name at least one consumer: --for tf==X.Y or --for NAME=MANIFEST.json")
    catalog, cache = load_catalog(), OpDefCache()
    consumers = [parse_consumer_spec(spec, catalog, cache) for spec in specs]
    names = [c.name for c in consumers]
    unique = []
    for consumer in consumers:
        if names.count(consumer.name) > 1:  # one release with several loaders
            consumer = replace(consumer, name=f"{consumer.name}@{consumer.loader}")
        unique.append(consumer)
    names = [c.name for c in unique]
    if len(set(names)) != len(names):
        raise UsageError(f"consumer named twice: {', '.join(sorted(set(names)))}")
    return unique


def _describe_value(value: Any) -> str:
    from worker.model.attrs import describe_attr

    return "any value" if value is None else f"= {describe_attr(value)}"


def render_plans(copy: Any) -> str:
    from worker.fix.plan import OUTPUT_SHAPES

    out: list[str] = []
    for plan in copy.plans:
        out.append(f"{plan.artifact.path}  [{plan.artifact.format}]")
        for rewrite in plan.rewrites:
            drop = rewrite.drop
            if drop.strips_shapes:
                out.append(
                    f"  strip {drop.attr} from {drop.op} ({drop.rule}: a consumer's import "
                    f"contradicts it): {rewrite.graph_nodes} graph node(s) of the op"
                )
                continue
            out.append(
                f"  drop {drop.op}.{drop.attr} ({_describe_value(drop.value)}, {drop.rule}): "
                f"{rewrite.graph_nodes} graph node(s), {rewrite.function_nodes} in functions"
            )
        if plan.shapes_stripped is not None:
            out.append(
                f"  {plan.shapes_stripped} graph node(s) lose {OUTPUT_SHAPES}: the op's and "
                "every node downstream of them (informational: an import that reads it "
                "clears it, no kernel reads it)"
            )
        for fix in plan.consumers:
            label = (
                f"{fix.consumer.name} (TensorFlow {fix.consumer.tensorflow or 'custom'}, "
                f"{fix.loader})"
            )
            state = {
                "serves": "serves it as it is",
                "fixed": "FIXED: serves the copy",
                "unfixable": "CANNOT be fixed by a safe rewrite",
                "unknown": "unknown (no op registry: only version numbers checked)",
            }[fix.state]
            out.append(f"  {label}: {state}")
            for line in fix.instead:
                out.append(f"      {line}")
        out.append("")
    return "\n".join(out)


def verify_copy(out: str, copy: Any, consumers: list[Any]) -> None:
    """Read the written copy back and check it the way uploads are checked."""
    from worker.catalog.catalog import load_catalog
    from worker.compat.check import check_artifact
    from worker.fix.copy import reads_as_planned
    from worker.fix.plan import serves
    from worker.formats.read import read_path

    catalog = load_catalog()
    written = read_path(out)
    planned = [p.copy for p in copy.plans]
    if len(written) != len(planned):
        raise CopyCheckFailed(
            f"{out}: {len(written)} artifact(s) read back, planned {len(planned)}"
        )
    for artifact, expected in zip(written, planned, strict=True):
        if not reads_as_planned(artifact, expected):
            raise CopyCheckFailed(f"{artifact.path}: the copy does not read back as planned")
        for consumer in consumers:
            if serves(check_artifact(artifact, consumer, catalog)) is False:
                raise CopyCheckFailed(f"{artifact.path}: {consumer.name} does not serve the copy")


def cmd_fix(args: argparse.Namespace) -> int:
    from worker.catalog.catalog import load_catalog
    from worker.fix.local import build_copy, check_output, remove_output, write_copy

    if str(args.model).lower().endswith((".keras", ".h5", ".hdf5")):
        raise UsageError(
            f"{args.model}: tfcompat fix rewrites TensorFlow graphs; a Keras file is fixed as "
            "`tfcompat check` says (re-save, model.export(), replace a Lambda)"
        )
    consumers = _consumers(args.consumers)
    if not args.dry_run:
        if not args.output:
            raise UsageError("give -o OUT (or --dry-run)")
        check_output(args.model, args.output, args.force)
    copy, is_dir = build_copy(args.model, consumers, load_catalog())
    document: dict[str, Any] = {
        "model": args.model,
        "output": None,
        "artifacts": [p.to_json() for p in copy.plans],
        "rewritten_files": copy.rewritten,
    }
    if not args.json:
        print(render_plans(copy), end="")
    if not copy.writable:
        if not args.json:
            print("no copy written: no safe rewrite makes every consumer serve the model")
        else:
            json.dump(document, sys.stdout, indent=1)
            print()
        return 1
    if args.dry_run:
        if not args.json:
            changed = ", ".join(copy.rewritten) or "none (the copy would be identical)"
            print(f"dry run: nothing written; files the copy would rewrite: {changed}")
    else:
        write_copy(copy, args.output, is_dir, args.force)
        try:
            verify_copy(args.output, copy, consumers)
        except TfcompatError:
            remove_output(args.output)
            raise
        document["output"] = args.output
        if not args.json and not is_dir and copy.archive is None:  # one file: the output
            done = "rewritten" if copy.rewritten else "unchanged: every consumer serves it"
            print(f"wrote {args.output}: the copy of {args.model}, {done}")
        elif not args.json:
            changed = ", ".join(copy.rewritten) or "none: every consumer serves it as it is"
            print(f"wrote {args.output} (rewritten: {changed}; every other file copied as is)")
    if args.json:
        json.dump(document, sys.stdout, indent=1)
        print()
    return 0
