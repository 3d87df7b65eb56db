"""A model-registry event reduced to what the worker needs: which version to check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.errors import MalformedEvent

REGISTRIES = ("mlflow", "sagemaker")


@dataclass(frozen=True)
class RegistryJob:
    """One registered model version to check: JSON-safe, small.

    `name` is the registered model (MLflow) or model package group (SageMaker);
    `version` the version number (MLflow) or the model package ARN (SageMaker).
    `delivery` names the event that asked for it (a webhook delivery id, an
    EventBridge event id, or `fleet:<digest>` for a fleet re-check), for logs.
    """

    registry: str
    name: str
    version: str
    delivery: str

    def to_json(self) -> dict[str, Any]:
        return {
            "registry": self.registry,
            "name": self.name,
            "version": self.version,
            "delivery": self.delivery,
        }

    @classmethod
    def from_json(cls, data: Any) -> RegistryJob:
        if not isinstance(data, dict):
            raise MalformedEvent("a registry job is a JSON object")
        for field in ("registry", "name", "version", "delivery"):
            if not isinstance(data.get(field), str) or not data[field]:
                raise MalformedEvent(f"registry job without {field}")
        if data["registry"] not in REGISTRIES:
            raise MalformedEvent(f"registry job for unknown registry {data['registry']!r}")
        return cls(data["registry"], data["name"], data["version"], data["delivery"])
