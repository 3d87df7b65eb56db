"""Every AWS client (S3, SQS, SageMaker) built one way: bounded by the same botocore
`Config` (connect and read timeouts, retry mode and attempts, from the settings), each
service at its own endpoint (`TFCOMPAT_S3_ENDPOINT_URL`, `TFCOMPAT_SQS_ENDPOINT_URL`;
SageMaker always AWS's). An unbounded call would hold a worker's slot, or the SQS
bridge's only loop, for as long as a peer keeps the socket open.
"""

from __future__ import annotations

from typing import Any, Literal

from worker.settings import Settings

Service = Literal["s3", "sqs", "sagemaker"]


def aws_config(settings: Settings) -> Any:
    """The botocore Config every client of ours uses."""
    from botocore.config import Config

    return Config(
        connect_timeout=settings.aws_connect_timeout,
        read_timeout=settings.aws_read_timeout,
        retries={"total_max_attempts": settings.aws_max_attempts, "mode": settings.aws_retry_mode},
    )


def endpoint_of(service: Service, settings: Settings) -> str | None:
    if service == "s3":
        return settings.s3_endpoint_url
    if service == "sqs":
        return settings.sqs_endpoint_url
    return None


def aws_client(service: Service, settings: Settings) -> Any:
    """A new boto3 client for `service`, at its own endpoint, under `aws_config`."""
    import boto3

    return boto3.client(
        service,
        endpoint_url=endpoint_of(service, settings),
        region_name=settings.aws_region,
        config=aws_config(settings),
    )
