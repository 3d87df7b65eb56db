#!/usr/bin/env python3
"""Run models made by tools/attrs/models.py in every release and record what each did.

    python3 tools/attrs/outcomes.py DIR [--envs $TFENVS] [--releases 2.5,2.8]

For each `DIR/<case>/` (a `frozen_graph.pb` and its `case.json`), runs
`models.py run` with the python of every READY venv (tools/build_registries.py)
and writes `DIR/<case>/outcomes.json`: per release, whether the graph imported,
the outputs for each feed (or the error), and `same` — whether that release's
answer equals the producer release's own (outputs equal on every feed). That is
the truth the checks are measured against: a release that imports the graph and
answers differently computes something else. Standard library only.
"""

from __future__ import annotations

import os
import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

MODELS = Path(__file__).with_name("models.py")


def key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".")[:3])


def run(python: str, cases: list[Path]) -> list[dict[str, Any]]:
    """Every case in one process of that release (a failure to start: every case fails)."""
    done = subprocess.run(
        [python, str(MODELS), "run", *map(str, cases)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or len(lines) != len(cases):
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1][:300]
        return [{"loads": False, "error": f"process exit {done.returncode}: {tail}"}] * len(cases)
    return [json.loads(line) for line in lines]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--envs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs")))
    parser.add_argument("--releases", default="", help="minors or versions (default: all)")
    args = parser.parse_args()
    wanted = [r for r in args.releases.split(",") if r]
    envs = {}
    for ready in sorted(args.envs.glob("*/READY"), key=lambda p: key(p.parent.name)):
        version = ready.parent.name
        if wanted and not any(version == w or version.startswith(w + ".") for w in wanted):
            continue
        envs[version] = ready.read_text().strip().splitlines()[0].strip()
    cases = sorted(p.parent for p in args.root.glob("*/case.json"))
    by_release = {version: run(python, cases) for version, python in envs.items()}
    for n, case in enumerate(cases):
        doc = json.loads((case / "case.json").read_text())
        results = {version: dict(found[n]) for version, found in by_release.items()}
        producer = results.get(doc["producer"])
        if producer is None:
            sys.stderr.write(f"{case.name}: producer {doc['producer']} has no READY venv\n")
            continue
        rows = {}
        for version, result in results.items():
            result.pop("tensorflow", None)
            result.pop("case", None)
            result["same"] = bool(result.get("loads")) and result.get("outputs") == producer.get(
                "outputs"
            )
            rows[version] = result
        out = {
            "case": doc["case"],
            "producer": doc["producer"],
            "made_by": "tools/attrs/outcomes.py: tools/attrs/models.py run in each release",
            "releases": rows,
        }
        text = json.dumps(out, indent=1, sort_keys=True) + "\n"
        # a release's error names the file that built the node ("defined at
        # /abs/checkout/tools/attrs/models.py"): the checkout's own folder name only
        root = str(Path(__file__).resolve().parents[2])
        text = text.replace(root + "/", "/" + Path(root).name + "/")
        (case / "outcomes.json").write_text(text)
        differ = [v for v, r in rows.items() if not r["same"]]
        sys.stderr.write(f"{case.name}: {len(rows)} releases, differ or fail: {differ}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
