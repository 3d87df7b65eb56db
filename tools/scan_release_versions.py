#!/usr/bin/env python3
"""Read the version numbers compiled into every TensorFlow release on PyPI.

For each release of the ``tensorflow`` package from 1.0.0 to the newest
(patch and post releases included, no rc/dev), this downloads ONE wheel with
``pip download`` (never installs it), reads
``tensorflow/include/tensorflow/core/public/version.h`` straight out of the zip,
parses its ``#define``s, records the wheel's name, sha256 and newest zip entry
timestamp (``built_on``), and deletes the wheel at once.

Results are cached per release in a JSON file outside the repository, so an
interrupted scan resumes where it stopped.  The catalog is then written to
``worker/catalog/data/releases.json``.

Usage (from the repository root):

    python3 tools/scan_release_versions.py            # scan + write catalog
    python3 tools/scan_release_versions.py --only 2.4.4 2.12.1   # scan a few
    python3 tools/scan_release_versions.py --write-only          # cache -> json

Stdlib only, apart from ``packaging`` (for version ordering); pip is called as
a subprocess of the running interpreter.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

PACKAGE = "tensorflow"
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tools"))

from provenance import source_record  # noqa: E402

DEFAULT_OUT = REPO_ROOT / "worker" / "catalog" / "data" / "releases.json"
DEFAULT_BUILD_DIR = Path(".cache/catalog-build")
FORMAT = "tfcompat-releases/1"
MIN_VERSION = Version("1.0.0")
MAX_JOBS = 2
INDEX_MAX_AGE_H = 24  # list releases again when the cached listing is older

# GraphDef versions became date based on this day (version 30); from then on
# automation bumps TF_GRAPH_DEF_VERSION by one every day (see version.h).
DAILY_EPOCH = dt.date(2019, 5, 9)

VERSION_H_SUFFIX = "tensorflow/core/public/version.h"
PREFERRED_VERSION_H = "tensorflow/include/tensorflow/core/public/version.h"

DEFINE_NAMES = (
    "TF_MAJOR_VERSION",
    "TF_MINOR_VERSION",
    "TF_PATCH_VERSION",
    "TF_VERSION_SUFFIX",
    "TF_GRAPH_DEF_VERSION_MIN_PRODUCER",
    "TF_GRAPH_DEF_VERSION_MIN_CONSUMER",
    "TF_GRAPH_DEF_VERSION",
    "TF_CHECKPOINT_VERSION_MIN_PRODUCER",
    "TF_CHECKPOINT_VERSION_MIN_CONSUMER",
    "TF_CHECKPOINT_VERSION",
)

# Known values, checked after every scan (TF_GRAPH_DEF_VERSION).
KNOWN_GRAPH_DEF_VERSIONS = {
    "1.15.0": 134,
    "2.4.4": 561,
    "2.11.1": 1286,
    "2.12.1": 1395,
    "2.15.1": 1645,
    "2.18.1": 1994,
    "2.21.0": 2474,
}

# Target interpreters asked of the index when listing releases.
INDEX_PYTHONS = ("2.7", "3.5", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11",
                 "3.12", "3.13")

PLATFORM_GROUPS = {
    "linux": ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64",
              "manylinux_2_17_x86_64", "manylinux2014_x86_64",
              "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"),
    # pip expands a macosx tag to every older macOS version.
    "macos": ("macosx_15_0_x86_64", "macosx_15_0_arm64"),
    "windows": ("win_amd64",),
}

_print_lock = threading.Lock()
_cache_lock = threading.Lock()


def log(msg: str) -> None:
    with _print_lock:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# pip
# --------------------------------------------------------------------------

def _pip(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )


def _platform_args(group: str) -> list[str]:
    out: list[str] = []
    for plat in PLATFORM_GROUPS[group]:
        out += ["--platform", plat]
    return out


def index_versions(python: str, group: str = "linux") -> list[str]:
    """Versions the index offers for one target interpreter and platform."""
    args = ["index", "versions", PACKAGE, "--python-version", python,
            "--implementation", "cp", "--only-binary=:all:",
            *_platform_args(group)]
    try:
        proc = _pip(args, timeout=300)
    except subprocess.TimeoutExpired:
        log(f"index: cp{python} {group}: timed out")
        return []
    for line in proc.stdout.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.split(":", 1)[1].split(",")
                    if v.strip()]
    return []


def python_preference(version: Version) -> list[str]:
    """Interpreters to try first for a release, by era."""
    major, minor = version.major, version.minor
    if major < 2:
        return ["3.6", "3.5", "2.7", "3.7"]
    if minor <= 1:
        return ["3.7", "3.6", "3.5"]
    if minor <= 10:
        return ["3.8", "3.7", "3.9", "3.6", "3.10"]
    if minor == 11:
        return ["3.10", "3.9", "3.8", "3.7"]
    return ["3.11", "3.12", "3.10", "3.13", "3.9"]


class NotOnIndex(Exception):
    pass


def download_wheel(version: str, pythons: list[str], groups: list[str],
                   dest: Path) -> tuple[Path, str, str]:
    """Download one wheel of tensorflow==version into dest.

    Tries each (platform group, python) in order; returns the wheel path and
    the python/platform group that worked.  Raises NotOnIndex when no target
    has a wheel, RuntimeError on any other pip failure.
    """
    errors = []
    for group in groups:
        for py in pythons:
            args = ["download", "--no-deps", "--no-cache-dir",
                    "--progress-bar", "off", "--only-binary=:all:",
                    "--implementation", "cp", "--python-version", py,
                    *_platform_args(group), f"{PACKAGE}=={version}",
                    "-d", str(dest)]
            try:
                proc = _pip(args, timeout=1800)
            except subprocess.TimeoutExpired:
                errors.append(f"cp{py}/{group}: pip download timed out")
                continue
            wheels = sorted(dest.glob("*.whl"))
            if proc.returncode == 0 and wheels:
                return wheels[0], py, group
            err = (proc.stderr or proc.stdout).strip().splitlines()
            err = [l for l in err if "is ignored: it is neither" not in l]
            last = err[-1] if err else f"exit {proc.returncode}"
            if "No matching distribution" in last or \
                    "Could not find a version" in " ".join(err):
                errors.append(f"cp{py}/{group}: no matching wheel")
                continue
            raise RuntimeError(f"cp{py}/{group}: {last}")
    raise NotOnIndex("; ".join(errors))


# --------------------------------------------------------------------------
# version.h
# --------------------------------------------------------------------------

_DEFINE_RE = re.compile(
    r'^\s*#\s*define\s+(TF_[A-Z_]+)\s+(".*?"|-?\d+)\s*(?://\s*(.*?))?\s*$')


def parse_defines(text: str) -> tuple[dict, dict]:
    """Return ({name: value}, {name: trailing comment}) for TF_* defines."""
    values: dict = {}
    comments: dict = {}
    for line in text.splitlines():
        m = _DEFINE_RE.match(line)
        if not m:
            continue
        name, raw, comment = m.groups()
        values[name] = json.loads(raw) if raw.startswith('"') else int(raw)
        if comment:
            comments[name] = comment
    return values, comments


def graph_def_comment(text: str) -> str:
    """The comment block that precedes the GraphDef version defines."""
    lines = text.splitlines()
    idx = next((i for i, l in enumerate(lines)
                if re.match(r"\s*#\s*define\s+TF_GRAPH_DEF_VERSION", l)), None)
    if idx is None:
        return ""
    start = idx
    while start > 0 and (lines[start - 1].strip().startswith("//")
                         or not lines[start - 1].strip()):
        start -= 1
    block = [l.strip() for l in lines[start:idx]]
    return "\n".join(block).strip()


def daily_bump_comment(block: str) -> str:
    """The part of the GraphDef comment that explains the daily bump."""
    lines = block.splitlines()
    for i, line in enumerate(lines):
        if "date based" in line.lower() or "each day" in line.lower():
            # back up to the start of this numbered history entry
            j = i
            while j > 0 and not re.match(r"//\s*(\d+\.|\()", lines[j]):
                j -= 1
            return "\n".join(lines[j:]).strip()
    return ""


_UPDATED_RE = re.compile(r"Updated:\s*(\d{4})/(\d{1,2})/(\d{1,2})")


def read_wheel(path: Path) -> dict:
    """Everything recorded about one wheel; the wheel itself is not kept."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    rec: dict = {"wheel": path.name, "sha256": h.hexdigest(),
                 "wheel_bytes": path.stat().st_size}
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        newest = max((i.date_time for i in infos), default=None)
        rec["built_on"] = (dt.date(*newest[:3]).isoformat()
                           if newest and newest[0] > 1980 else None)
        rec["built_at"] = ("%04d-%02d-%02dT%02d:%02d:%02d" % newest
                           if newest and newest[0] > 1980 else None)
        names = [i.filename for i in infos]
        candidates = [n for n in names if n.endswith(VERSION_H_SUFFIX)]
        if not candidates:
            rec["file"] = None
            rec["status"] = "no_version_h"
            return rec
        vfile = (PREFERRED_VERSION_H if PREFERRED_VERSION_H in candidates
                 else min(candidates, key=len))
        text = zf.read(vfile).decode("utf-8", "replace")
        values, comments = parse_defines(text)
        rec["file"] = vfile
        rec["defines"] = {k: values.get(k) for k in DEFINE_NAMES}
        rec["define_comments"] = comments
        # Since TF 2.18-ish the release numbers are build flags checked by a
        # sibling header; read it too if version.h lacks them.
        rfile = vfile[: -len("version.h")] + "release_version.h"
        if rec["defines"]["TF_MAJOR_VERSION"] is None and rfile in names:
            rtext = zf.read(rfile).decode("utf-8", "replace")
            rvalues, _ = parse_defines(rtext)
            for k in ("TF_MAJOR_VERSION", "TF_MINOR_VERSION",
                      "TF_PATCH_VERSION", "TF_VERSION_SUFFIX"):
                if rvalues.get(k) is not None:
                    rec["defines"][k] = rvalues[k]
            rec["release_version_file"] = rfile
        rec["graph_def_comment"] = graph_def_comment(text)
        m = _UPDATED_RE.search(comments.get("TF_GRAPH_DEF_VERSION", ""))
        rec["graph_def_updated"] = (
            dt.date(*map(int, m.groups())).isoformat() if m else None)
        rec["status"] = "ok"
    return rec


