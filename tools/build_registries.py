#!/usr/bin/env python3
"""Rebuild the built-in op-registry catalog from real TensorFlow installs.

For every release in RECIPES (or those named with --releases) this script

1. creates a throwaway virtualenv ``<envs>/<version>/`` with the recorded
   Python and ``pip install --no-cache-dir <package> <pins...>``, checks that
   ``import tensorflow`` reports the expected version, and writes the marker
   ``<envs>/<version>/READY`` holding the venv's python path;
2. runs the project's own ``worker/fleet/dump_manifest.py`` with that
   interpreter, writing ``<build>/manifests/tf-<version>.json``;

and then packs *every* manifest found in ``<build>/manifests`` into one
file, ``worker/catalog/data/registries.jsonl`` (format
``tfcompat-registries/2``, see ``pack_registries``): a header line naming, per
release, what changed since the previous one, then each distinct OpDef once,
one per line, so the catalog reads the header at start-up and decodes an
OpDef only when a check asks for it.  ``--from-packed FILE`` repacks the
releases of an already packed file (either format) instead of manifests.

It is idempotent: a release whose venv is READY is not reinstalled and a
release whose manifest exists is not dumped again, unless ``--force``
(reinstall and re-dump) or ``--redump`` (re-dump only, e.g. after a change to
dump_manifest.py).  The packed file is written with sorted keys, so packing the
same registries again gives identical bytes.

Usage (Python 3.11, standard library only)::

    python3 tools/build_registries.py                        # every release
    python3 tools/build_registries.py --releases 2.12,1.15   # minor or full version
    python3 tools/build_registries.py --pack-only            # just repack manifests
    python3 tools/build_registries.py --pack-only --from-packed FILE   # repack a packed file
    python3 tools/build_registries.py --workdir /scratch     # /scratch/tfenvs, ...

Per-release pip output goes to ``<build>/logs/<version>.log``; progress to
stderr.  Needs PyPI and pyenv-style interpreters
(``$PYENV_ROOT/versions/3.X.Y/bin/python``, else ``python3.X`` on PATH).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, TypedDict, cast


class Recipe(TypedDict):
    python: str  # interpreter minor version for the venv (newest installed patch is used)
    package: str  # pip requirement for TensorFlow itself
    pins: list[str]  # extra requirements passed to the same pip command


# --------------------------------------------------------------------------
# Install recipes: exactly what worked (Linux x86_64, glibc 2.36, Python
# 3.7.16 / 3.11.7, December 2026).  Newest patch release of each minor;
# tensorflow-cpu wherever it exists (2.1+; it is the smaller wheel), plain
# tensorflow for 1.x and 2.0 (CPU-only there anyway).
# Why the pins:
#   protobuf<3.20  generated *_pb2 modules of TF <= 2.8 fail with protobuf
#                  >= 3.20 / 4.x ("Descriptors cannot be created directly");
#                  2.9 - 2.11 declare the same cap themselves.
#   numpy<1.17     TF 1.13 / 1.14 predate numpy 1.17 (FutureWarning floods).
#   numpy<1.19     TF 1.15 and 2.0 - 2.2 were built against numpy <= 1.18
#                  (1.15.5 and 2.3 declare it; 2.4 - 2.6 pin ~=1.19.2).
#   h5py<3         Keras HDF5 save/load in TF <= 2.3 breaks on h5py 3 (the
#                  fixture generator reuses these venvs).
# 2.12+ use Python 3.11 (2.20 and 2.21 install and run there too).
# --------------------------------------------------------------------------
_PB = "protobuf<3.20"
_OLD = [_PB, "h5py<3"]


def _r(python: str, package: str, *pins: str) -> Recipe:
    return {"python": python, "package": package, "pins": list(pins)}


RECIPES: dict[str, Recipe] = {
    "1.13.2": _r("3.7", "tensorflow==1.13.2", "numpy<1.17", *_OLD),
    "1.14.0": _r("3.7", "tensorflow==1.14.0", "numpy<1.17", *_OLD),
    "1.15.5": _r("3.7", "tensorflow==1.15.5", "numpy<1.19", *_OLD),
    "2.0.4": _r("3.7", "tensorflow==2.0.4", "numpy<1.19", *_OLD),
    "2.1.4": _r("3.7", "tensorflow-cpu==2.1.4", "numpy<1.19", *_OLD),
    "2.2.3": _r("3.7", "tensorflow-cpu==2.2.3", "numpy<1.19", *_OLD),
    "2.3.4": _r("3.7", "tensorflow-cpu==2.3.4", *_OLD),
    "2.4.4": _r("3.7", "tensorflow-cpu==2.4.4", _PB),
    "2.5.3": _r("3.7", "tensorflow-cpu==2.5.3", _PB),
    "2.6.5": _r("3.7", "tensorflow-cpu==2.6.5", _PB),
    "2.7.4": _r("3.7", "tensorflow-cpu==2.7.4", _PB),
    "2.8.4": _r("3.7", "tensorflow-cpu==2.8.4", _PB),
    "2.9.3": _r("3.7", "tensorflow-cpu==2.9.3"),
    "2.10.1": _r("3.7", "tensorflow-cpu==2.10.1"),
    "2.11.0": _r("3.7", "tensorflow-cpu==2.11.0"),
    "2.12.1": _r("3.11", "tensorflow-cpu==2.12.1"),
    "2.13.1": _r("3.11", "tensorflow-cpu==2.13.1"),
    "2.14.1": _r("3.11", "tensorflow-cpu==2.14.1"),
    "2.15.1": _r("3.11", "tensorflow-cpu==2.15.1"),
    "2.16.2": _r("3.11", "tensorflow-cpu==2.16.2"),
    "2.17.1": _r("3.11", "tensorflow-cpu==2.17.1"),
    "2.18.1": _r("3.11", "tensorflow-cpu==2.18.1"),
    "2.19.1": _r("3.11", "tensorflow-cpu==2.19.1"),
    "2.20.0": _r("3.11", "tensorflow-cpu==2.20.0"),
    "2.21.0": _r("3.11", "tensorflow-cpu==2.21.0"),
}

REGISTRY_FORMAT = "tfcompat-registries/2"
MANIFEST_FORMAT = "tfcompat-manifest/1"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))  # provenance, also when imported by a test

from provenance import source_record  # noqa: E402

DUMPER = REPO / "worker" / "fleet" / "dump_manifest.py"
DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "registries.jsonl"

# OpDef fields that never matter for load compatibility, stripped when packing:
# the documentation strings of the op and of each input/output arg and attr.
# (TensorFlow keeps them for only ~10% of registered ops anyway.)
_STRIP_OP_FIELDS = frozenset({"summary", "description"})
_STRIP_ITEM_FIELDS = frozenset({"description"})

# tf.version appeared in 1.14; 1.13 only has tf.VERSION / tf.GRAPH_DEF_VERSION.
_VERIFY = (
    "import tensorflow as tf; v = getattr(tf, 'version', None); "
    "print(getattr(v, 'VERSION', None) or tf.__version__, "
    "getattr(v, 'GRAPH_DEF_VERSION', None) or tf.GRAPH_DEF_VERSION)"
)

_print_lock = threading.Lock()
_t0 = time.monotonic()


def log(msg: str) -> None:
    with _print_lock:
        sys.stderr.write(f"[{time.monotonic() - _t0:6.0f}s] {msg}\n")
        sys.stderr.flush()


def version_key(version: str) -> tuple[Any, ...]:
    """Sort key for 'X.Y.Z' (a trailing pre-release tag sorts before the final)."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)(.*)$", version)
    if not m:
        return (9999, version)
    major, minor, patch, rest = m.groups()
    return (int(major), int(minor), int(patch), rest == "", rest)


