"""Whether the worker may read a model source: one rule for every place a model comes from.

Whoever can name a source (an uploader through an event, a registry user through
a model version's `source`, a SageMaker package's `ModelDataUrl`) makes the
worker read with the worker's own credentials and file system: a confused
deputy. So every reader the worker opens is decided here first, at the edge
(receiver, SQS bridge) and again in the task:

- `s3://bucket/key` (and `s3a://`): only inside `TFCOMPAT_BUCKETS` (bucket and
  key globs; an empty list allows every bucket, which only the receiver's
  explicit opt-out permits);
- a local path (`/abs/path` or `file:///abs/path`): only under one of
  `TFCOMPAT_LOCAL_ROOTS`, compared after symlinks and `..` are resolved on both
  sides (a symlink inside a root that leads outside it is refused); no roots: no
  local path;
- `mlflow-artifacts:/...`: read through the configured tracking server's artifact
  proxy, so only when a tracking server is configured;
- anything else (`gs://`, `http://`, `dbfs:/`, a relative path ...): refused.

Pure: a policy (data) and a URI in, a `Decision` (data) out; the only outside
fact it consults is the file system's answer to "what does this path resolve
to" (`resolve`, `os.path.realpath` unless a test passes another). The adapters
log and count decisions (`worker.ingest.access.gate`).
"""

from __future__ import annotations

import fnmatch
import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

BUCKETS = "TFCOMPAT_BUCKETS"
LOCAL_ROOTS = "TFCOMPAT_LOCAL_ROOTS"
TRACKING_URI = "TFCOMPAT_MLFLOW_TRACKING_URI"

Resolve = Callable[[str], str]


@dataclass(frozen=True)
class ReadPolicy:
    """What the worker may read: `buckets` (`TFCOMPAT_BUCKETS` entries), `local_roots`
    (`TFCOMPAT_LOCAL_ROOTS`) and whether an MLflow tracking server is configured (its
    artifact proxy is how `mlflow-artifacts:` is read)."""

    buckets: tuple[str, ...] = ()
    local_roots: tuple[str, ...] = ()
    tracking_server: bool = False


@dataclass(frozen=True)
class Decision:
    """The answer for one source. `kind`: `s3`, `local`, `mlflow-artifacts` or `other`.
    Allowed: `bucket`/`key` (s3), `path` (local: the resolved path to open), `proxied`
    (the artifact proxy's path). Refused: `reason`, one line naming the setting to
    change (`setting`)."""

    allowed: bool
    kind: str
    uri: str
    reason: str = ""
    setting: str | None = None
    bucket: str = ""
    key: str = ""
    path: str = ""
    proxied: str = ""


def bucket_allowed(entries: tuple[str, ...], bucket: str, key: str) -> bool:
    """`TFCOMPAT_BUCKETS`: entries `BUCKET` (any key in it) or `BUCKET/KEYGLOB`, each part
    an fnmatch glob matched case-sensitively (`models-*`, `ml-*/prod/*`). A key part ending
    in `/` is a prefix (`team/prod/` is `team/prod/*`). No entries: every bucket."""
    if not entries:
        return True
    for entry in entries:
        bucket_glob, slash, key_glob = entry.partition("/")
        if not fnmatch.fnmatchcase(bucket, bucket_glob):
            continue
        if not slash or fnmatch.fnmatchcase(
            key, key_glob + ("*" if key_glob.endswith("/") else "")
        ):
            return True
    return False


def decide_object(policy: ReadPolicy, bucket: str, key: str) -> Decision:
    """The decision for one object of the object store (an upload event's)."""
    uri = f"s3://{bucket}/{key}"
    if not bucket or not bucket_allowed(policy.buckets, bucket, key):
        return Decision(False, "s3", uri, f"{uri} is not in {BUCKETS}", BUCKETS)
    return Decision(True, "s3", uri, bucket=bucket, key=key)


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def decide_local(policy: ReadPolicy, uri: str, path: str, resolve: Resolve) -> Decision:
    if not os.path.isabs(path):
        return Decision(False, "local", uri, f"{uri}: a relative path is never read", LOCAL_ROOTS)
    if not policy.local_roots:
        reason = f"{uri}: local paths are read only under {LOCAL_ROOTS}, which is empty"
        return Decision(False, "local", uri, reason, LOCAL_ROOTS)
    real = resolve(path)
    for root in policy.local_roots:
        if os.path.isabs(root) and inside(real, resolve(root)):
            return Decision(True, "local", uri, path=real)
    reason = f"{uri}: not under {LOCAL_ROOTS} (resolved: {real})"
    return Decision(False, "local", uri, reason, LOCAL_ROOTS)


def decide(policy: ReadPolicy, uri: str, resolve: Resolve = os.path.realpath) -> Decision:
    """Whether the worker may read the model at `uri`, and what to open if so."""
    parsed = urllib.parse.urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme in ("s3", "s3a"):
        decision = decide_object(policy, parsed.netloc, parsed.path.lstrip("/"))
        return Decision(**{**decision.__dict__, "uri": uri})
    if scheme == "mlflow-artifacts":
        if not policy.tracking_server:
            reason = f"{uri}: read through the MLflow artifact proxy, and {TRACKING_URI} is unset"
            return Decision(False, "mlflow-artifacts", uri, reason, TRACKING_URI)
        if parsed.netloc:
            # `mlflow-artifacts://other-host/...` names another server's proxy: never ours.
            reason = f"{uri}: names a server of its own; only {TRACKING_URI}'s proxy is read"
            return Decision(False, "mlflow-artifacts", uri, reason, TRACKING_URI)
        proxied = urllib.parse.unquote(parsed.path).strip("/")
        if any(part in ("..", ".") for part in proxied.split("/")):
            reason = f"{uri}: a path with '..' is never read"
            return Decision(False, "mlflow-artifacts", uri, reason, TRACKING_URI)
        return Decision(True, "mlflow-artifacts", uri, proxied=proxied)
    if scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            reason = f"{uri}: a file URI naming another host is never read"
            return Decision(False, "local", uri, reason, LOCAL_ROOTS)
        return decide_local(policy, uri, urllib.parse.unquote(parsed.path), resolve)
    if not scheme:
        return decide_local(policy, uri, uri, resolve)
    reason = (
        f"{uri}: the worker reads s3:// (under {BUCKETS}), mlflow-artifacts: (through "
        f"{TRACKING_URI}) and local paths (under {LOCAL_ROOTS}); {scheme}: is refused"
    )
    return Decision(False, "other", uri, reason, None)
