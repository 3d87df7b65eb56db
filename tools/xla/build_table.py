#!/usr/bin/env python3.11
"""Build worker/catalog/data/xla_call_module.json: what each release's XlaCallModule accepts.

    python3.11 tools/xla/build_table.py --jax $XLAENVS/jaxnew/bin/python \
        [--venvs $TFENVS] [--releases 2.12,2.13,...] [--out FILE]

(FILE: worker/catalog/data/xla_call_module.json by default.)

1. `modules.py` runs under `--jax` (a Python with jaxlib) and writes StableHLO
   portable artifacts stamped with every version from its minimum to its current;
2. `measure.py` runs under each release's venv (`<venvs>/<release>/READY`) and
   builds and runs XlaCallModule nodes in a Session on the CPU (versions, platform
   lists, disabled_checks, stamped StableHLO versions);
3. the table keeps, per release, the summary the rules read and the raw cases with
   the release's own error text. Releases already in the table are kept unless named.
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_OUT = REPO / "worker" / "catalog" / "data" / "xla_call_module.json"
sys.path.insert(0, str(HERE.parent))  # tools/: provenance

from provenance import cpu_wheels, source_record  # noqa: E402

FORMAT = "tfcompat-xla-call-module/1"


def release_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:3])


def summarize(doc: dict) -> dict:
    """What the rules read, from one release's measured cases."""
    cases = doc["cases"]
    versions = sorted(c["version"] for c in cases if c["kind"] == "version" and c["ok"])
    by = {}
    for c in cases:
        if c["kind"] == "platforms":
            by[(c["version"], tuple(c["platforms"]), tuple(c["disabled_checks"]))] = c
    platform_check = {}
    for (version, platforms, disabled), c in sorted(by.items()):
        if platforms == ("CUDA",) and not disabled:
            platform_check[str(version)] = {"checked": not c["ok"], "error": c["error"]}
    empty_fails = sorted({v for (v, p, d), c in by.items() if p == () and not c["ok"]})
    honoured = all(c["ok"] for (v, p, d), c in by.items() if d == ("platform",))
    lowercase_ok = any(c["ok"] for (v, p, d), c in by.items() if p == ("cpu",))
    shlo = [c for c in cases if c["kind"] == "stablehlo"]
    read = [c["stablehlo"] for c in shlo if c["ok"]]
    refused = [c for c in shlo if not c["ok"]]
    newest = max(read, key=release_key) if read else None
    first_refused = min(refused, key=lambda c: release_key(c["stablehlo"])) if refused else None
    rich = [c for c in cases if c["kind"] == "rich"]
    rich_read = [c["stablehlo"] for c in rich if c["ok"]]
    rich_refused = [c for c in rich if not c["ok"]]
    first_rich = (
        min(rich_refused, key=lambda c: release_key(c["stablehlo"])) if rich_refused else None
    )

    def failed(c: dict) -> str:
        text = c["error"] or ""
        if "XlaCallModuleOp with version" in text:
            return "version"
        if "not among the platforms" in text:
            return "platform"
        if "eserialize" in text:
            return "module"
        return "other" if not c["ok"] else "none"

    order = []
    for c in cases:
        if c["kind"] == "order":
            wrong = []
            if c["version"] not in versions:
                wrong.append("version")
            if c["platforms"] and "CPU" not in c["platforms"]:
                wrong.append("platform")
            if c["stablehlo"] != "0.9.0":
                wrong.append("module")
            order.append({"wrong": wrong, "first": failed(c)})
    version_errors = {}
    for c in cases:
        if c["kind"] == "version" and not c["ok"]:
            side = "below" if versions and c["version"] < versions[0] else "above"
            version_errors.setdefault(side, c["error"])
    return {
        "op_attrs": doc["op_attrs"],
        "versions": versions,
        "version_errors": version_errors,
        "platform_names": ["CPU"],
        "platform_check": platform_check,
        "platforms_lowercase_ok": lowercase_ok,
        "disabled_checks_platform_honoured": honoured,
        "empty_platforms_fail_at": empty_fails,
        "stablehlo_newest": newest,
        "stablehlo_refused": first_refused
        and {"stamp": first_refused["stablehlo"], "error": first_refused["error"]},
        "rich_newest": max(rich_read, key=release_key) if rich_read else None,
        "rich_refused": first_rich
        and {"stamp": first_rich["stablehlo"], "error": first_rich["error"]},
        "check_order": order,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jax", required=True, help="a Python with jaxlib (modules.py)")
    parser.add_argument(
        "--venvs", type=Path, default=Path(os.environ.get("TFENVS", ".cache/tfenvs"))
    )
    parser.add_argument("--releases", default="", help="minors, e.g. 2.12,2.21 (default all READY)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    table = json.loads(args.out.read_text()) if args.out.exists() else {}
    releases = dict(table.get("releases", {}))
    venvs = sorted(
        (r.parent for r in args.venvs.glob("*/READY")), key=lambda p: release_key(p.name)
    )
    if args.releases:
        wanted = set(args.releases.split(","))
        venvs = [v for v in venvs if ".".join(v.name.split(".")[:2]) in wanted]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([args.jax, str(HERE / "modules.py"), "--out", tmp], check=True)
        grid = json.loads((Path(tmp) / "versions.json").read_text())
        for venv in venvs:
            python = (venv / "READY").read_text().strip().splitlines()[0].strip()
            done = subprocess.run(
                [python, str(HERE / "measure.py"), "--modules", tmp],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                sys.stderr.write(f"{venv.name}: measure.py exited {done.returncode}\n")
                sys.stderr.write(done.stderr[-2000:])
                continue
            doc = json.loads(done.stdout.strip().splitlines()[-1])
            if not doc["op_attrs"]:
                sys.stderr.write(f"{venv.name}: no XlaCallModule op\n")
                releases.pop(venv.name, None)
                continue
            releases[venv.name] = {**summarize(doc), "cases": doc["cases"]}
            r = releases[venv.name]
            newest = r["stablehlo_newest"]
            sys.stderr.write(f"{venv.name}: versions {r['versions']} stablehlo <= {newest}\n")
    ordered = dict(sorted(releases.items(), key=lambda kv: release_key(kv[0])))
    out = {
        "format": FORMAT,
        "source": source_record(
            "tools/xla/build_table.py",
            "XlaCallModule built and run once in a Session on the CPU of each release's "
            f"CPU wheel; StableHLO artifacts by jaxlib (stablehlo {grid['jaxlib_current']}), "
            f"stamped {grid['targets'][0]}..{grid['targets'][-1]} (patches 0-99)",
            [*cpu_wheels(ordered), f"jaxlib (StableHLO {grid['jaxlib_current']})"],
        ),
        "releases": ordered,
    }
    args.out.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    sys.stderr.write(f"wrote {args.out} ({len(releases)} releases)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
