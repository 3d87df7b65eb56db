"""The MLflow tracking server's REST API, as little of it as the checks need.

Model versions (`/api/2.0/mlflow/model-versions/...`): get, download URI, set
and delete tags; registered models (get, search) for owner routing and fleet
re-checks; and the artifact proxy (`/api/2.0/mlflow-artifacts/artifacts`),
through which a version stored at `mlflow-artifacts:` is read: listed once,
each file read with ranged GETs in 1 MiB blocks, so a check fetches what the
reader asks for and not the variables' data.

HTTP errors stop here: connection trouble, 429 and 5xx are `TransientError`,
404 / `RESOURCE_DOES_NOT_EXIST` is `NotFound`, 401 and 403 are `ConfigError`
(the token is wrong), anything else `TfcompatError`.

Credentials are taken the way MLflow's own client takes them: a `user:password@`
in the tracking URI, or `MLFLOW_TRACKING_USERNAME` / `MLFLOW_TRACKING_PASSWORD`,
become HTTP basic auth, and `MLFLOW_TRACKING_TOKEN` a bearer token. The URL
requests go to, every message and `base_url` (what reports name) never carry
them. No response body is read past `max_response` bytes (a server that ignores
`Range` and sends a whole large file is refused, `ResponseTooLarge`).
"""

from __future__ import annotations

import base64
import json
import posixpath
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from worker.errors import ConfigError, LimitExceeded, NotFound, TfcompatError, TransientError
from worker.formats.source import Source, truncated
from worker.redact import redact_text, split_userinfo
from worker.settings import Settings

API = "/api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
BLOCK = 1 << 20
KEPT_BLOCKS = 8
TIMEOUT = 30.0
MAX_RESPONSE = 256 << 20


class ArtifactProxy(Protocol):
    """The artifact proxy's two read calls (`MlflowRegistry`, or a fake in tests)."""

    def list_artifacts(self, path: str) -> list[tuple[str, bool, int]]: ...

    def read_artifact(self, path: str, offset: int, length: int) -> tuple[bytes, bool]: ...


@dataclass(frozen=True)
class ModelVersion:
    name: str
    version: str
    status: str  # READY, PENDING_REGISTRATION, FAILED_REGISTRATION
    source: str
    run_id: str | None
    tags: dict[str, str] = field(default_factory=dict)


class ResponseTooLarge(LimitExceeded):
    """A response body longer than `TFCOMPAT_READ_MAX_RESPONSE_BYTES`. Permanent: the
    server sends the same body again."""