def resolve_releases(spec: str | None) -> list[str]:
    known = sorted(RECIPES, key=version_key)
    if not spec:
        return known
    out: list[str] = []
    for item in re.split(r"[,\s]+", spec.strip()):
        if not item:
            continue
        found = [item] if item in RECIPES else [v for v in known if v.startswith(item + ".")]
        if len(found) != 1:
            raise SystemExit(
                f"build_registries: no recipe for release {item!r} (known: {', '.join(known)})"
            )
        if found[0] not in out:
            out.append(found[0])
    return out


def find_python(minor: str, python_root: Path | None) -> str:
    """Newest installed patch release of Python `minor` (e.g. '3.7')."""
    roots = [] if python_root is None else [python_root]
    roots.append(Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions")
    for root in roots:
        if not root.is_dir():
            continue
        candidates = []
        for d in root.iterdir():
            m = re.fullmatch(re.escape(minor) + r"\.(\d+)", d.name)
            if m and (d / "bin" / "python").exists():
                candidates.append((int(m.group(1)), d / "bin" / "python"))
        if candidates:
            return str(max(candidates)[1])
    found = shutil.which("python" + minor)
    if found:
        return found
    raise RuntimeError(f"no Python {minor} found (pyenv versions dir or python{minor} on PATH)")


def _run(cmd: list[str], logfile: IO[str], env: dict[str, str]) -> int:
    logfile.write(f"\n$ {' '.join(cmd)}\n")
    logfile.flush()
    return subprocess.run(cmd, stdout=logfile, stderr=subprocess.STDOUT, env=env).returncode


def _install(
    version: str, venv: Path, logfile: IO[str], env: dict[str, str], python_root: Path | None
) -> None:
    recipe = RECIPES[version]
    vpython = venv / "bin" / "python"
    if venv.exists():
        log(f"{version}: removing old venv {venv}")
        shutil.rmtree(venv)
    base = find_python(recipe["python"], python_root)
    log(f"{version}: creating venv with {base}")
    if _run([base, "-m", "venv", str(venv)], logfile, env):
        raise RuntimeError("venv creation failed")
    reqs = [recipe["package"], *recipe["pins"]]
    log(f"{version}: pip install {' '.join(reqs)}")
    pip = [str(vpython), "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check"]
    if _run(pip + reqs, logfile, env):
        raise RuntimeError(f"pip install failed (see {logfile.name})")
    out = subprocess.run(
        [str(vpython), "-c", _VERIFY], env=env, stdout=subprocess.PIPE, stderr=logfile, text=True
    )
    logfile.write(out.stdout)
    got = out.stdout.split()
    if out.returncode or len(got) != 2 or got[0] != version:
        raise RuntimeError(f"verification failed: {out.stdout.strip()!r}")
    (venv / "READY").write_text(f"{vpython}\n")
    log(f"{version}: verified (TF {got[0]}, GraphDef {got[1]}), READY")


def build_release(
    version: str, envs: Path, build: Path, force: bool, redump: bool, python_root: Path | None
) -> dict[str, Any]:
    """Install (if needed) and dump (if needed) one release; returns its summary."""
    venv = envs / version
    vpython = venv / "bin" / "python"
    manifest = build / "manifests" / f"tf-{version}.json"
    (build / "logs").mkdir(parents=True, exist_ok=True)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env["PYTHONNOUSERSITE"] = "1"
    env.pop("PYTHONPATH", None)
    started = time.monotonic()
    installed = dumped = False
    with open(build / "logs" / f"{version}.log", "a") as logfile:
        logfile.write(f"\n==== {version} {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        if force or not ((venv / "READY").exists() and vpython.exists()):
            _install(version, venv, logfile, env, python_root)
            installed = True
        else:
            log(f"{version}: venv READY, not reinstalling")
        if force or redump or installed or not manifest.exists():
            tmp = manifest.with_suffix(".json.tmp")
            if _run([str(vpython), str(DUMPER), "-o", str(tmp)], logfile, env):
                raise RuntimeError(f"dump_manifest.py failed (see {logfile.name})")
            os.replace(tmp, manifest)
            dumped = True
    data = json.loads(manifest.read_text())
    if data["tensorflow"]["version"] != version:
        raise RuntimeError(f"manifest is for {data['tensorflow']['version']}")
    gd, ck = data["graph_def_version"], data["checkpoint_version"]
    log(
        f"{version}: manifest {'written' if dumped else 'present'}: {len(data['ops'])} ops, "
        f"GraphDef {gd['producer']}/{gd['min_consumer']}/{gd['min_producer']}, checkpoint "
        f"{ck['producer']}/{ck['min_consumer']}/{ck['min_producer']} from {ck['source']} "
        f"({time.monotonic() - started:.0f}s)"
    )
    return {"version": version, "ops": len(data["ops"]), "installed": installed}


# --------------------------------------------------------------------------
# Packing
# --------------------------------------------------------------------------


def strip_op(op: dict[str, Any]) -> dict[str, Any]:
    """OpDef JSON without its documentation strings (everything else kept)."""
    out = {k: v for k, v in op.items() if k not in _STRIP_OP_FIELDS}
    for key in ("input_arg", "output_arg", "attr"):
        if key in out:
            out[key] = [
                {k: v for k, v in item.items() if k not in _STRIP_ITEM_FIELDS} for item in out[key]
            ]
    return out


def load_manifests(manifest_dir: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(manifest_dir.glob("tf-*.json")):
        data = json.loads(path.read_text())
        if data.get("format") != MANIFEST_FORMAT:
            raise RuntimeError(f"{path}: not a {MANIFEST_FORMAT} file")
        found.append(data)
    found.sort(key=lambda m: version_key(m["tensorflow"]["version"]))
    return found


class ReleaseRecord(TypedDict):
    """One release as the packed file keeps it: its numbers and its stripped OpDefs."""

    version: str
    git_version: str | None
    graph_def_version: dict[str, Any]
    checkpoint_version: dict[str, Any]
    python: str | None
    package: str | None
    ops: dict[str, dict[str, Any]]  # op name -> OpDef JSON without documentation


def records_from_manifests(manifests: list[dict[str, Any]]) -> list[ReleaseRecord]:
    records: list[ReleaseRecord] = []
    for m in manifests:
        version = m["tensorflow"]["version"]
        recipe = RECIPES.get(version)
        records.append(
            {
                "version": version,
                "git_version": m["tensorflow"].get("git_version"),
                "graph_def_version": m["graph_def_version"],
                "checkpoint_version": {
                    k: v for k, v in m["checkpoint_version"].items() if k != "source"
                },
                "python": m.get("python"),
                "package": recipe["package"] if recipe else None,
                "ops": {op["name"]: strip_op(op) for op in m["ops"]},
            }
        )
    return sorted(records, key=lambda r: version_key(r["version"]))


def records_from_packed(blob: bytes) -> list[ReleaseRecord]:
    """The releases of a packed file, any format: repacking needs no manifests."""
    text = gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob  # v1 was gzipped
    head, _, rest = text.partition(b"\n")
    doc = json.loads(head)
    if doc.get("format") == "tfcompat-registries/1":
        pool: list[dict[str, Any]] = []
        for rel in doc["releases"]:  # v1 keeps OpDefs inline in each delta
            for name, op in rel["set"].items():
                rel["set"][name] = len(pool)
                pool.append(op)
    elif doc.get("format") == REGISTRY_FORMAT:
        pool = [json.loads(line) for line in rest.split(b"\n")]
    else:
        raise RuntimeError(f"not a packed registry file (format {doc.get('format')!r})")
    records: list[ReleaseRecord] = []
    current: dict[str, dict[str, Any]] = {}
    for rel in doc["releases"]:
        current = {k: v for k, v in current.items() if k not in set(rel["removed"])}
        current.update({name: pool[i] for name, i in rel["set"].items()})
        record = {k: v for k, v in rel.items() if k not in ("set", "removed")}
        records.append(cast(ReleaseRecord, {**record, "ops": current}))
    return records


def pack_registries(
    records: list[ReleaseRecord], date: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """The header and the op pool of the packed file.

    The pool holds every distinct OpDef once, as canonical JSON text, in order of
    first appearance (release by release, ops by name). Each release names the
    pool entries it sets since the previous release (all of them for the first)
    and the ops that went away, so the header stays small and a reader decodes
    only the OpDefs a check asks for.
    """
    pool: list[str] = []
    where: dict[str, int] = {}
    texts: dict[int, str] = {}  # by id: releases replayed from a packed file share dicts
    releases = []
    prev: dict[str, int] = {}
    for record in sorted(records, key=lambda r: version_key(r["version"])):
        now: dict[str, int] = {}
        for name in sorted(record["ops"]):
            op = record["ops"][name]
            text = texts.get(id(op))
            if text is None:
                text = texts[id(op)] = json.dumps(op, sort_keys=True, separators=(",", ":"))
            if text not in where:
                where[text] = len(pool)
                pool.append(text)
            now[name] = where[text]
        releases.append(
            {
                **{k: v for k, v in record.items() if k != "ops"},
                "set": {name: i for name, i in now.items() if prev.get(name) != i},
                "removed": sorted(name for name in prev if name not in now),
            }
        )
        prev = now
    source = source_record(
        "tools/build_registries.py",
        "dump_manifest.py's op registry in each release's own environment (its recipe: "
        "Python and wheel), each distinct OpDef once",
        [str(r["package"]) for r in releases],
        date,  # None: today; a repack of the shipped file keeps its date
    )
    header = {"format": REGISTRY_FORMAT, "releases": releases, "pool_size": len(pool)}
    return {**header, "source": source}, pool


def unpack_registries(blob: bytes) -> dict[str, dict[str, dict[str, Any]]]:
    """Replay a packed file: {version: {op name: OpDef JSON}}."""
    return {r["version"]: r["ops"] for r in records_from_packed(blob)}


def encode(header: dict[str, Any], pool: list[str]) -> bytes:
    """One header line, then one OpDef per line; uncompressed, since the catalog reads
    it on every start and inflating cost more than the rest of reading it. Written
    from sorted keys only, so the same registries always give the same bytes."""
    head = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "\n".join([head, *pool]).encode("ascii")


def write_registry(records: list[ReleaseRecord], output: Path) -> None:
    if not records:
        raise SystemExit("build_registries: no releases to pack")
    header, pool = pack_registries(records)
    blob = encode(header, pool)
    # Self-check: decoding and replaying gives back every release's registry.
    replay = unpack_registries(blob)
    for record in records:
        if replay[record["version"]] != record["ops"]:
            raise RuntimeError(f"self-check failed for {record['version']}")
    for rel in header["releases"]:
        log(
            f"pack:   {rel['version']:<8} {len(rel['set']):4d} ops set, "
            f"{len(rel['removed']):3d} removed, GraphDef {rel['graph_def_version']['producer']}"
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.exists() and output.read_bytes() == blob:
        log(f"pack: {output} unchanged ({len(blob)} bytes)")
    else:
        tmp = output.with_name(output.name + ".tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, output)
        log(f"pack: wrote {output} ({len(blob)} bytes)")
    first, last = header["releases"][0]["version"], header["releases"][-1]["version"]
    log(f"pack: {len(header['releases'])} releases, {first} .. {last}, {len(pool)} distinct ops")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument(
        "--releases",
        help="comma-separated releases, full ('2.12.1') or minor "
        "('2.12'); default: every release in RECIPES",
    )
    p.add_argument(
        "--workdir",
        type=Path,
        default=Path("/work"),
        help="venvs go to WORKDIR/tfenvs/<version>, manifests and logs to "
        "WORKDIR/catalog-build (default: /work)",
    )
    p.add_argument("--envs-dir", type=Path, help="instead of WORKDIR/tfenvs")
    p.add_argument("--build-dir", type=Path, help="instead of WORKDIR/catalog-build")
    p.add_argument(
        "--python-root",
        type=Path,
        help="directory of X.Y.Z/bin/python (default: $PYENV_ROOT/versions)",
    )
    p.add_argument("--force", action="store_true", help="reinstall and re-dump even if done")
    p.add_argument("--redump", action="store_true", help="re-dump manifests, keep the venvs")
    p.add_argument("--jobs", type=int, default=2, help="releases built at once (default 2)")
    p.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="packed registry (default: worker/catalog/data/registries.jsonl)",
    )
    p.add_argument("--no-pack", action="store_true", help="install and dump only")
    p.add_argument(
        "--from-packed",
        type=Path,
        help="repack the releases of this packed file (either format) instead of the "
        "manifests; with --pack-only, converts the shipped file without TensorFlow",
    )
    p.add_argument("--pack-only", action="store_true", help="only pack existing manifests")
    p.add_argument("--list", action="store_true", help="print the recipe table and exit")
    args = p.parse_args(argv)

    if args.list:
        for v in sorted(RECIPES, key=version_key):
            r = RECIPES[v]
            print(f"{v:<8} python{r['python']:<5} {r['package']:<26} {' '.join(r['pins'])}")
        return 0

    envs: Path = args.envs_dir or args.workdir / "tfenvs"
    build: Path = args.build_dir or args.workdir / "catalog-build"
    failures: dict[str, str] = {}
    if not args.pack_only:
        releases = resolve_releases(args.releases)
        envs.mkdir(parents=True, exist_ok=True)
        log(f"building {len(releases)} release(s), {args.jobs} at a time: {', '.join(releases)}")
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {
                pool.submit(
                    build_release, v, envs, build, args.force, args.redump, args.python_root
                ): v
                for v in releases
            }
            for future in concurrent.futures.as_completed(futures):
                version = futures[future]
                try:
                    future.result()
                except Exception as exc:  # report, go on with the other releases
                    failures[version] = str(exc)
                    log(f"{version}: FAILED: {exc}")
    if not args.no_pack:
        if args.from_packed:
            records = records_from_packed(args.from_packed.read_bytes())
        else:
            records = records_from_manifests(load_manifests(build / "manifests"))
        write_registry(records, args.output)
    if failures:
        log("failed: " + ", ".join(f"{v} ({why})" for v, why in sorted(failures.items())))
        return 1
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
