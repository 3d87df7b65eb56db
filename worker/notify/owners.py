"""Who is told about a model: owners and the routes to them, read from `owners.yaml`.

```yaml
owners:
  - name: ranking                    # unique; fleet.yaml consumers name owners too
    team: "Ranking"                  # shown in messages
    slack:                           # where to post; default: [webhook: TFCOMPAT_SLACK_WEBHOOK_URL]
      - webhook: TFCOMPAT_SLACK_WEBHOOK_RANKING   # NAMES the variable holding the URL
      - channel: "#ranking-models"   # chat.postMessage with TFCOMPAT_SLACK_BOT_TOKEN ...
        token: TFCOMPAT_SLACK_BOT_TOKEN           # ... or the bot token this variable holds
    github: acme/ranking-models      # optional: the repository its models live in
routes:                              # first match wins; every condition given must hold
  - locations: ["s3://models/ranking/**"]   # `**` any depth, `*` within one path segment
    owner: ranking
    notify: [incompatible, at-risk]  # statuses that notify (this is the default)
  - locations: ["mlflow://ranking-*/*"]     # MLflow registered models: mlflow://NAME/VERSION
    owner: ranking
  - tags: {team: search}             # object (or model version) tags (values are globs) ...
    metadata: {team: search}         # ... and user metadata (x-amz-meta-*)
    owner: search
  - owner_tag: owner                 # the object's `owner` tag (or metadata) names the owner
default:                             # when no route matches
  owner: platform
  notify: [incompatible]
```

Secrets never live in this file: a destination names the `TFCOMPAT_*` setting
or environment variable that holds its webhook URL or bot token, and a value
that looks like a URL or a token is refused. Without a `default`, or without
the file, everything goes to an owner named `default` posting to
`TFCOMPAT_SLACK_WEBHOOK_URL`. Pure: reading the file is the only I/O, and
every error names the file and line of the entry at fault.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.errors import ConfigError
from worker.fleet.fleet import load_yaml
from worker.model.verdict import Status

_LINE = "__line__"  # set by fleet.load_yaml on every mapping
STATUSES = tuple(str(s) for s in Status)
DEFAULT_NOTIFY = frozenset({"incompatible", "at-risk"})
DEFAULT_WEBHOOK = "TFCOMPAT_SLACK_WEBHOOK_URL"
DEFAULT_BOT_TOKEN = "TFCOMPAT_SLACK_BOT_TOKEN"
DEFAULT_OWNER = "default"
_SECRET_NAME = re.compile(r"^TFCOMPAT_[A-Z0-9_]+$")


@dataclass(frozen=True)
class SlackDestination:
    """An incoming webhook, or a channel posted to with a bot token; both by secret name."""

    webhook: str | None = None
    channel: str | None = None
    token: str = DEFAULT_BOT_TOKEN

    @property
    def key(self) -> str:
        """A stable name for the destination that holds no secret (dedupe keys, logs)."""
        return f"webhook:{self.webhook}" if self.webhook else f"channel:{self.channel}"


@dataclass(frozen=True)
class Owner:
    name: str
    team: str
    slack: tuple[SlackDestination, ...] = (SlackDestination(webhook=DEFAULT_WEBHOOK),)
    github: str | None = None


@dataclass(frozen=True)
class Route:
    where: str  # file:line, or "default"
    owner: str | None = None
    owner_tag: str | None = None
    locations: tuple[str, ...] = ()
    tags: Mapping[str, str] = field(default_factory=dict)
    metadata: Mapping[str, str] = field(default_factory=dict)
    notify: frozenset[str] = DEFAULT_NOTIFY


@dataclass(frozen=True)
class Routing:
    """Where one model's verdict goes, and whether its status is worth a message."""

    owner: Owner
    notify: frozenset[str]
    route: str
    note: str | None = None  # e.g. an owner tag naming an unknown owner

    def wants(self, status: str) -> bool:
        return status in self.notify