# --------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------

def load_cache(path: Path) -> dict:
    if path.exists():
        with open(path) as fh:
            data = json.load(fh)
        data.setdefault("releases", {})
        return data
    return {"releases": {}}


def save_cache(path: Path, cache: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as fh:
        json.dump(cache, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------

def keep(v: str) -> Version | None:
    try:
        ver = Version(v)
    except InvalidVersion:
        return None
    if ver.is_prerelease or ver.is_devrelease or ver < MIN_VERSION:
        return None
    return ver


def discover(cache: dict, refresh: bool) -> dict[str, dict]:
    """{version: {"pythons": [...], "listed": bool}} for every candidate."""
    disc = cache.get("discovery")
    if disc:
        age = dt.datetime.now(dt.timezone.utc) - \
            dt.datetime.fromisoformat(disc["when"])
        refresh = refresh or age > dt.timedelta(hours=INDEX_MAX_AGE_H)
    if disc and not refresh:
        log(f"discovery: using cached listing ({len(disc['versions'])} "
            f"releases, made {disc['when']})")
    else:
        per_version: dict[str, list[str]] = {}
        for py in INDEX_PYTHONS:
            found = index_versions(py)
            log(f"index: cp{py} linux lists {len(found)} versions")
            for v in found:
                per_version.setdefault(v, []).append(py)
        disc = {"when": dt.datetime.now(dt.timezone.utc).isoformat(
                    timespec="seconds"),
                "versions": per_version}
        cache["discovery"] = disc
    listed = {v: {"pythons": pys, "listed": True}
              for v, pys in disc["versions"].items() if keep(v)}
    # The index view depends on the target interpreter and may hide very old
    # or yanked releases: probe every patch number missing inside a series
    # (e.g. 1.0.0 when only 1.0.1 is listed) explicitly with pip download.
    series: dict[tuple[int, int], set[int]] = {}
    for v in listed:
        ver = Version(v)
        series.setdefault((ver.major, ver.minor), set()).add(ver.micro)
    for (major, minor), patches in series.items():
        for p in range(0, max(patches)):
            if p not in patches:
                v = f"{major}.{minor}.{p}"
                if keep(v):
                    listed.setdefault(v, {"pythons": [], "listed": False})
    return listed


# --------------------------------------------------------------------------
# scan
# --------------------------------------------------------------------------

def scan_one(version: str, info: dict, workdir: Path) -> dict:
    ver = Version(version)
    pref = python_preference(ver)
    if info["listed"]:
        pythons = [p for p in pref if p in info["pythons"]] + \
                  [p for p in info["pythons"] if p not in pref]
        groups = ["linux", "macos", "windows"]
    else:
        pythons = pref[:2]
        groups = ["linux", "macos"]
    tmp = Path(tempfile.mkdtemp(prefix=f"tf-{version}-", dir=workdir))
    t0 = time.monotonic()
    try:
        try:
            wheel, py, group = download_wheel(version, pythons, groups, tmp)
        except NotOnIndex as exc:
            return {"status": "not_found", "error": str(exc),
                    "listed": info["listed"]}
        t1 = time.monotonic()
        rec = read_wheel(wheel)
        rec.update({"python": py, "platform_group": group,
                    "download_s": round(t1 - t0, 1),
                    "read_s": round(time.monotonic() - t1, 1),
                    "listed": info["listed"],
                    "scanned": dt.datetime.now(dt.timezone.utc).isoformat(
                        timespec="seconds")})
        return rec
    except Exception as exc:  # recorded, retried on the next run
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}",
                "listed": info["listed"]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # never keep a wheel


def run_scan(cache: dict, cache_path: Path, todo: dict[str, dict],
             workdir: Path, jobs: int) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    # leftovers of a killed run
    for stale in workdir.glob("tf-*"):
        shutil.rmtree(stale, ignore_errors=True)
    total = len(todo)
    done = 0
    started = time.monotonic()
    log(f"scan: {total} releases to do, {jobs} at a time")
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(scan_one, v, info, workdir): v
                for v, info in todo.items()}
        for fut in concurrent.futures.as_completed(futs):
            v = futs[fut]
            rec = fut.result()
            done += 1
            with _cache_lock:
                cache["releases"][v] = rec
                save_cache(cache_path, cache)
            el = time.monotonic() - started
            eta = el / done * (total - done)
            if rec["status"] == "ok":
                d = rec["defines"]
                what = (f"graph_def={d['TF_GRAPH_DEF_VERSION']} "
                        f"min_cons={d['TF_GRAPH_DEF_VERSION_MIN_CONSUMER']} "
                        f"min_prod={d['TF_GRAPH_DEF_VERSION_MIN_PRODUCER']} "
                        f"ckpt={d['TF_CHECKPOINT_VERSION']} "
                        f"built_on={rec['built_on']} "
                        f"({rec['wheel_bytes'] / 1e6:.0f} MB, "
                        f"{rec['download_s']}s)")
            elif rec["status"] == "no_version_h":
                what = f"no version.h in {rec['wheel']}"
            else:
                what = f"{rec['status'].upper()}: {rec['error']}"
            log(f"[{done}/{total}] {v}: {what}  "
                f"(elapsed {el / 60:.1f} min, eta {eta / 60:.1f} min)")


