"""SageMaker Model Registry through boto3: describe a model package, read and write its tags.

Tags are written with `AddTags` (a key already there takes the new value) and
removed with `DeleteTags`, only for the keys `registries.tags` says are ours.
botocore errors stop here: throttling, 5xx and connection trouble are
`TransientError`, a missing package `NotFound`, access denied `ConfigError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker.errors import ConfigError, NotFound, TfcompatError, TransientError
from worker.settings import Settings

_TRANSIENT = {"ThrottlingException", "Throttling", "InternalFailure", "ServiceUnavailable"}


@dataclass(frozen=True)
class ModelPackage:
    arn: str
    group: str | None
    status: str  # Pending | InProgress | Completed | Failed | Deleting
    containers: tuple[tuple[str, str | None], ...]  # (image, ModelDataUrl)


def translate(exc: Exception, what: str) -> TfcompatError:
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        message = f"{what}: {code}: {error.get('Message', '')}"
        if code in _TRANSIENT or status >= 500 or status == 429:
            return TransientError(message)
        if code in ("ResourceNotFound", "ValidationException") and "not" in message.lower():
            return NotFound(message)
        if code in ("AccessDeniedException", "UnrecognizedClientException"):
            return ConfigError(message)
        return TfcompatError(message)
    if isinstance(exc, BotoCoreError):
        return TransientError(f"{what}: {exc}")
    raise exc


class SageMakerRegistry:
    def __init__(self, client: Any) -> None:
        self._client = client
        self.base_url = f"sagemaker:{client.meta.region_name}"

    def _call(self, what: str, operation: str, **kw: Any) -> Any:
        try:
            return getattr(self._client, operation)(**kw)
        except Exception as exc:
            raise translate(exc, what) from None

    def model_package(self, arn: str) -> ModelPackage:
        found = self._call(arn, "describe_model_package", ModelPackageName=arn)
        spec = found.get("InferenceSpecification") or {}
        containers = tuple(
            (str(c.get("Image", "")), c.get("ModelDataUrl")) for c in spec.get("Containers") or []
        )
        return ModelPackage(
            arn,
            found.get("ModelPackageGroupName"),
            str(found.get("ModelPackageStatus")),
            containers,
        )

    def tags(self, arn: str) -> dict[str, str]:
        found: dict[str, str] = {}
        token: str | None = None
        while True:
            page = self._call(
                arn, "list_tags", ResourceArn=arn, **({"NextToken": token} if token else {})
            )
            found.update({t["Key"]: t["Value"] for t in page.get("Tags") or []})
            token = page.get("NextToken")
            if not token:
                return found

    def add_tags(self, arn: str, tags: dict[str, str]) -> None:
        if tags:
            pairs = [{"Key": k, "Value": v} for k, v in tags.items()]
            self._call(arn, "add_tags", ResourceArn=arn, Tags=pairs)

    def delete_tags(self, arn: str, keys: list[str]) -> None:
        if keys:
            self._call(arn, "delete_tags", ResourceArn=arn, TagKeys=keys)

    def package_arns(self) -> list[str]:
        """Every versioned model package of every model package group (a fleet change
        re-checks them all)."""
        arns: list[str] = []
        for group in self._pages("model package groups", "list_model_package_groups", {}):
            for found in group.get("ModelPackageGroupSummaryList") or []:
                name = found["ModelPackageGroupName"]
                query = {"ModelPackageGroupName": name, "ModelPackageType": "Versioned"}
                for page in self._pages(name, "list_model_packages", query):
                    arns.extend(
                        p["ModelPackageArn"] for p in page.get("ModelPackageSummaryList") or []
                    )
        return arns

    def _pages(self, what: str, operation: str, query: dict[str, Any]) -> list[dict[str, Any]]:
        pages: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = self._call(what, operation, **query, **({"NextToken": token} if token else {}))
            pages.append(page)
            token = page.get("NextToken")
            if not token:
                return pages


def sagemaker_registry(settings: Settings) -> SageMakerRegistry:
    from worker.sinks.aws import aws_client

    return SageMakerRegistry(aws_client("sagemaker", settings))
