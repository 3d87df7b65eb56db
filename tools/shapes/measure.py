#!/usr/bin/env python3
"""Measure, in every release, what shape functions infer, and keep what changed.

    python3 tools/shapes/measure.py [--envs $TFENVS] [--output FILE] [--cache DIR]
                                    [--releases 2.4.4,2.21.0]

A graph import fails when a node's `_output_shapes` (what its producer inferred and
recorded) cannot be merged with what the importing release infers
(`GraphConstructor::ValidateShape`). Whether that happens depends on each release's
shape functions, so they are asked, not assumed: tools/shapes/probe.py runs in every
READY venv of tools/build_registries.py, on the cases of tools/shapes/cases.py (the
fused batch norms, every layout, trained or not) and on a sweep of every op it can
build generically (all inputs of one shape, ranks 0, 1, 2 and 4). A probe that
crashes its process is restarted past the op that crashed it (recorded as such).

Each case is asked with input dims bound to two sets of primes (A, B) and left
unknown (U), so each output dim reads as: a constant (equal in A and B), an input
symbol (equal to the symbol's value in both), unknown (null) or "?" (computed
otherwise: a product, a sum; never used to decide anything). That is each release's
*template* for the case. Writes `worker/catalog/data/output_shapes.json` (format
`tfcompat-output-shapes/1`): every case whose templates differ between the releases
that build it, plus every batch-norm case, with each release's template or error.
Standard library only.
"""

from __future__ import annotations

import os
import argparse
import contextlib
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tools/: provenance

from cases import all_cases  # noqa: E402
from provenance import cpu_wheels, source_record  # noqa: E402

PROBE = HERE / "probe.py"
DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "output_shapes.json"
DEFAULT_CACHE = REPO / ".cache" / "shapes"
FORMAT = "tfcompat-output-shapes/1"
PRIMES = {"A": [2, 3, 5, 7, 11], "B": [13, 17, 19, 23, 29]}  # as probe.py binds them
MAX_RESTARTS = 200


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


def ready_envs(envs: Path, only: set[str] | None) -> list[tuple[str, Path]]:
    found = []
    for ready in envs.glob("*/READY"):
        release = ready.parent.name
        if only and release not in only:
            continue
        found.append((release, Path(ready.read_text().strip())))
    return sorted(found, key=lambda r: _key(r[0]))


def _read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for text in path.read_text().splitlines():
        with contextlib.suppress(ValueError):  # a line cut short by a crash
            lines.append(json.loads(text))
    return lines


def probe_release(
    release: str, python: Path, cache: Path, cases_file: Path
) -> list[dict[str, Any]]:
    """Every op line the release answered: the sweep's, then the cases' (which win for
    an op both hold). Cached: the sweep once per release, the cases once per content
    of cases.py."""
    legacy = cache / f"{release}.jsonl"  # written before the two were apart
    sweep = cache / f"{release}.sweep.jsonl"
    if legacy.exists() and not sweep.exists():
        legacy.rename(sweep)
    digest = hashlib.sha256(cases_file.read_bytes()).hexdigest()[:12]
    cases = cache / f"{release}.cases-{digest}.jsonl"
    return _run(python, sweep, ["--sweep"]) + _run(python, cases, ["--cases", str(cases_file)])


def _run(python: Path, out: Path, mode: list[str]) -> list[dict[str, Any]]:
    """probe.py's op lines, restarted past any op that crashes the process."""
    lines = _read_lines(out)
    for _ in range(MAX_RESTARTS):
        if any(line.get("done") for line in lines):
            break
        finished = {line["op"] for line in lines if "op" in line}
        started = [line["start"] for line in lines if "start" in line]
        crashed = [op for op in started if op not in finished]
        with out.open("a") as sink:
            for op in crashed:
                sink.write(json.dumps({"op": op, "crashed": True, "cases": []}) + "\n")
        skip = finished | set(crashed)
        command = [str(python), str(PROBE), *mode, "--skip", ",".join(sorted(skip))]
        with out.open("a") as sink:
            subprocess.run(command, stdout=sink, stderr=subprocess.DEVNULL, check=False)
        lines = _read_lines(out)
    return [line for line in lines if "op" in line]


