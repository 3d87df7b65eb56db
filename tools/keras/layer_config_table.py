"""Pack the measured layer-config loads into the catalog table (build_layer_configs.py pack).

Per Keras 3 minor (the newest patch measured) and layer class, a feature is:
- "loads" when some file whose layer has it loaded in that Keras, or (a bare key) when a
  file's layer failed on `Layer.__init__`'s "Unrecognized keyword arguments passed to
  <its class>: {...}" and the complete dict there does not name it: the base class names
  every argument the constructors left over, so every other key was taken;
- charged with a failure by what the error names (`charged`, from Keras 3's own
  messages): the keys of that dict, the argument of "<Class>.__init__() got an
  unexpected keyword argument 'k'" (the layer's key k, or `key=Class.k` of an object
  entry), the object entry "Could not interpret <kind> identifier: {...}" shows
  (`key=Class` and its arguments), "Invalid value for argument k", "Values in `k`",
  and "Could not locate class 'X'" for a wrapper's nested layer (`<nested
  key>.module=none`: its entry names no module). Any other class named that is neither
  the layer's nor one of its object entries' (a wrapper's nested LSTM refusing
  `time_major`) charges nothing here: the nested layer is judged as a layer of its own.
  Only an error that names nothing (an unknown layer class, a dtype policy Keras 3
  mishandles, a weight shape) is charged as before, to every feature of the failing
  layer no other file loaded;
- a failing combination when a file failed although each of its features loaded in
  another file (kept as the features that file adds to the class's default configs, or
  all of its features when it adds none: another writer's default that fails).
What no file measured is absent: the worker reads an absent feature as "unknown". So a
Keras 2.0 config, which lacks keys a TF 2.15 config of the same class carries, is not
charged with what those keys did.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tools.provenance import cpu_wheels, source_record  # noqa: E402
from worker.formats.keras_features import config_features  # noqa: E402

TOOL = "tools/keras/build_layer_configs.py"
# how the table's failures are charged (the document's "attribution")
ATTRIBUTION = "tools/keras/layer_config_table.py charged: by what each error names"


UNRECOGNIZED = re.compile(r"Unrecognized keyword arguments passed to (\w+): (\{.*)", re.S)
UNEXPECTED = re.compile(r"(\w+)\.__init__\(\) got an unexpected keyword argument '(\w+)'")
NO_ARGUMENTS = re.compile(r"(\w+)\(\) takes no arguments")
UNINTERPRETED = re.compile(r"Could not interpret [\w ]+ identifier: (\{.*)", re.S)
INVALID_VALUE = re.compile(r"Invalid value for argument (\w+)")
VALUES_IN = re.compile(r"Values in `(\w+)` argument")
NOT_LOCATED = re.compile(r"Could not locate class '(\w+)'")
NESTED = ("layer", "cell", "forward_layer", "backward_layer")


def top_keys(text: str) -> tuple[list[str], bool]:
    """The keys of a dict's repr at its first level (`text` starts at its "{"), and
    whether the repr was complete (errors are kept cut at 400 characters)."""
    keys: list[str] = []
    depth, quote, start, index = 0, "", -1, 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
                if depth == 1 and text[index + 1 : index + 2] == ":":
                    keys.append(text[start + 1 : index])
        elif char in "'\"":
            quote, start = char, index
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
            if depth == 0:
                return keys, True
        index += 1
    return keys, False


def _entry_class(text: str) -> str | None:
    found = re.search(r"'class_name': '(\w+)'", text)
    return found.group(1) if found else None


def _of_key(features: Iterable[str], keys: Iterable[str]) -> set[str]:
    """The features of the given config keys: the key and `key=...`."""
    wanted = set(keys)
    return {f for f in features if re.split(r"[=.]", f, maxsplit=1)[0] in wanted}


def charged(
    class_name: str, features: Iterable[str], cause: str
) -> tuple[set[str], set[str]] | None:
    """What a failure of `class_name`'s layer with `features` is charged to, from what
    Keras 3's error (`cause`, underneath its wrappers) names: (charged features, bare
    keys the error shows the constructor took), or None when it names nothing."""
    features = set(features)
    keys = {f for f in features if "=" not in f and "." not in f}
    found = UNRECOGNIZED.search(cause)
    if found:
        named, complete = top_keys(found.group(2))
        if found.group(1) != class_name:
            return set(), set()  # a nested layer's: judged as that layer
        taken = keys - set(named) if complete else set()
        return _of_key(features, named), taken
    found = UNEXPECTED.search(cause)
    if found:
        owner, argument = found.groups()
        if owner == class_name:
            return _of_key(features, [argument]), set()
        return {f for f in features if f.endswith(f"={owner}.{argument}")}, set()
    found = NO_ARGUMENTS.search(cause)
    if found:
        owner = found.group(1)
        return {f for f in features if f"={owner}." in f}, set()
    found = UNINTERPRETED.search(cause)
    if found:
        entry = _entry_class(found.group(1))
        own = {f for f in features if entry and (f.endswith(f"={entry}") or f"={entry}." in f)}
        return own, set()  # another layer's entry (a wrapper's nested layer's): nothing here
    found = NOT_LOCATED.search(cause)
    if found and found.group(1) != class_name:
        # a wrapper's nested entry without a module (serialization_lib finds only
        # registered classes then): charged to that, the nested key's "module=none"
        return {f"{k}.module=none" for k in NESTED if k in keys}, set()
    for pattern in (INVALID_VALUE, VALUES_IN):
        found = pattern.search(cause)
        if found:
            return _of_key(features, [found.group(1)]), set()
    return None


def reattribute(document: dict[str, Any]) -> dict[str, Any]:
    """A packed table's failures charged by `charged` (for a table packed before it):
    each failure's features (those it was charged with) are the failing file's own less
    those another file loaded, so what the error names is among them; the rest are no
    longer charged (absent: unknown), and keys the error shows taken join "loads"."""
    for version in document["versions"].values():
        for name, entry in version["classes"].items():
            groups: dict[str, list[str]] = {}
            for feature, raw in entry["fails"].items():
                groups.setdefault(json.dumps(raw, sort_keys=True), []).append(feature)
            fails: dict[str, Any] = {}
            loads = set(entry["loads"])
            for said, members in groups.items():
                raw = json.loads(said)
                found = charged(name, members, raw.get("cause", raw["error"]))
                if found is None:
                    fails.update({f: raw for f in members})
                    continue
                picked, taken = found
                fails.update({f: raw for f in picked})
                loads |= taken
            combos = []
            for raw in entry.get("combinations", ()):
                found = charged(name, raw["features"], raw.get("cause", raw["error"]))
                if found is None or not found[0]:
                    combos.append(raw)
                    continue
                said = {k: v for k, v in raw.items() if k != "features"}
                fails.update({f: said for f in found[0]})
            if combos:
                entry["combinations"] = combos
            else:
                entry.pop("combinations", None)
            entry["fails"] = {f: fails[f] for f in sorted(fails) if f not in loads}
            entry["loads"] = sorted(loads)
    return document


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def _writer(made: dict[str, Any]) -> str:
    """A writer folder's name in the rows: its TensorFlow release, or "keras-2.3.1" for
    the standalone keras package."""
    return str(made.get("writer", made["tensorflow"]))


def _folders(build: Path, only: Iterable[str] = ()) -> list[Path]:
    wanted = set(only)
    found = sorted([*build.glob("tf*"), *build.glob("keras-*")])
    return [f for f in found if not wanted or f.name in wanted]


def _cases(build: Path, only: Iterable[str] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    """(writer, file) -> the case, with its features."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for folder in _folders(build, only):
        if not (folder / "cases.json").exists():
            continue  # a writer still being made
        made = json.loads((folder / "cases.json").read_text())
        for case in made["cases"]:
            if "file" not in case:
                continue
            entry = dict(case, keras2=made["keras"], python=made["python"])
            entry["tensorflow"] = made["tensorflow"]
            entry["standalone"] = bool(made.get("standalone"))
            entry["features"] = config_features(case["config"].get("config") or {})
            found[(_writer(made), case["file"])] = entry
    return found


