"""Pack the measured layer-config loads into the catalog table (build_layer_configs.py pack).

Per Keras 3 minor (the newest patch measured) and layer class, a feature is:
- "loads" when some file whose layer has it loaded in that Keras;
- charged with a failure when a file whose layer has it failed and every other feature of
  that layer loaded in some file (so the failure is this feature's; several such features
  of one failing file are all charged);
- a failing combination when a file failed although each of its features loaded in
  another file (kept as the features that file adds to the class's default configs, or
  all of its features when it adds none: another writer's default that fails).
What no file measured is absent: the worker reads an absent feature as "unknown".
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.provenance import cpu_wheels, source_record  # noqa: E402
from worker.formats.keras_features import config_features  # noqa: E402

TOOL = "tools/keras/build_layer_configs.py"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _cases(build: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(writer TensorFlow, file) -> the case, with its features."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for folder in sorted(build.glob("tf*")):
        if not (folder / "cases.json").exists():
            continue  # a writer still being made
        made = json.loads((folder / "cases.json").read_text())
        for case in made["cases"]:
            if "file" not in case:
                continue
            entry = dict(case, keras2=made["keras"], python=made["python"])
            entry["features"] = config_features(case["config"].get("config") or {})
            found[(made["tensorflow"], case["file"])] = entry
    return found


def _table(
    rows: list[dict[str, Any]], cases: dict[tuple[str, str], dict[str, Any]]
) -> dict[str, Any]:
    by_class: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in rows:
        case = cases.get((row["writer"], row["file"]))
        if case is not None and row.get("ok") is not None:
            by_class.setdefault(case["class"], []).append((case, row))
    classes: dict[str, Any] = {}
    for name, pairs in sorted(by_class.items()):
        loads: set[str] = set()
        for case, row in pairs:
            if row["ok"]:
                loads.update(case["features"])
        defaults: set[str] = set()
        for case, _ in pairs:
            if case["variant"] == "default":
                defaults.update(case["features"])
        fails: dict[str, Any] = {}
        combos: list[dict[str, Any]] = []
        # newest writer first: a feature charged by several failing files keeps the error
        # the newest Keras 2's file met, the likeliest writer of a file judged by it
        for case, row in sorted(pairs, key=lambda p: _version_key(p[1]["writer"]), reverse=True):
            if row["ok"]:
                continue
            said = {
                "error": row["error"],
                "cause": row.get("cause", row["error"]),
                "stage": row["stage"],
                "variant": case["variant"],
                "writer": row["writer"],
            }
            culprits = sorted(set(case["features"]) - loads)
            if not culprits:
                combo = sorted(set(case["features"]) - defaults) or sorted(case["features"])
                if all(c["features"] != combo for c in combos):
                    combos.append(dict(said, features=combo))
                continue
            for feature in culprits:
                fails.setdefault(feature, said)
        entry: dict[str, Any] = {"loads": sorted(loads), "fails": fails}
        if combos:
            entry["combinations"] = combos
        classes[name] = entry
    return classes


def _rows(path: Path) -> list[dict[str, Any]]:
    """The complete rows of a rows file (a load still writing it may leave half a line)."""
    found = []
    for line in path.read_text().splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def pack(build: str | Path, out: str | Path) -> None:
    build, out = Path(build), Path(out)
    cases = _cases(build)
    versions: dict[str, Any] = {}
    read: list[str] = []
    writers = sorted({(w, c["keras2"], c["python"]) for (w, _), c in cases.items()})
    for tf, keras2, python in sorted(writers, key=lambda w: _version_key(w[0])):
        (wheel,) = cpu_wheels([tf])
        read.append(f"{wheel} (Keras {keras2}, Python {python}): the writer")
    # a version is packed once every writer's files were loaded in it (a row file names
    # the writer folders it covers); one still missing a writer is left out, unmeasured
    made = {w for (w, _) in cases}
    covered: dict[str, set[str]] = {}
    for path in sorted(build.glob("rows/keras-*@*.jsonl")):
        version = path.stem[len("keras-") :].split("@")[0]
        covered.setdefault(version, set()).update(r["writer"] for r in _rows(path))
    newest: dict[str, str] = {}
    for version, loaded in covered.items():
        minor = ".".join(version.split(".")[:2])
        if not made <= loaded:
            print(f"keras {version}: left out, no rows of {sorted(made - loaded)}")
            continue
        if minor not in newest or _version_key(version) > _version_key(newest[minor]):
            newest[minor] = version
    for minor, version in sorted(newest.items(), key=lambda kv: _version_key(kv[0])):
        rows = [r for p in sorted(build.glob(f"rows/keras-{version}@*.jsonl")) for r in _rows(p)]
        versions[minor] = {
            "keras": version,
            "measured_in": f"keras {version}, Python 3.11, KERAS_BACKEND=jax",
            "files": len(rows),
            "classes": _table(rows, cases),
        }
        read.append(f"keras=={version} (KERAS_BACKEND=jax): the reader")
    document = {
        "source": source_record(
            TOOL,
            "one H5 file per built-in layer class and setting, written by each Keras 2's "
            "model.save, loaded by each Keras 3's load_model(compile=False)",
            read,
        ),
        "features": "worker.formats.keras_features.config_features",
        "versions": versions,
    }
    raw = json.dumps(document, sort_keys=True, indent=None, separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(raw, mtime=0))
    print(f"wrote {out}: {len(versions)} Keras 3 minors, {len(cases)} files")
