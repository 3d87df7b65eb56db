"""A local stand-in for GitHub's REST API, checking every request against GitHub's
published OpenAPI description (`tests/fixtures/github/rest-api-subset.json`, from
`@octokit/openapi`): the operation must exist, its path and query parameters must
be declared and valid, its JSON body must match the schema. A request that does
not is answered 422 and kept in `violations`.

It holds one repository state (files at the head commit, a pull request's
changed files, check runs) and issues installation tokens for a GitHub App
whose public key it knows: the JWT must verify (RS256, `iss` = the App id,
at most 10 minutes of validity), and repository calls must carry a token it
issued (or the configured personal token).
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
from openapi_schema_validator import OAS30Validator

from tests.standins.http import RecordingServer, Reply, Request

SUBSET = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "rest-api-subset.json"
CONTENTS_INLINE_LIMIT = 1 << 20  # over 1 MB the contents API sends no content


def _route_regex(template: str) -> re.Pattern[str]:
    pattern = re.sub(
        r"\\\{(\w+)\\\}",
        lambda m: f"(?P<{m.group(1)}>.+)" if m.group(1) == "path" else f"(?P<{m.group(1)}>[^/]+)",
        re.escape(template),
    )
    return re.compile(pattern + r"\Z")


@dataclass
class Operation:
    method: str
    template: str
    regex: re.Pattern[str]
    spec: dict[str, Any]


def _coerce(value: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer" and re.fullmatch(r"-?\d+", value):
        return int(value)
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


@dataclass
class GitHubState:
    files: dict[str, bytes] = field(default_factory=dict)  # path -> content at head
    pull_files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)


class GitHubStandIn(RecordingServer):
    def __init__(
        self,
        app_id: str = "4242",
        public_key: Any = None,
        personal_token: str | None = None,
        token_lifetime: timedelta = timedelta(hours=1),
    ) -> None:
        subset = json.loads(SUBSET.read_text())
        self.operations = [
            Operation(method.upper(), template, _route_regex(template), spec)
            for template, methods in subset["paths"].items()
            for method, spec in methods.items()
        ]
        self.app_id, self.public_key = app_id, public_key
        self.personal_token = personal_token
        self.token_lifetime = token_lifetime
        self.tokens: dict[str, int] = {}  # installation token -> installation id
        self.state = GitHubState()
        self.violations: list[str] = []
        self.writes: list[tuple[str, str, dict[str, Any]]] = []  # method, path, body
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        super().__init__(self._answer)

    # --- the contract ---------------------------------------------------------------------

    def _operation(self, request: Request) -> tuple[Operation, dict[str, str]] | None:
        for operation in self.operations:
            if operation.method == request.method:
                match = operation.regex.match(request.path)
                if match:
                    return operation, match.groupdict()
        return None

    def _contract_errors(
        self, operation: Operation, params: dict[str, str], request: Request
    ) -> list[str]:
        errors = []
        declared = {p["name"]: p for p in operation.spec["parameters"]}
        for name, value in params.items():
            schema = declared[name].get("schema", {})
            errors += [
                f"path {name}: {e.message}"
                for e in OAS30Validator(schema).iter_errors(_coerce(value, schema))
            ]
        for name, values in request.query.items():
            parameter = declared.get(name)
            if parameter is None or parameter["in"] != "query":
                errors.append(f"query parameter {name} is not declared")
                continue
            schema = parameter.get("schema", {})
            for value in values:
                errors += [
                    f"query {name}: {e.message}"
                    for e in OAS30Validator(schema).iter_errors(_coerce(value, schema))
                ]
        for parameter in declared.values():
            if (
                parameter.get("required")
                and parameter["in"] == "query"
                and parameter["name"] not in request.query
            ):
                errors.append(f"query parameter {parameter['name']} is required")
        body_spec = operation.spec.get("requestBody")
        if body_spec is not None:
            try:
                body = request.json()
            except ValueError:
                return [*errors, "body is not JSON"]
            if body is None and body_spec.get("required"):
                errors.append("a JSON body is required")
            elif body is not None:
                validator = OAS30Validator(body_spec["schema"])
                errors += [
                    f"body {list(e.absolute_path)}: {e.message}"
                    for e in validator.iter_errors(body)
                ]
        elif request.body:
            errors.append("this operation takes no body")
        return errors

    # --- answers ----------------------------------------------------------------------------

    def _answer(self, request: Request) -> Reply:
        found = self._operation(request)
        if found is None:
            self.violations.append(f"{request.method} {request.path}: no such operation")
            return Reply(404, {"message": "Not Found"})
        operation, params = found
        errors = self._contract_errors(operation, params, request)
        if errors:
            self.violations.append(f"{request.method} {operation.template}: {errors}")
            return Reply(422, {"message": "Validation Failed", "errors": errors})
        if request.method in ("POST", "PATCH"):
            with self._lock:
                self.writes.append((request.method, request.path, request.json() or {}))
        if operation.template.startswith("/app/"):
            return self._access_token(request, params)
        if not self._authorized(request):
            return Reply(401, {"message": "Bad credentials"})
        handler = getattr(
            self, "_" + operation.spec["operationId"].replace("/", "_").replace("-", "_")
        )
        reply: Reply = handler(request, params)
        return reply

    def _authorized(self, request: Request) -> bool:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() not in ("token", "bearer"):
            return False
        return token in self.tokens or (
            self.personal_token is not None and token == self.personal_token
        )

    def _access_token(self, request: Request, params: dict[str, str]) -> Reply:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        try:
            claims = jwt.decode(token, self.public_key, algorithms=["RS256"])
        except jwt.PyJWTError as exc:
            self.violations.append(f"bad App JWT: {exc}")
            return Reply(401, {"message": "A JSON web token could not be decoded"})
        if (
            scheme != "Bearer"
            or str(claims.get("iss")) != self.app_id
            or claims["exp"] - claims["iat"] > 660
        ):
            self.violations.append(f"App JWT claims not accepted: {claims}")
            return Reply(
                401, {"message": "'Expiration time' claim ('exp') is too far in the future"}
            )
        issued = f"ghs_{next(self._ids):036d}"
        self.tokens[issued] = int(params["installation_id"])
        expires = datetime.now(UTC) + self.token_lifetime
        return Reply(201, {"token": issued, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")})

    def _base(self, params: dict[str, str]) -> str:
        return f"{self.url}/repos/{params['owner']}/{params['repo']}"

    @staticmethod
    def _sha(data: bytes) -> str:
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def _pulls_list_files(self, request: Request, params: dict[str, str]) -> Reply:
        files = self.state.pull_files.get(int(params["pull_number"]), [])
        per_page = int(request.query.get("per_page", ["30"])[0])
        page = int(request.query.get("page", ["1"])[0])
        chunk = files[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(files):
            url = f"{self._base(params)}/pulls/{params['pull_number']}/files"
            url += f"?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{url}>; rel="next"'
        body = [
            {
                "sha": self._sha(self.state.files.get(f["filename"], b"")),
                "filename": f["filename"],
                "status": f["status"],
                "additions": 1,
                "deletions": 0,
                "changes": 1,
                "blob_url": "",
                "raw_url": "",
                "contents_url": "",
            }
            for f in chunk
        ]
        return Reply(200, body, headers)

    def _repos_get_content(self, request: Request, params: dict[str, str]) -> Reply:
        path = params["path"]
        if path not in self.state.files:
            return Reply(404, {"message": "Not Found"})
        data = self.state.files[path]
        inline = len(data) <= CONTENTS_INLINE_LIMIT
        return Reply(
            200,
            {
                "type": "file",
                "encoding": "base64" if inline else "none",
                "size": len(data),
                "name": path.rsplit("/", 1)[-1],
                "path": path,
                "content": base64.b64encode(data).decode() if inline else "",
                "sha": self._sha(data),
                "url": f"{self._base(params)}/contents/{path}",
                "git_url": None,
                "html_url": None,
                "download_url": None,
            },
        )

    def _git_get_blob(self, request: Request, params: dict[str, str]) -> Reply:
        for data in self.state.files.values():
            if self._sha(data) == params["file_sha"]:
                return Reply(
                    200,
                    {
                        "content": base64.b64encode(data).decode(),
                        "encoding": "base64",
                        "sha": params["file_sha"],
                        "size": len(data),
                        "url": f"{self._base(params)}/git/blobs/{params['file_sha']}",
                        "node_id": "B",
                    },
                )
        return Reply(404, {"message": "Not Found"})

    def _git_get_tree(self, request: Request, params: dict[str, str]) -> Reply:
        tree = [
            {"path": p, "mode": "100644", "type": "blob", "sha": self._sha(d), "size": len(d)}
            for p, d in sorted(self.state.files.items())
        ]
        return Reply(200, {"sha": params["tree_sha"], "url": "", "tree": tree, "truncated": False})

    def _run_json(self, params: dict[str, str], run_id: int) -> dict[str, Any]:
        run = self.state.check_runs[run_id]
        return {**run, "id": run_id, "url": f"{self._base(params)}/check-runs/{run_id}"}

    def _checks_list_for_ref(self, request: Request, params: dict[str, str]) -> Reply:
        name = request.query.get("check_name", [None])[0]
        runs = [
            self._run_json(params, i)
            for i in sorted(self.state.check_runs, reverse=True)
            if self.state.check_runs[i]["head_sha"] == params["ref"]
            and (name is None or self.state.check_runs[i]["name"] == name)
        ]
        return Reply(200, {"total_count": len(runs), "check_runs": runs})

    def _checks_create(self, request: Request, params: dict[str, str]) -> Reply:
        body = request.json()
        with self._lock:
            run_id = next(self._ids)
            self.state.check_runs[run_id] = {
                "name": body["name"],
                "head_sha": body["head_sha"],
                "status": body.get("status", "queued"),
                "conclusion": body.get("conclusion"),
                "statuses": [body.get("status", "queued")],
                "annotations": list((body.get("output") or {}).get("annotations", [])),
                "output": body.get("output"),
            }
        return Reply(201, self._run_json(params, run_id))

    def _checks_update(self, request: Request, params: dict[str, str]) -> Reply:
        run_id = int(params["check_run_id"])
        if run_id not in self.state.check_runs:
            return Reply(404, {"message": "Not Found"})
        body = request.json()
        with self._lock:
            run = self.state.check_runs[run_id]
            if "status" in body:
                run["status"] = body["status"]
                run["statuses"].append(body["status"])
            if body.get("conclusion"):
                run["conclusion"] = body["conclusion"]
                run["status"] = "completed"
            if body.get("output"):
                run["output"] = body["output"]
                run["annotations"] += body["output"].get("annotations", [])
        return Reply(200, self._run_json(params, run_id))