def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**` matches across '/', `*` and `?` stay within one path segment."""
    parts = []
    for token in re.split(r"(\*\*|\*|\?)", pattern):
        if token == "**":
            parts.append(".*")
        elif token == "*":
            parts.append("[^/]*")
        elif token == "?":
            parts.append("[^/]")
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts) + r"\Z")


def _labels_match(wanted: Mapping[str, str], have: Mapping[str, str]) -> bool:
    return all(k in have and fnmatch.fnmatchcase(have[k], v) for k, v in wanted.items())


LOCATION_SCHEMES = ("s3://", "mlflow://", "sagemaker://")
"""Uploaded objects, versions of MLflow registered models (`mlflow://name/version`) and
SageMaker model packages (`sagemaker://group/package ARN`)."""


@dataclass(frozen=True)
class Owners:
    owners: Mapping[str, Owner]
    routes: tuple[Route, ...]
    default: Route
    source: str = ""

    @property
    def uses_tags(self) -> bool:
        return any(r.tags or r.owner_tag for r in self.routes)

    @property
    def uses_metadata(self) -> bool:
        return any(r.metadata or r.owner_tag for r in self.routes)

    def route(
        self,
        bucket: str,
        key: str,
        tags: Mapping[str, str] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Routing:
        """The first route whose conditions all hold, else the default."""
        return self.route_url(f"s3://{bucket}/{key}", tags, metadata)

    def route_url(
        self,
        url: str,
        tags: Mapping[str, str] | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Routing:
        """`route` for a model named by URL (`s3://bucket/key`, `mlflow://name/version`)."""
        tags = tags or {}
        meta = {k.lower(): v for k, v in (metadata or {}).items()}
        note = None
        for route in self.routes:
            if route.locations and not any(glob_regex(g).match(url) for g in route.locations):
                continue
            if not _labels_match(route.tags, tags) or not _labels_match(route.metadata, meta):
                continue
            name = route.owner
            if route.owner_tag:
                name = tags.get(route.owner_tag) or meta.get(route.owner_tag.lower())
                if not name:
                    continue
                if name not in self.owners:
                    note = f"{route.where}: {route.owner_tag}={name!r} names no owner"
                    continue
            assert name is not None
            return Routing(self.owners[name], route.notify, route.where, note)
        assert self.default.owner is not None
        return Routing(self.owners[self.default.owner], self.default.notify, "default", note)

    def for_repository(self, full_name: str) -> Owner | None:
        wanted = full_name.lower()
        return next((o for o in self.owners.values() if (o.github or "").lower() == wanted), None)


def default_owners(source: str = "") -> Owners:
    """No owners file: everything to TFCOMPAT_SLACK_WEBHOOK_URL, on the default policy."""
    owner = Owner(DEFAULT_OWNER, DEFAULT_OWNER)
    return Owners({owner.name: owner}, (), Route("default", owner=owner.name), source)


def _where(path: Path, entry: Mapping[str, Any]) -> str:
    return f"{path}:{entry.get(_LINE, '?')}"


def _secret_name(value: Any, what: str, where: str) -> str:
    text = str(value or "")
    if _SECRET_NAME.match(text):
        return text
    if "://" in text or text.startswith(("xox", "ghp_", "github_pat_")):
        raise ConfigError(
            f"{where}: {what} looks like a secret; put it in the environment and name "
            "the variable here (e.g. TFCOMPAT_SLACK_WEBHOOK_TEAM)"
        )
    raise ConfigError(f"{where}: {what} {text!r} is not a TFCOMPAT_* variable name")


def _destination(path: Path, entry: Any, owner: str) -> SlackDestination:
    if not isinstance(entry, dict):
        raise ConfigError(f"{path}: owner {owner}: each slack entry is a mapping")
    where = _where(path, entry)
    if bool(entry.get("webhook")) == bool(entry.get("channel")):
        raise ConfigError(f"{where}: owner {owner}: a slack entry has webhook or channel")
    if entry.get("webhook"):
        return SlackDestination(webhook=_secret_name(entry["webhook"], "webhook", where))
    return SlackDestination(
        channel=str(entry["channel"]),
        token=_secret_name(entry.get("token") or DEFAULT_BOT_TOKEN, "token", where),
    )


def _owner(path: Path, entry: Any) -> Owner:
    if not isinstance(entry, dict):
        raise ConfigError(f"{path}: each owner is a mapping (got {entry!r})")
    where = _where(path, entry)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: owner needs a name")
    slack = entry.get("slack")
    if slack is not None and not isinstance(slack, list):
        raise ConfigError(f"{where}: owner {name}: slack is a list")
    github = entry.get("github")
    if github is not None and not re.fullmatch(r"[\w.-]+/[\w.-]+", str(github)):
        raise ConfigError(f"{where}: owner {name}: github is OWNER/REPOSITORY, got {github!r}")
    destinations = tuple(_destination(path, d, name) for d in slack or [])
    return Owner(
        name,
        str(entry.get("team") or name),
        destinations or Owner(name, name).slack,
        str(github) if github else None,
    )


def _notify(value: Any, where: str) -> frozenset[str]:
    if value is None:
        return DEFAULT_NOTIFY
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ConfigError(f"{where}: notify is a list of statuses")
    unknown = sorted(set(values) - set(STATUSES))
    if unknown:
        raise ConfigError(
            f"{where}: unknown status {', '.join(unknown)} (one of: {', '.join(STATUSES)})"
        )
    return frozenset(values)


def _labels(value: Any, what: str, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {what} is a mapping of key: value glob")
    return {str(k): str(v) for k, v in value.items() if k != _LINE}


def _route(path: Path, entry: Any, owners: Mapping[str, Owner], default: bool = False) -> Route:
    if not isinstance(entry, dict):
        raise ConfigError(f"{path}: each route is a mapping (got {entry!r})")
    where = _where(path, entry)
    owner = entry.get("owner")
    owner_tag = entry.get("owner_tag")
    if default and owner_tag:
        raise ConfigError(f"{where}: the default route names an owner, not owner_tag")
    if bool(owner) == bool(owner_tag):
        raise ConfigError(f"{where}: a route has owner or owner_tag")
    if owner and str(owner) not in owners:
        known = ", ".join(sorted(owners)) or "none"
        raise ConfigError(f"{where}: unknown owner {owner!r} (owners: {known})")
    locations = entry.get("locations") or []
    if isinstance(locations, str):
        locations = [locations]
    for glob in locations:
        if not isinstance(glob, str) or not glob.startswith(LOCATION_SCHEMES):
            raise ConfigError(
                f"{where}: locations are s3://bucket/prefix/**, mlflow://name/* or "
                "sagemaker://group/** globs, "
                f"got {glob!r}"
            )
    route = Route(
        where,
        owner=str(owner) if owner else None,
        owner_tag=str(owner_tag) if owner_tag else None,
        locations=tuple(locations),
        tags=_labels(entry.get("tags"), "tags", where),
        metadata={
            k.lower(): v for k, v in _labels(entry.get("metadata"), "metadata", where).items()
        },
        notify=_notify(entry.get("notify"), where),
    )
    if default and (route.locations or route.tags or route.metadata):
        raise ConfigError(f"{where}: the default route has no conditions")
    return route


def load_owners(path: str | Path) -> Owners:
    """The owners file; ConfigError names the file and line at fault."""
    p = Path(path)
    data = load_yaml(p)
    entries = data.get("owners") or []
    if not isinstance(entries, list):
        raise ConfigError(f"{p}:{data.get(_LINE, 1)}: owners is a list")
    owners: dict[str, Owner] = {}
    for entry in entries:
        owner = _owner(p, entry)
        if owner.name in owners:
            raise ConfigError(f"{_where(p, entry)}: duplicate owner {owner.name}")
        owners[owner.name] = owner
    routes = data.get("routes") or []
    if not isinstance(routes, list):
        raise ConfigError(f"{p}:{data.get(_LINE, 1)}: routes is a list")
    parsed = tuple(_route(p, entry, owners) for entry in routes)
    default_entry = data.get("default")
    if default_entry is None:
        fallback = default_owners()
        owners.setdefault(DEFAULT_OWNER, fallback.owners[DEFAULT_OWNER])
        default = Route("default", owner=DEFAULT_OWNER)
    else:
        default = _route(p, default_entry, owners, default=True)
    return Owners(owners, parsed, default, str(p))