def _symbols(case: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for spec in case["inputs"]:
        for d in spec.get("dims") or []:
            if isinstance(d, str) and d not in found:
                found.append(d)
    return found


def template(case: dict[str, Any]) -> dict[str, Any]:
    """One release's answer to one case: {"outputs": [dims | null, ...]} or {"error"}.
    A dim is an int (constant), a symbol, null (unknown) or "?" (computed otherwise)."""
    probes = case["probes"]
    a, b = probes["A"], probes["B"]
    if isinstance(a, dict) or isinstance(b, dict):
        error = (a if isinstance(a, dict) else b)["error"]
        return {"error": error[:200]}
    symbols = _symbols(case)
    value = {v: dict(zip(symbols, PRIMES[v], strict=False)) for v in ("A", "B")}
    outputs: list[Any] = []
    for shape_a, shape_b in zip(a, b, strict=True):
        if shape_a is None and shape_b is None:
            outputs.append(None)
            continue
        if shape_a is None or shape_b is None or len(shape_a) != len(shape_b):
            outputs.append("?")  # the rank itself follows the input dims
            continue
        dims: list[Any] = []
        for x, y in zip(shape_a, shape_b, strict=True):
            if x is None and y is None:
                dims.append(None)
            elif x == y:
                dims.append(x)
            else:
                named = [s for s in symbols if value["A"][s] == x and value["B"][s] == y]
                dims.append(named[0] if named else "?")
        outputs.append(dims)
    return {"outputs": outputs}


def build_table(answers: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The cases whose templates differ between releases, and the batch norms'."""
    explicit = {c["id"] for c in all_cases()}
    by_case: dict[str, dict[str, Any]] = {}
    per_release: dict[str, dict[str, dict[str, Any]]] = {}
    crashed: dict[str, list[str]] = {}
    for release, lines in answers.items():
        for line in lines:
            if line.get("crashed"):
                crashed.setdefault(line["op"], []).append(release)
            for case in line.get("cases", []):
                fields = {k: case[k] for k in ("id", "op", "attrs", "inputs")}
                by_case.setdefault(case["id"], fields)
                per_release.setdefault(case["id"], {})[release] = template(case)
    kept = []
    differ_templates = differ_errors_only = 0
    for case_id in sorted(by_case):
        found = per_release[case_id]
        shapes = {json.dumps(t["outputs"]) for t in found.values() if "outputs" in t}
        errored = {r for r, t in found.items() if "error" in t}
        if len(shapes) > 1:
            differ_templates += 1
        elif shapes and errored:
            differ_errors_only += 1
        if len(shapes) > 1 or case_id in explicit:
            groups: dict[str, list[str]] = {}
            for release in sorted(found, key=_key):
                groups.setdefault(json.dumps(found[release], sort_keys=True), []).append(release)
            entry = dict(by_case[case_id])
            entry["inputs"] = [spec.get("dims") for spec in entry["inputs"]]
            entry["answers"] = [{"releases": rs, **json.loads(t)} for t, rs in groups.items()]
            kept.append(entry)
    releases = sorted(answers, key=_key)
    return {
        "format": FORMAT,
        "measured_by": "tools/shapes/measure.py (tools/shapes/probe.py in each release)",
        "how": "Graph.create_op on placeholders, in each release's own Python; dims bound "
        "to two sets of primes and left unknown",
        "releases": releases,
        "source": source_record(
            "tools/shapes/measure.py",
            "tools/shapes/probe.py in each release's own Python: Graph.create_op on "
            "placeholders, in each release's own Python; dims bound to two sets of primes "
            "and left unknown",
            cpu_wheels(releases),
        ),
        "cases_probed": len(by_case),
        "ops_probed": len({c["op"] for c in by_case.values()}),
        "cases_with_changed_shapes": differ_templates,
        "cases_changed_only_by_errors": differ_errors_only,
        "crashed": {op: sorted(rs, key=_key) for op, rs in sorted(crashed.items())},
        "cases": kept,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs")))
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--releases", default="")
    args = parser.parse_args(argv)
    only = set(filter(None, args.releases.split(","))) or None
    args.cache.mkdir(parents=True, exist_ok=True)
    cases_file = args.cache / "cases.json"
    cases_file.write_text(json.dumps({"cases": all_cases()}))
    answers = {}
    for release, python in ready_envs(args.envs, only):
        started = time.monotonic()
        answers[release] = probe_release(release, python, args.cache, cases_file)
        print(f"{release}: {len(answers[release])} ops ({time.monotonic() - started:.0f}s)")
    table = build_table(answers)
    args.output.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(
        f"{table['cases_probed']} cases of {table['ops_probed']} ops in {len(answers)} releases; "
        f"{table['cases_with_changed_shapes']} infer other shapes in some release; "
        f"{len(table['cases'])} kept -> {args.output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