def _table(
    rows: list[dict[str, Any]],
    cases: dict[tuple[str, str], dict[str, Any]],
    prior: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Per class, what the rows measured; `prior` (a packed table's classes) adds the
    features other writers' files loaded, so the rows' unnamed failures are charged
    against every load measured."""
    by_class: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for row in rows:
        case = cases.get((row["writer"], row["file"]))
        if case is not None and row.get("ok") is not None:
            by_class.setdefault(case["class"], []).append((case, row))
    classes: dict[str, Any] = {}
    for name, pairs in sorted(by_class.items()):
        loads: set[str] = set((prior or {}).get(name, {}).get("loads", ()))
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
            named = charged(name, case["features"], said["cause"])
            if named is not None:
                for feature in sorted(named[0]):
                    fails.setdefault(feature, said)
                loads.update(named[1])
                continue
            culprits = sorted(set(case["features"]) - loads)
            if not culprits:
                combo = sorted(set(case["features"]) - defaults) or sorted(case["features"])
                if all(c["features"] != combo for c in combos):
                    combos.append(dict(said, features=combo))
                continue
            for feature in culprits:
                fails.setdefault(feature, said)
        fails = {f: fails[f] for f in sorted(fails) if f not in loads}
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


def _writers_read(cases: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """The source record's line per writer."""
    read = []
    writers = {
        (w, c["tensorflow"], c["keras2"], c["python"], c["standalone"])
        for (w, _), c in cases.items()
    }
    for _, tf, keras2, python, standalone in sorted(writers, key=lambda w: _version_key(w[0])):
        (wheel,) = cpu_wheels([tf])
        if standalone:
            read.append(f"keras=={keras2} on {wheel} (Python {python}): the writer")
        else:
            read.append(f"{wheel} (Keras {keras2}, Python {python}): the writer")
    return read


def add_writers(build: str | Path, out: str | Path, writers: list[str]) -> None:
    """Add the rows of writer folders (`writers`: "keras-2.3.1") to the packed table:
    per minor whose Keras loaded them, each class's features their files loaded join
    "loads", their failures are charged as `pack` charges them (against every load
    measured) where no failure was, and a feature now loading is charged no more. A
    minor with no rows of a writer keeps what it had (that writer's features unmeasured
    there unless another writer measured them)."""
    build, out = Path(build), Path(out)
    document = json.loads(gzip.decompress(out.read_bytes()))
    cases = _cases(build, writers)
    for version in document["versions"].values():
        done = version.get("writers_added", [])
        todo = [w for w in writers if w not in done]  # a writer is added once per minor
        paths = [build / "rows" / f"keras-{version['keras']}@{w}.jsonl" for w in todo]
        rows = [r for p in paths if p.exists() for r in _rows(p)]
        if not rows:
            print(f"keras {version['keras']}: no new rows of {', '.join(writers)}")
            continue
        old = version["classes"]
        for name, new in _table(rows, cases, old).items():
            entry = old.setdefault(name, {"loads": [], "fails": {}})
            loads = set(entry["loads"]) | set(new["loads"])
            fails = dict(new["fails"], **entry["fails"])
            entry["fails"] = {f: fails[f] for f in sorted(fails) if f not in loads}
            entry["loads"] = sorted(loads)
            combos = entry.get("combinations", [])
            combos += [c for c in new.get("combinations", []) if c not in combos]
            if combos:
                entry["combinations"] = combos
        version["files"] += len(rows)
        version["writers_added"] = sorted(
            {*done, *(w for w, p in zip(todo, paths, strict=True) if p.exists() and _rows(p))}
        )
    read = document["source"]["read"]
    read[:0] = [line for line in _writers_read(cases) if line not in read]
    raw = json.dumps(document, sort_keys=True, indent=None, separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(raw, mtime=0))
    print(f"added {', '.join(writers)} to {out}")


def pack(build: str | Path, out: str | Path) -> None:
    build, out = Path(build), Path(out)
    cases = _cases(build)
    versions: dict[str, Any] = {}
    read: list[str] = []
    read.extend(_writers_read(cases))
    # a version is packed once every writer's files were loaded in it (a row file names
    # the writer folders it covers); one still missing a writer is left out, unmeasured
    made = {w for (w, _) in cases}  # writers: TensorFlow releases and keras-<version>
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
        "attribution": ATTRIBUTION,
        "versions": versions,
    }
    raw = json.dumps(document, sort_keys=True, indent=None, separators=(",", ":")).encode()
    out.write_bytes(gzip.compress(raw, mtime=0))
    print(f"wrote {out}: {len(versions)} Keras 3 minors, {len(cases)} files")
