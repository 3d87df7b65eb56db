#!/usr/bin/env python3
"""Check `tfcompat fleet dump-manifest` against a real TensorFlow install (not in CI).

    .venv/bin/python tools/check_dump_manifest.py $TFENVS/2.12.1/bin/python

Records the environment's manifest, then checks a 2.21-written model that uses an
op 2.12 lacks against it: the manifest must carry 2.12's GraphDef version (1395)
and the model must not load. CI has no TensorFlow, so this runs by hand whenever
the dumper (worker/fleet/dump_manifest.py) changes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests" / "fixtures" / "tf-base" / "artifacts" / "tf2.21" / "new_op"


def tfcompat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", *args], capture_output=True, text=True, cwd=ROOT
    )


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "manifest.json"
        dumped = tfcompat("fleet", "dump-manifest", "--python", sys.argv[1], "-o", str(manifest))
        if dumped.returncode:
            print(dumped.stderr, file=sys.stderr)
            return 1
        checked = tfcompat("check", str(MODEL), "--consumer", f"mine={manifest}", "--json")
    (report,) = json.loads(checked.stdout)["artifacts"]
    (consumer,) = report["consumers"]
    print(json.dumps({k: consumer[k] for k in ("graph_def_version", "loads")}))
    return 0 if consumer["loads"] is False else 1


if __name__ == "__main__":
    sys.exit(main())
