"""A GitHub delivery reduced to what the worker needs to check one commit."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from worker.errors import MalformedEvent


@dataclass(frozen=True)
class GithubJob:
    """What the worker needs to check one commit: JSON-safe, small."""

    delivery: str
    event: str
    action: str
    repository: str  # "owner/name"
    head_sha: str
    pull_numbers: tuple[int, ...] = ()
    installation_id: int | None = None

    @property
    def rerequested(self) -> bool:
        return self.action == "rerequested"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["pull_numbers"] = list(self.pull_numbers)
        return data

    @classmethod
    def from_json(cls, data: Any) -> GithubJob:
        if not isinstance(data, dict):
            raise MalformedEvent("a GitHub job is a JSON object")
        for name in ("delivery", "event", "action", "repository", "head_sha"):
            if not isinstance(data.get(name), str) or not data[name]:
                raise MalformedEvent(f"GitHub job without {name}")
        installation = data.get("installation_id")
        return cls(
            data["delivery"],
            data["event"],
            data["action"],
            data["repository"],
            data["head_sha"],
            tuple(int(n) for n in data.get("pull_numbers") or ()),
            int(installation) if installation is not None else None,
        )
