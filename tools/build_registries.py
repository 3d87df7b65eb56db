#!/usr/bin/env python3
"""Rebuild the built-in op-registry catalog from real TensorFlow installs.

For every release in RECIPES (or those named with --releases) this script

1. creates a throwaway virtualenv ``<envs>/<version>/`` with the recorded
   Python and ``pip install --no-cache-dir <package> <pins...>``, checks that
   ``import tensorflow`` reports the expected version, and writes the marker
   ``<envs>/<version>/READY`` holding the venv's python path;
2. runs the project's own ``worker/fleet/dump_manifest.py`` with that
   interpreter, writing ``<manifests>/tf-<version>.json``;

and then packs *every* manifest found in ``<manifests>`` into one compact,
delta-encoded file, ``worker/catalog/data/registries.json.gz``
(format ``tfcompat-registries/1``; see ``pack_registries``).

It is idempotent: a release whose venv is READY is not reinstalled and a
release whose manifest exists is not dumped again, unless ``--force``.  The
packed file is written with sorted keys and a fixed gzip mtime, so rebuilding
from the same manifests gives identical bytes.

Usage (Python 3.11, standard library only)::

    python3 tools/build_registries.py                       # everything
    python3 tools/build_registries.py --releases 2.12,1.15  # by minor or full version
    python3 tools/build_registries.py --pack-only           # just repack manifests
    python3 tools/build_registries.py --workdir /scratch    # /scratch/tfenvs, /scratch/catalog-build

Needs network access to PyPI and pyenv-style interpreters
(``$PYENV_ROOT/versions/3.X.Y/bin/python``, or ``python3.X`` on PATH).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

# --------------------------------------------------------------------------
# Install recipes: exactly what worked (Linux x86_64, glibc 2.36).
#   python  - interpreter minor version used for the venv (newest patch found)
#   package - pip requirement for TensorFlow itself (newest patch of the minor;
#             tensorflow-cpu wherever it exists and is smaller)
#   pins    - extra requirements given to the same pip command
#   env     - extra environment for pip, verification and the dump
# Why the pins:
#   protobuf<3.20  generated *_pb2 modules of TF <= 2.8 fail with protobuf
#                  >= 3.20/4.x ("Descriptors cannot be created directly");
#                  2.9 - 2.11 pin it themselves.
#   numpy<1.17     TF 1.13/1.14 spam FutureWarnings and break on newer numpy.
#   numpy<1.19     TF 1.15 and 2.0 - 2.2 were built against numpy <= 1.18
#                  (1.15.5 and 2.3 declare it; 2.4 - 2.6 pin ~=1.19.2).
#   h5py<3         Keras HDF5 save/load in TF <= 2.3 breaks with h5py 3
#                  (matters for the fixture generator that reuses these venvs).
# --------------------------------------------------------------------------
_OLD = ["protobuf<3.20", "h5py<3"]

RECIPES = {
    "1.13.2": {"python": "3.7", "package": "tensorflow==1.13.2", "pins": ["numpy<1.17"] + _OLD},
    "1.14.0": {"python": "3.7", "package": "tensorflow==1.14.0", "pins": ["numpy<1.17"] + _OLD},
    "1.15.5": {"python": "3.7", "package": "tensorflow==1.15.5", "pins": ["numpy<1.19"] + _OLD},
    "2.0.4": {"python": "3.7", "package": "tensorflow==2.0.4", "pins": ["numpy<1.19"] + _OLD},
    "2.1.4": {"python": "3.7", "package": "tensorflow-cpu==2.1.4", "pins": ["numpy<1.19"] + _OLD},
    "2.2.3": {"python": "3.7", "package": "tensorflow-cpu==2.2.3", "pins": ["numpy<1.19"] + _OLD},
    "2.3.4": {"python": "3.7", "package": "tensorflow-cpu==2.3.4", "pins": list(_OLD)},
    "2.4.4": {"python": "3.7", "package": "tensorflow-cpu==2.4.4", "pins": ["protobuf<3.20"]},
    "2.5.3": {"python": "3.7", "package": "tensorflow-cpu==2.5.3", "pins": ["protobuf<3.20"]},
    "2.6.5": {"python": "3.7", "package": "tensorflow-cpu==2.6.5", "pins": ["protobuf<3.20"]},
    "2.7.4": {"python": "3.7", "package": "tensorflow-cpu==2.7.4", "pins": ["protobuf<3.20"]},
    "2.8.4": {"python": "3.7", "package": "tensorflow-cpu==2.8.4", "pins": ["protobuf<3.20"]},
    "2.9.3": {"python": "3.7", "package": "tensorflow-cpu==2.9.3", "pins": []},
    "2.10.1": {"python": "3.7", "package": "tensorflow-cpu==2.10.1", "pins": []},
    "2.11.0": {"python": "3.7", "package": "tensorflow-cpu==2.11.0", "pins": []},
    "2.12.1": {"python": "3.11", "package": "tensorflow-cpu==2.12.1", "pins": []},
    "2.13.1": {"python": "3.11", "package": "tensorflow-cpu==2.13.1", "pins": []},
    "2.14.1": {"python": "3.11", "package": "tensorflow-cpu==2.14.1", "pins": []},
    "2.15.1": {"python": "3.11", "package": "tensorflow-cpu==2.15.1", "pins": []},
    "2.16.2": {"python": "3.11", "package": "tensorflow-cpu==2.16.2", "pins": []},
    "2.17.1": {"python": "3.11", "package": "tensorflow-cpu==2.17.1", "pins": []},
    "2.18.1": {"python": "3.11", "package": "tensorflow-cpu==2.18.1", "pins": []},
    "2.19.1": {"python": "3.11", "package": "tensorflow-cpu==2.19.1", "pins": []},
    "2.20.0": {"python": "3.11", "package": "tensorflow-cpu==2.20.0", "pins": []},
    "2.21.0": {"python": "3.11", "package": "tensorflow-cpu==2.21.0", "pins": []},
}

REGISTRY_FORMAT = "tfcompat-registries/1"
REPO = Path(__file__).resolve().parents[1]
DUMPER = REPO / "worker" / "fleet" / "dump_manifest.py"
DEFAULT_OUTPUT = REPO / "worker" / "catalog" / "data" / "registries.json.gz"

# OpDef fields that never matter for load compatibility and are stripped when
# packing (documentation strings of the op and of each arg/attr).
_STRIP_OP_FIELDS = ("summary", "description")
_STRIP_ITEM_FIELDS = ("description",)

_VERIFY = (
    "import tensorflow as tf; v = getattr(tf, 'version', None); "
    "print(getattr(v, 'VERSION', None) or tf.__version__, "
    "getattr(v, 'GRAPH_DEF_VERSION', None) or tf.GRAPH_DEF_VERSION)"
)

_print_lock = threading.Lock()
_t0 = time.monotonic()


def log(msg: str) -> None:
    with _print_lock:
        sys.stderr.write("[%6.0fs] %s\n" % (time.monotonic() - _t0, msg))
        sys.stderr.flush()


def version_key(version: str) -> tuple:
    """Sort key for 'X.Y.Z' (a trailing pre-release tag sorts before the final)."""
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)(.*)$", version)
    if not m:
        return (9999, version)
    major, minor, patch, rest = m.groups()
    return (int(major), int(minor), int(patch), rest == "", rest)


def resolve_releases(spec: str | None) -> list[str]:
    if not spec:
        return sorted(RECIPES, key=version_key)
    out = []
    for item in re.split(r"[,\s]+", spec.strip()):
        if not item:
            continue
        if item in RECIPES:
            match = item
        else:
            found = [v for v in RECIPES if v.startswith(item + ".")]
            if len(found) != 1:
                raise SystemExit("build_registries: no recipe for release %r (known: %s)"
                                 % (item, ", ".join(sorted(RECIPES, key=version_key))))
            match = found[0]
        if match not in out:
            out.append(match)
    return out


def find_python(minor: str, python_root: Path | None) -> str:
    """Newest installed patch release of Python `minor` (e.g. '3.7')."""
    roots = []
    if python_root is not None:
        roots.append(python_root)
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    roots.append(Path(pyenv_root) / "versions")
    for root in roots:
        if not root.is_dir():
            continue
        cands = []
        for d in root.iterdir():
            m = re.fullmatch(re.escape(minor) + r"\.(\d+)", d.name)
            if m and (d / "bin" / "python").exists():
                cands.append((int(m.group(1)), d / "bin" / "python"))
        if cands:
            return str(max(cands)[1])
    found = shutil.which("python" + minor)
    if found:
        return found
    raise RuntimeError("no Python %s found (pyenv versions dir or python%s on PATH)" % (minor, minor))


def _run(cmd: list[str], logfile, env: dict, **kw) -> subprocess.CompletedProcess:
    logfile.write("\n$ %s\n" % " ".join(cmd))
    logfile.flush()
    return subprocess.run(cmd, stdout=logfile, stderr=subprocess.STDOUT, env=env, **kw)


def build_release(version: str, envs: Path, manifests: Path, logs: Path,
                  force: bool, python_root: Path | None) -> dict:
    """Install (if needed) and dump (if needed) one release. Returns a status dict."""
    recipe = RECIPES[version]
    venv = envs / version
    ready = venv / "READY"
    vpython = venv / "bin" / "python"
    manifest = manifests / ("tf-%s.json" % version)
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(recipe.get("env", {}))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    env["PYTHONNOUSERSITE"] = "1"
    env.pop("PYTHONPATH", None)
    status = {"version": version, "installed": False, "dumped": False}
    started = time.monotonic()
    with open(logs / ("%s.log" % version), "a") as lf:
        lf.write("\n==== %s %s\n" % (version, time.strftime("%Y-%m-%d %H:%M:%S")))
        if force or not (ready.exists() and vpython.exists()):
            if venv.exists():
                log("%s: removing old venv %s" % (version, venv))
                shutil.rmtree(venv)
            base = find_python(recipe["python"], python_root)
            log("%s: creating venv with %s" % (version, base))
            if _run([base, "-m", "venv", str(venv)], lf, env).returncode:
                raise RuntimeError("venv creation failed")
            reqs = [recipe["package"]] + list(recipe.get("pins", []))
            log("%s: pip install %s" % (version, " ".join(reqs)))
            if _run([str(vpython), "-m", "pip", "install", "--no-cache-dir",
                     "--disable-pip-version-check"] + reqs, lf, env).returncode:
                raise RuntimeError("pip install failed (see %s)" % lf.name)
            out = subprocess.run([str(vpython), "-c", _VERIFY], env=env, stdout=subprocess.PIPE,
                                 stderr=lf, universal_newlines=True)
            lf.write(out.stdout)
            got = out.stdout.split()
            if out.returncode or not got or got[0] != version:
                raise RuntimeError("verification failed: %r" % out.stdout.strip())
            ready.write_text(str(vpython) + "\n")
            status["installed"] = True
            log("%s: verified (TF %s, GraphDef %s), READY written in %.0fs"
                % (version, got[0], got[1], time.monotonic() - started))
        else:
            log("%s: venv READY, not reinstalling" % version)
        if force or status["installed"] or not manifest.exists():
            manifests.mkdir(parents=True, exist_ok=True)
            tmp = manifest.with_suffix(".json.tmp")
            r = _run([str(vpython), str(DUMPER), "-o", str(tmp)], lf, env)
            if r.returncode:
                raise RuntimeError("dump_manifest.py failed (see %s)" % lf.name)
            os.replace(tmp, manifest)
            status["dumped"] = True
        data = json.loads(manifest.read_text())
        if data["tensorflow"]["version"] != version:
            raise RuntimeError("manifest is for %s" % data["tensorflow"]["version"])
        status["ops"] = len(data["ops"])
        status["graph_def_version"] = data["graph_def_version"]
        status["checkpoint_version"] = data["checkpoint_version"]
        log("%s: manifest %s: %d ops, GraphDef %s, checkpoint %s"
            % (version, "written" if status["dumped"] else "present", status["ops"],
               data["graph_def_version"], data["checkpoint_version"]))
    return status


# --------------------------------------------------------------------------
# Packing
# --------------------------------------------------------------------------

def strip_op(op: dict) -> dict:
    """OpDef JSON without its documentation strings (everything else kept)."""
    out = {k: v for k, v in op.items() if k not in _STRIP_OP_FIELDS}
    for key in ("input_arg", "output_arg", "attr"):
        if key in out:
            out[key] = [{k: v for k, v in item.items() if k not in _STRIP_ITEM_FIELDS}
                        for item in out[key]]
    return out


def load_manifests(manifests: Path) -> list[dict]:
    found = []
    for path in sorted(manifests.glob("tf-*.json")):
        data = json.loads(path.read_text())
        if data.get("format") != "tfcompat-manifest/1":
            raise RuntimeError("%s: not a tfcompat manifest" % path)
        found.append(data)
    found.sort(key=lambda m: version_key(m["tensorflow"]["version"]))
    return found


def pack_registries(manifests: list[dict]) -> dict:
    releases = []
    prev: dict[str, dict] = {}
    for m in manifests:
        version = m["tensorflow"]["version"]
        ops = {}
        for op in m["ops"]:
            ops[op["name"]] = strip_op(op)
        recipe = RECIPES.get(version)
        cp = {k: v for k, v in m["checkpoint_version"].items() if k != "source"}
        releases.append({
            "version": version,
            "git_version": m["tensorflow"].get("git_version"),
            "graph_def_version": m["graph_def_version"],
            "checkpoint_version": cp,
            "python": m.get("python"),
            "package": recipe["package"] if recipe else None,
            "set": {name: op for name, op in ops.items() if prev.get(name) != op},
            "removed": sorted(name for name in prev if name not in ops),
        })
        prev = ops
    return {"format": REGISTRY_FORMAT, "releases": releases}


def unpack_registries(doc: dict) -> dict[str, dict[str, dict]]:
    """Replay the deltas: {version: {op name: OpDef JSON}} (used as a self-check)."""
    out, cur = {}, {}
    for rel in doc["releases"]:
        cur = dict(cur)
        for name in rel["removed"]:
            del cur[name]
        cur.update(rel["set"])
        out[rel["version"]] = cur
    return out


def encode(doc: dict) -> bytes:
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(text.encode("ascii"))
    return buf.getvalue()


def write_registry(manifest_dir: Path, output: Path) -> None:
    manifests = load_manifests(manifest_dir)
    if not manifests:
        raise SystemExit("build_registries: no manifests in %s" % manifest_dir)
    doc = pack_registries(manifests)
    blob = encode(doc)
    # Self-check: decoding and replaying gives every manifest's (stripped) registry.
    replay = unpack_registries(json.loads(gzip.decompress(blob)))
    for m in manifests:
        want = {op["name"]: strip_op(op) for op in m["ops"]}
        if replay[m["tensorflow"]["version"]] != want:
            raise RuntimeError("self-check failed for %s" % m["tensorflow"]["version"])
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.exists() and output.read_bytes() == blob:
        log("pack: %s unchanged (%d bytes)" % (output, len(blob)))
    else:
        tmp = output.with_name(output.name + ".tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, output)
        log("pack: wrote %s (%d bytes)" % (output, len(blob)))
    for rel in doc["releases"]:
        log("pack:   %-8s %4d ops set, %3d removed, GraphDef %s"
            % (rel["version"], len(rel["set"]), len(rel["removed"]),
               rel["graph_def_version"]["producer"]))
    log("pack: %d releases, %s .. %s" % (len(doc["releases"]), doc["releases"][0]["version"],
                                         doc["releases"][-1]["version"]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--releases", help="comma-separated releases, full ('2.12.1') or minor "
                   "('2.12'); default: every release in RECIPES")
    p.add_argument("--workdir", type=Path, default=Path("/work"),
                   help="venvs go to WORKDIR/tfenvs/<version>, manifests to "
                   "WORKDIR/catalog-build/manifests (default: /work)")
    p.add_argument("--envs-dir", type=Path, help="override WORKDIR/tfenvs")
    p.add_argument("--build-dir", type=Path, help="override WORKDIR/catalog-build")
    p.add_argument("--python-root", type=Path,
                   help="directory of X.Y.Z/bin/python interpreters (default: $PYENV_ROOT/versions)")
    p.add_argument("--force", action="store_true", help="reinstall and re-dump even if done")
    p.add_argument("--jobs", type=int, default=2, help="releases installed at once (default 2)")
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT,
                   help="packed registry (default: worker/catalog/data/registries.json.gz)")
    p.add_argument("--no-pack", action="store_true", help="install and dump only")
    p.add_argument("--pack-only", action="store_true", help="only pack existing manifests")
    p.add_argument("--list", action="store_true", help="print the recipe table and exit")
    args = p.parse_args(argv)

    if args.list:
        for v in sorted(RECIPES, key=version_key):
            r = RECIPES[v]
            print("%-8s python%-5s %-26s %s" % (v, r["python"], r["package"], " ".join(r["pins"])))
        return 0

    envs = args.envs_dir or args.workdir / "tfenvs"
    build = args.build_dir or args.workdir / "catalog-build"
    manifests = build / "manifests"
    failures = {}
    if not args.pack_only:
        releases = resolve_releases(args.releases)
        envs.mkdir(parents=True, exist_ok=True)
        log("building %d release(s) with %d job(s): %s" % (len(releases), args.jobs, ", ".join(releases)))
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = {pool.submit(build_release, v, envs, manifests, build / "logs",
                                args.force, args.python_root): v for v in releases}
            for fut in concurrent.futures.as_completed(futs):
                v = futs[fut]
                try:
                    fut.result()
                except Exception as exc:  # noqa: BLE001 - report and go on
                    failures[v] = str(exc)
                    log("%s: FAILED: %s" % (v, exc))
    if not args.no_pack:
        write_registry(manifests, args.output)
    if failures:
        log("failed: %s" % ", ".join("%s (%s)" % kv for kv in sorted(failures.items())))
        return 1
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