class MlflowRegistry:
    """One tracking server. `token`: a bearer token; `username`/`password`: basic auth
    (a `user:password@` in `base_url` is taken as that, and removed from it)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = TIMEOUT,
        username: str | None = None,
        password: str | None = None,
        max_response: int = MAX_RESPONSE,
    ) -> None:
        bare, user, secret = split_userinfo(base_url)
        self.base_url = bare.rstrip("/")
        self._token = token
        self._basic: str | None = None
        if user is not None or secret is not None:
            username, password = user or "", secret or ""
        if username is not None or password is not None:
            pair = f"{username or ''}:{password or ''}".encode()
            self._basic = base64.b64encode(pair).decode("ascii")
        self._timeout = timeout
        self._max_response = max_response
        self.bytes_read = 0

    def __repr__(self) -> str:
        return f"MlflowRegistry({self.base_url!r})"

    def _body(self, response: Any, shown: str) -> bytes:
        """The body, never more than `max_response` bytes read (nor held)."""
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > self._max_response:
            raise ResponseTooLarge(too_large(shown, int(declared), self._max_response))
        body: bytes = response.read(self._max_response + 1)
        if len(body) > self._max_response:
            raise ResponseTooLarge(too_large(shown, None, self._max_response))
        return body

    def _request(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        url = self.base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        elif self._basic:
            request.add_header("Authorization", f"Basic {self._basic}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        shown = f"{method} {self.base_url}{path}"
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return response.status, dict(response.headers), self._body(response, shown)
        except urllib.error.HTTPError as exc:
            raise http_error(shown, exc.code, exc.read(4096)) from None
        except (urllib.error.URLError, OSError) as exc:
            raise TransientError(redact_text(f"{shown}: {exc}")) from None

    def _json(
        self, method: str, path: str, query: dict[str, str] | None = None, **kw: Any
    ) -> dict[str, Any]:
        _, _, body = self._request(method, path, query, **kw)
        try:
            found = json.loads(body or b"{}")
        except ValueError:
            raise TransientError(f"{self.base_url}{path}: answer is not JSON") from None
        return found if isinstance(found, dict) else {}

    def model_version(self, name: str, version: str) -> ModelVersion:
        found = self._json("GET", API + "model-versions/get", {"name": name, "version": version})
        mv = found.get("model_version") or {}
        return ModelVersion(
            name=name,
            version=version,
            status=str(mv.get("status", "")),
            source=str(mv.get("source", "")),
            run_id=mv.get("run_id") or None,
            tags={t["key"]: t.get("value", "") for t in mv.get("tags") or [] if "key" in t},
        )

    def model_tags(self, name: str) -> dict[str, str]:
        found = self._json("GET", API + "registered-models/get", {"name": name})
        model = found.get("registered_model") or {}
        return {t["key"]: t.get("value", "") for t in model.get("tags") or [] if "key" in t}

    def download_uri(self, name: str, version: str) -> str:
        found = self._json(
            "GET", API + "model-versions/get-download-uri", {"name": name, "version": version}
        )
        uri = found.get("artifact_uri")
        if not isinstance(uri, str) or not uri:
            raise NotFound(f"mlflow {name} v{version}: no download URI")
        return uri

    def set_tag(self, name: str, version: str, key: str, value: str) -> None:
        body = {"name": name, "version": version, "key": key, "value": value}
        self._request("POST", API + "model-versions/set-tag", body=body)

    def delete_tag(self, name: str, version: str, key: str) -> None:
        body = {"name": name, "version": version, "key": key}
        self._request("DELETE", API + "model-versions/delete-tag", body=body)

    def versions(self, max_results: int = 1000) -> list[tuple[str, str]]:
        """(name, version) of every model version the server holds, READY or not."""
        return [(name, version) for name, version, _ in self.tagged_versions(max_results)]

    def tagged_versions(self, max_results: int = 1000) -> list[tuple[str, str, dict[str, str]]]:
        """(name, version, tags) of every model version, a page per request (the
        reconciler reads the fleet digest of each without one request per version)."""
        found: list[tuple[str, str, dict[str, str]]] = []
        token: str | None = None
        while True:
            query = {"max_results": str(max_results)}
            if token:
                query["page_token"] = token
            page = self._json("GET", API + "model-versions/search", query)
            for mv in page.get("model_versions") or []:
                tags = {str(t["key"]): str(t.get("value", "")) for t in mv.get("tags") or []}
                found.append((str(mv["name"]), str(mv["version"]), tags))
            token = page.get("next_page_token")
            if not token:
                return found

    def list_artifacts(self, path: str) -> list[tuple[str, bool, int]]:
        """(name, is_dir, size) under `path` of the artifact proxy."""
        found = self._json("GET", ARTIFACTS, {"path": path})
        return [
            (str(f["path"]), bool(f.get("is_dir")), int(f.get("file_size") or 0))
            for f in found.get("files") or []
            if "path" in f
        ]

    def read_artifact(self, path: str, offset: int, length: int) -> tuple[bytes, bool]:
        """`length` bytes at `offset` (fewer at the end), and whether the server honoured
        the range; a server that does not sends the whole file (returned as it is)."""
        quoted = urllib.parse.quote(path)
        end = offset + length - 1
        status, _, body = self._request(
            "GET", f"{ARTIFACTS}/{quoted}", headers={"Range": f"bytes={offset}-{end}"}
        )
        self.bytes_read += len(body)
        return body, status == 206


def too_large(shown: str, declared: int | None, cap: int) -> str:
    size = f"{declared} bytes" if declared is not None else "more"
    return (
        f"{shown}: the response is {size}, over TFCOMPAT_READ_MAX_RESPONSE_BYTES ({cap}); "
        "a server that ignores Range sends whole files"
    )


def http_error(shown: str, code: int, body: bytes) -> TfcompatError:
    try:
        error = json.loads(body).get("error_code", "")
    except (ValueError, AttributeError):
        error = ""
    if code == 404 or error == "RESOURCE_DOES_NOT_EXIST":
        return NotFound(f"{shown}: {code} {error}".strip())
    if code in (401, 403):
        return ConfigError(
            f"{shown}: {code}: check TFCOMPAT_MLFLOW_TRACKING_TOKEN, or the user and password "
            "(TFCOMPAT_MLFLOW_TRACKING_USERNAME / _PASSWORD, or user:password@ in the URI)"
        )
    if code == 429 or code >= 500:
        return TransientError(f"{shown}: {code} {error}".strip())
    return TfcompatError(f"{shown}: {code} {error}".strip())


class ProxiedArtifact:
    """One file behind the artifact proxy, read in `BLOCK`-aligned ranges (a few kept)."""

    def __init__(self, registry: ArtifactProxy, path: str, size: int) -> None:
        self._registry, self._path, self._size = registry, path, size
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._whole: bytes | None = None

    @property
    def name(self) -> str:
        return f"mlflow-artifacts:/{self._path}"

    @property
    def size(self) -> int:
        return self._size

    def _block(self, index: int) -> bytes:
        if self._whole is not None:
            return self._whole[index * BLOCK : (index + 1) * BLOCK]
        kept = self._blocks.get(index)
        if kept is None:
            data, ranged = self._registry.read_artifact(self._path, index * BLOCK, BLOCK)
            if not ranged:  # the server sent the whole file: keep it rather than ask again
                self._whole = data
                return self._block(index)
            kept = self._blocks[index] = data
            if len(self._blocks) > KEPT_BLOCKS:
                self._blocks.popitem(last=False)
        self._blocks.move_to_end(index)
        return kept

    def read_at(self, offset: int, length: int) -> bytes:
        if offset < 0 or length < 0 or offset + length > self._size:
            raise truncated(self.name, offset, length, self._size)
        out = bytearray()
        position = offset
        while len(out) < length:
            block = self._block(position // BLOCK)
            start = position % BLOCK
            piece = block[start : start + length - len(out)]
            if not piece:
                raise truncated(self.name, offset, length, self._size)
            out += piece
            position += len(piece)
        return bytes(out)


class ProxiedTree:
    """A model directory behind the artifact proxy, as a `Tree`: listed when asked."""

    def __init__(self, registry: ArtifactProxy, root: str) -> None:
        self._registry = registry
        self._root = root.strip("/")
        self._files: dict[str, int] | None = None

    @property
    def name(self) -> str:
        return f"mlflow-artifacts:/{self._root}"

    def _walk(self) -> dict[str, int]:
        if self._files is None:
            files: dict[str, int] = {}
            pending = [""]
            while pending:
                folder = pending.pop()
                listed = self._registry.list_artifacts(posixpath.join(self._root, folder))
                for name, is_dir, size in listed:
                    relative = posixpath.join(folder, name) if folder else name
                    if is_dir:
                        pending.append(relative)
                    else:
                        files[relative] = size
            self._files = files
        return self._files

    def names(self) -> list[str]:
        return sorted(self._walk())

    def open(self, name: str) -> Source:
        files = self._walk()
        if name not in files:
            raise NotFound(f"{self.name}: no artifact {name}")
        return ProxiedArtifact(self._registry, posixpath.join(self._root, name), files[name])


def proxied_path(uri: str) -> str | None:
    """The artifact proxy's path for an `mlflow-artifacts:` URI, else None."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "mlflow-artifacts":
        return None
    return urllib.parse.unquote(parsed.path).strip("/")


RegistryFactory = Callable[[], MlflowRegistry]


def mlflow_registry(settings: Settings) -> MlflowRegistry:
    """The client for TFCOMPAT_MLFLOW_TRACKING_URI; ConfigError when it is unset."""
    if not settings.mlflow_tracking_uri:
        raise ConfigError("TFCOMPAT_MLFLOW_TRACKING_URI is not set: MLflow versions cannot be read")
    token = settings.mlflow_tracking_token
    password = settings.mlflow_tracking_password
    return MlflowRegistry(
        settings.mlflow_tracking_uri,
        token.get_secret_value() if token else None,
        username=settings.mlflow_tracking_username,
        password=password.get_secret_value() if password else None,
        max_response=settings.read_max_response_bytes,
    )