# --------------------------------------------------------------------------
# catalog
# --------------------------------------------------------------------------

def _nums(d: dict | None, prefix: str) -> dict:
    d = d or {}
    return {"producer": d.get(prefix),
            "min_consumer": d.get(prefix + "_MIN_CONSUMER"),
            "min_producer": d.get(prefix + "_MIN_PRODUCER")}


def build_anchor(entries: dict[str, dict]) -> tuple[dict, dict]:
    """The (date, graph_def_version) anchor and the stats that back it."""
    ok = {v: r for v, r in entries.items() if r.get("status") == "ok"}
    newest = max(ok, key=Version)
    nrec = ok[newest]
    stats: dict = {}
    # 1. The "// Updated: Y/M/D" comment written by the daily bump.
    upd = {v: r["defines"]["TF_GRAPH_DEF_VERSION"]
           - (dt.date.fromisoformat(r["graph_def_updated"]) - DAILY_EPOCH).days
           for v, r in ok.items() if r.get("graph_def_updated")}
    if upd:
        c = statistics.median(upd.values())
        stats["updated_comment"] = {
            "releases": len(upd), "constant_median": c,
            "min": min(upd.values()), "max": max(upd.values()),
            "max_dev_days": max(abs(x - c) for x in upd.values()),
            "per_release": upd}
    # 2. The wheel build date (newest zip entry) vs. the graph_def_version.
    built = {v: r["defines"]["TF_GRAPH_DEF_VERSION"]
             - (dt.date.fromisoformat(r["built_on"]) - DAILY_EPOCH).days
             for v, r in ok.items()
             if r.get("built_on") and r["defines"]["TF_GRAPH_DEF_VERSION"]
             and dt.date.fromisoformat(r["built_on"]) > DAILY_EPOCH
             and r["defines"]["TF_GRAPH_DEF_VERSION"] >= 30}
    if built:
        for label, sel in (("all", built),
                           ("x.y.0", {v: c for v, c in built.items()
                                      if Version(v).micro == 0})):
            if not sel:
                continue
            c = statistics.median(sel.values())
            stats["built_on_" + label] = {
                "releases": len(sel), "constant_median": c,
                "min": min(sel.values()), "max": max(sel.values()),
                "max_dev_days": max(abs(x - c) for x in sel.values()),
                "per_release": sel}
    src_file = nrec["file"]
    if nrec.get("graph_def_updated"):
        date = nrec["graph_def_updated"]
        source = (f"{src_file} in {nrec['wheel']}: "
                  f"'#define TF_GRAPH_DEF_VERSION "
                  f"{nrec['defines']['TF_GRAPH_DEF_VERSION']}  // "
                  f"{nrec['define_comments']['TF_GRAPH_DEF_VERSION']}' "
                  f"(date written by the daily version bump)")
    else:
        date = nrec["built_on"]
        source = (f"newest zip entry timestamp of {nrec['wheel']} "
                  f"(wheel build date; the version was frozen earlier)")
    anchor = {"date": date,
              "graph_def_version": nrec["defines"]["TF_GRAPH_DEF_VERSION"],
              "source": source,
              "version_h_comment": daily_bump_comment(
                  nrec.get("graph_def_comment", ""))}
    return anchor, stats


def build_catalog(cache: dict, versions: list[str]) -> tuple[dict, list[str]]:
    problems: list[str] = []
    releases = []
    entries = {v: cache["releases"][v] for v in versions
               if v in cache["releases"]}
    for v in sorted(entries, key=Version):
        r = entries[v]
        if r["status"] == "not_found" and not r.get("listed"):
            continue  # probed patch number that was never released
        item: dict = {"version": v}
        if r["status"] == "ok":
            d = r["defines"]
            item["graph_def_version"] = _nums(d, "TF_GRAPH_DEF_VERSION")
            item["checkpoint_version"] = _nums(d, "TF_CHECKPOINT_VERSION")
            item["built_on"] = r["built_on"]
            item["source"] = {"wheel": r["wheel"], "sha256": r["sha256"],
                              "file": r["file"]}
            rel = Version(v).release
            hdr = (d["TF_MAJOR_VERSION"], d["TF_MINOR_VERSION"],
                   d["TF_PATCH_VERSION"])
            if None in hdr:
                pass  # numbers are build flags in newer releases
            elif tuple(hdr) != tuple(rel[:3]):
                item["note"] = (f"version.h says {hdr[0]}.{hdr[1]}.{hdr[2]}"
                                f"{d['TF_VERSION_SUFFIX'] or ''}")
                problems.append(f"{v}: {item['note']}")
        else:
            item["graph_def_version"] = _nums(None, "TF_GRAPH_DEF_VERSION")
            item["checkpoint_version"] = _nums(None, "TF_CHECKPOINT_VERSION")
            item["built_on"] = r.get("built_on")
            if r["status"] == "no_version_h":
                item["source"] = {"wheel": r["wheel"], "sha256": r["sha256"],
                                  "file": None}
                item["note"] = "wheel has no core/public/version.h"
            else:
                item["source"] = None
                item["note"] = f"scan failed: {r.get('error')}"
                problems.append(f"{v}: {item['note']}")
        releases.append(item)
    for v, want in KNOWN_GRAPH_DEF_VERSIONS.items():
        got = next((x["graph_def_version"]["producer"] for x in releases
                    if x["version"] == v), None)
        if got != want:
            problems.append(f"known fact: {v} TF_GRAPH_DEF_VERSION is {got},"
                            f" expected {want}")
    anchor, stats = build_anchor(entries)
    wheels = [r["source"]["wheel"] for r in releases if r.get("source")]
    source = source_record(
        "tools/scan_release_versions.py",
        "PyPI's list of tensorflow releases; per release, "
        "tensorflow/core/public/version.h read from one of its wheels (named in the "
        "release's own `source`, with its SHA-256)",
        ["https://pypi.org/pypi/tensorflow/json", *wheels])
    catalog = {"format": FORMAT, "graph_def_daily_anchor": anchor,
               "releases": releases, "source": source}
    cache["anchor_stats"] = stats
    return catalog, problems


def summarize(catalog: dict, cache: dict) -> None:
    rels = catalog["releases"]
    log(f"catalog: {len(rels)} releases")
    odd = [r for r in rels if r["graph_def_version"]["producer"] is not None
           and ((r["graph_def_version"]["min_consumer"],
                 r["graph_def_version"]["min_producer"]) != (0, 0)
                or (r["checkpoint_version"]["producer"],
                    r["checkpoint_version"]["min_consumer"],
                    r["checkpoint_version"]["min_producer"]) != (1, 0, 0))]
    for r in odd:
        log(f"  unusual: {r['version']} graph_def={r['graph_def_version']} "
            f"checkpoint={r['checkpoint_version']}")
    if not odd:
        log("  every release has graph min_consumer/min_producer 0/0 and "
            "checkpoint 1/0/0")
    for key, s in cache.get("anchor_stats", {}).items():
        log(f"  anchor via {key}: constant {s['constant_median']} over "
            f"{s['releases']} releases, range {s['min']}..{s['max']}, "
            f"max deviation {s['max_dev_days']} days")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache", type=Path,
                    default=DEFAULT_BUILD_DIR / "versions-cache.json")
    ap.add_argument("--workdir", type=Path, default=DEFAULT_BUILD_DIR / "dl",
                    help="where wheels land (each deleted after reading)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--jobs", type=int, default=MAX_JOBS,
                    help=f"parallel downloads (at most {MAX_JOBS})")
    ap.add_argument("--only", nargs="*", help="scan just these versions")
    ap.add_argument("--refresh-index", action="store_true",
                    help="list releases again even if the cached listing "
                         f"is younger than {INDEX_MAX_AGE_H} h")
    ap.add_argument("--rescan", action="store_true",
                    help="ignore cached results for the selected releases")
    ap.add_argument("--retry-not-found", action="store_true",
                    help="probe again the patch numbers pip did not find")
    ap.add_argument("--write-only", action="store_true",
                    help="only turn the cache into the catalog")
    ap.add_argument("--force", action="store_true",
                    help="write the catalog even if a check fails")
    args = ap.parse_args(argv)
    jobs = max(1, min(MAX_JOBS, args.jobs))

    cache = load_cache(args.cache)
    t0 = time.monotonic()
    candidates = discover(cache, args.refresh_index)
    save_cache(args.cache, cache)
    selected = (candidates if not args.only else
                {v: candidates.get(v, {"pythons": [], "listed": False})
                 for v in args.only})
    if not args.write_only:
        todo = {}
        for v, info in sorted(selected.items(), key=lambda kv: Version(kv[0])):
            rec = cache["releases"].get(v)
            status = rec and rec.get("status")
            if args.rescan or status is None or status == "failed" or \
                    (status == "not_found" and args.retry_not_found):
                todo[v] = info
        run_scan(cache, args.cache, todo, args.workdir, jobs)
        log(f"scan took {(time.monotonic() - t0) / 60:.1f} min")
    if args.only:
        for v in args.only:
            log(f"{v}: {json.dumps(cache['releases'].get(v), sort_keys=True)[:600]}")
        return 0
    catalog, problems = build_catalog(cache, list(candidates))
    save_cache(args.cache, cache)
    summarize(catalog, cache)
    for p in problems:
        log(f"PROBLEM: {p}")
    if any(p.startswith("known fact") for p in problems) and not args.force:
        log("not writing the catalog: a known fact does not match "
            "(use --force to write anyway)")
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(catalog, fh, indent=1, sort_keys=True)
        fh.write("\n")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
