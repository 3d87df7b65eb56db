"""One Settings object, built once by each entry point and passed down.

Read from `TFCOMPAT_*` environment variables, or from a dotenv-style settings
file named by `TFCOMPAT_SETTINGS_FILE` (environment variables win). Nothing in
the package reads the environment anywhere else, and nothing at import time.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_MODEL_PATTERNS = (
    "*saved_model.pb",
    "*saved_model.pbtxt",
    "*variables/variables.index",
    "*.pb",
    "*.pbtxt",
    "*.meta",
    "*.index",
    "*.tflite",
    "*.tar.gz",
    "*.tgz",
    "*.tar",
    "*.zip",
    "*.keras",
    "*.h5",
    "*.hdf5",
)


DEFAULT_RECEIVER_ROUTES = ("s3", "eventbridge", "sns", "github")
RECEIVER_ROUTES = (*DEFAULT_RECEIVER_ROUTES, "mlflow")
"""The event routes `tfcompat serve` can serve: /events/s3, /events/eventbridge,
/events/sns, /webhooks/github, /webhooks/mlflow (served only when named: it needs an
MLflow server to talk to)."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TFCOMPAT_", extra="ignore")

    broker_url: str = Field(
        "redis://127.0.0.1:6379/0",
        description='Celery broker: `redis://` (run it with AOF, see "What is kept"), '
        "`amqp://` (RabbitMQ: durable queue, publisher confirms) or `sqs://`",
    )
    broker_transport_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Kombu transport options merged over tfcompat's own (JSON object), e.g. "
        '`{"is_secure": false}` for a local SQS endpoint, `{"predefined_queues": ...}`',
    )
    redis_url: str | None = Field(
        None,
        description="Redis for notification and replay claims and the model index; the "
        "broker's own when the broker is Redis, required otherwise",
    )
    result_backend: str | None = Field(None, description="Celery result backend; none by default")
    s3_endpoint_url: str | None = Field(None, description="S3-compatible endpoint; AWS if unset")
    aws_region: str = Field("us-east-1", description="Region for S3/SQS clients")
    fleet: str = Field("config/fleet.yaml", description="Path of the fleet YAML file")
    owners: str = Field("config/owners.yaml", description="Path of the owners YAML file")
    report_bucket: str | None = Field(
        None, description="Bucket for JSON reports; the model's own bucket if unset"
    )
    report_prefix: str = Field("tfcompat-reports/", description="Key prefix of JSON reports")
    fix_prefix: str | None = Field(
        None,
        description="Key prefix for fixed copies: when set, a fleet consumer that cannot "
        "serve a new model gets a copy under <prefix>/<key>/for-<consumer>/ when a safe "
        "rewrite exists (tfcompat fix); unset: off",
    )
    model_patterns: list[str] = Field(
        default_factory=lambda: list(DEFAULT_MODEL_PATTERNS),
        description="Key globs that start a check (JSON list in the environment)",
    )
    visibility_timeout: int = Field(
        45,
        description="Redis and SQS brokers: seconds before a task that was taken and not "
        "acknowledged is given to another worker. On Redis a running worker renews this for "
        "every task it holds, so only a lost worker's tasks come back (after this plus up to "
        "10 s); on SQS nothing renews it: set it above `TFCOMPAT_TASK_TIME_LIMIT`",
    )
    task_time_limit: int = Field(
        1200,
        description="Seconds a check may run before its pool process is killed and the task "
        "is recorded as failed (never redelivered); 0: no limit. With the longest retry "
        "backoff (300 s) it stays below RabbitMQ's default consumer_timeout (30 min)",
    )
    publish_timeout: float = Field(
        0.8,
        description="Seconds the receiver and the bridge wait for the broker to confirm a "
        "task before answering 503 (the sender retries)",
    )
    sqs_queue_url: str | None = Field(None, description="Queue the SQS bridge polls")
    events_token: SecretStr | None = Field(
        None, description="Bearer token required on /events/* (MinIO webhook auth_token)"
    )
    sns_topic_arns: list[str] = Field(
        default_factory=list,
        description="SNS topics accepted (JSON list); empty: any, which only "
        "`TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS` permits",
    )
    receiver_routes: list[str] = Field(
        default_factory=lambda: list(DEFAULT_RECEIVER_ROUTES),
        description="Event routes `tfcompat serve` serves (JSON list of `s3`, `eventbridge`, "
        "`sns`, `github`, `mlflow`; `mlflow` only when named); each must authenticate its "
        "sender: `s3` and `eventbridge` need `TFCOMPAT_EVENTS_TOKEN`, `sns` "
        "`TFCOMPAT_SNS_TOPIC_ARNS`, `github` `TFCOMPAT_GITHUB_WEBHOOK_SECRET`, `mlflow` "
        "`TFCOMPAT_MLFLOW_WEBHOOK_SECRET`, or the receiver does not start",
    )
    buckets: list[str] = Field(
        default_factory=list,
        description="Buckets and key prefixes events may name (JSON list of globs: `models-*`, "
        "`ml-data/prod/*`); an event naming anything else is refused (403) and the receiver, "
        "the SQS bridge and the worker's task never read it. Required by the receiver and "
        "the bridge unless `TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS` is set",
    )
    allow_unauthenticated_events: bool = Field(
        False,
        description="Start the receiver and the SQS bridge even when a route accepts "
        "unauthenticated events or `TFCOMPAT_BUCKETS` is empty, with a warning at every "
        "start; for local experiments only",
    )
    sns_cert_url_pattern: str = Field(
        r"^https://sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[^?#]*\.pem$",
        description="Regex a SigningCertURL must match",
    )
    sns_subscribe_url_pattern: str = Field(
        r"^https://sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/",
        description="Regex a SubscribeURL must match before it is confirmed",
    )
    max_event_bytes: int = Field(1 << 20, description="Largest event body accepted (bytes)")
    index_buckets: list[str] = Field(
        default_factory=list,
        description="Buckets whose reports form the model index when TFCOMPAT_REPORT_BUCKET "
        "is unset (JSON list); the index is rebuilt from them after a Redis flush",
    )
    github_api_url: str = Field("https://api.github.com", description="GitHub REST API root")
    github_webhook_secret: SecretStr | None = Field(None, description="Webhook HMAC secret")
    github_app_id: str | None = Field(None, description="GitHub App id")
    github_app_private_key: SecretStr | None = Field(None, description="GitHub App key (PEM)")
    github_token: SecretStr | None = Field(None, description="Token mode instead of an App")
    slack_webhook_url: SecretStr | None = Field(
        None, description="Incoming webhook of the default owners route"
    )
    slack_bot_token: SecretStr | None = Field(None, description="Bot token for chat.postMessage")
    slack_api_url: str = Field("https://slack.com/api/", description="Slack Web API root")
    log_level: str = Field("INFO", description="Log level")
    log_format: Literal["json", "console"] = Field("json", description="'json' or 'console'")
    notify_dedupe_ttl: int = Field(
        7 * 24 * 3600,
        description="Seconds a Slack message is remembered: one per artifact version and verdict",
    )
    notify_lease: int = Field(
        30,
        description="Seconds a worker's claim to be sending a Slack message lasts unless "
        "renewed; a redelivered task waits this long for a killed worker's claim to lapse",
    )
    github_delivery_ttl: int = Field(
        14 * 24 * 3600, description="Seconds a GitHub X-GitHub-Delivery id is remembered (replays)"
    )
    github_fleet_path: str = Field(
        "config/fleet.yaml",
        description="The fleet file's path inside repositories (checked in PRs)",
    )
    ui_enabled: bool = Field(
        False,
        description="Serve the fleet page (/ui) from the receiver; it refuses to start "
        "unless `TFCOMPAT_UI_TOKEN` or `TFCOMPAT_UI_TRUSTED_HEADER` is set too",
    )
    ui_token: SecretStr | None = Field(
        None,
        description="Token the fleet page asks for (`Authorization: Bearer`, or typed once "
        "into its sign-in form; the browser then keeps a cookie derived from it)",
    )
    ui_trusted_header: str | None = Field(
        None,
        description="Header an authenticating proxy in front of the receiver sets to the "
        "signed-in user (e.g. `X-Forwarded-User`); a request with it non-empty may read "
        "the fleet page. Set it only when every request passes through that proxy",
    )
    mlflow_tracking_uri: str | None = Field(
        None,
        description="MLflow tracking server whose model versions are checked and tagged "
        "(`http://host:5000`); unset: MLflow webhooks are refused",
    )
    mlflow_tracking_token: SecretStr | None = Field(
        None, description="Bearer token for the MLflow tracking server, when it asks for one"
    )
    mlflow_webhook_secret: SecretStr | None = Field(
        None,
        description="HMAC secret of the MLflow webhook (the `secret` given to "
        "`create_webhook`): POST /webhooks/mlflow refuses every delivery without it",
    )
    mlflow_webhook_tolerance: int = Field(
        300,
        description="Seconds an MLflow delivery's X-MLflow-Timestamp may differ from our "
        "clock; older deliveries are refused as replays",
    )
    mlflow_delivery_ttl: int = Field(
        24 * 3600,
        description="Seconds an X-MLflow-Delivery-Id is remembered (replays inside the "
        "timestamp window); kept above TFCOMPAT_MLFLOW_WEBHOOK_TOLERANCE",
    )
    metrics_port: int = Field(
        0,
        description="Port of the Prometheus exporter that `tfcompat worker` and "
        "`tfcompat sqs-bridge` start (`--metrics-port`); 0: none. The receiver serves "
        "/metrics on its own port. The container image sets 9808",
    )
    metrics_dir: str | None = Field(
        None,
        description="Directory where the worker's processes keep their metrics "
        "(prometheus_client multiprocess mode), one per worker; its `*.db` files are removed "
        "when the worker starts; a new temporary directory if unset",
    )

    # --- fleet changes at scale: fan-out, reconciler, dead letters, version locks ---------
    fleet_chunk_size: int = Field(
        200,
        description="Indexed models per fan-out chunk task of a fleet change (each chunk "
        "re-tags its models from their stored metadata on whichever worker takes it)",
    )
    reconcile_interval: int = Field(
        300,
        description="Seconds between runs of the reconciler (`tfcompat beat`) that finds "
        "objects and registry versions whose tags carry another fleet's digest",
    )
    reconcile_batch: int = Field(
        500,
        description="Most objects and most registry versions the reconciler examines per "
        "run (it resumes where the previous run stopped)",
    )
    version_lock_lease: int = Field(
        60,
        description="Seconds a per-version check lock lasts: one check of a model version "
        "at a time; a killed check's lock lapses after this",
    )
    sagemaker_fleet_recheck: bool = Field(
        False,
        description="Re-check every SageMaker model package on a fleet change and in the "
        "reconciler, as MLflow versions are (set it where SageMaker events are delivered)",
    )
    beat_schedule_file: str = Field(
        "celerybeat-schedule",
        description="Where `tfcompat beat` keeps its persistent schedule (a file on a "
        "volume that survives restarts)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        """Settings that contradict each other are refused with one line, before any
        process starts on them."""
        for name in (
            "publish_timeout",
            "visibility_timeout",
            "notify_lease",
            "notify_dedupe_ttl",
            "github_delivery_ttl",
            "max_event_bytes",
            "fleet_chunk_size",
            "reconcile_interval",
            "reconcile_batch",
            "version_lock_lease",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"TFCOMPAT_{name.upper()} must be positive")
        if self.task_time_limit < 0:
            raise ValueError("TFCOMPAT_TASK_TIME_LIMIT must be 0 (no limit) or positive")
        unknown = sorted(set(self.receiver_routes) - set(RECEIVER_ROUTES))
        if unknown:
            raise ValueError(
                f"TFCOMPAT_RECEIVER_ROUTES names {', '.join(unknown)}; "
                f"the routes are {', '.join(RECEIVER_ROUTES)}"
            )
        if self.broker_url.split("://", 1)[0] == "sqs":
            visibility = self.broker_transport_options.get(
                "visibility_timeout", self.visibility_timeout
            )
            if not self.task_time_limit or visibility <= self.task_time_limit:
                limit = f"{self.task_time_limit} s" if self.task_time_limit else "no limit"
                raise ValueError(
                    f"with an sqs:// broker a task is given to another worker after the "
                    f"visibility timeout ({visibility} s) and nothing renews it, so a check "
                    f"longer than that runs twice: set TFCOMPAT_VISIBILITY_TIMEOUT above "
                    f"TFCOMPAT_TASK_TIME_LIMIT ({limit}), e.g. "
                    f"{(self.task_time_limit or 1200) + 60}"
                )
        return self


def state_redis_url(settings: Settings) -> str:
    """The Redis that holds claims and the model index: TFCOMPAT_REDIS_URL, else the
    broker when it is Redis. ConfigError when neither is a Redis URL."""
    from worker.errors import ConfigError

    if settings.redis_url:
        return settings.redis_url
    if settings.broker_url.split("://", 1)[0] in ("redis", "rediss"):
        return settings.broker_url
    raise ConfigError(
        "TFCOMPAT_REDIS_URL is not set and the broker is not Redis: claims and the model "
        "index need a Redis (e.g. TFCOMPAT_REDIS_URL=redis://127.0.0.1:6379/0)"
    )


def load_settings(**overrides: Any) -> Settings:
    """Build the settings; a settings file named by TFCOMPAT_SETTINGS_FILE is read too.
    Values that are malformed or contradict each other raise ConfigError, one line each."""
    from pydantic import ValidationError

    from worker.errors import ConfigError

    settings_file = os.environ.get("TFCOMPAT_SETTINGS_FILE")
    try:
        if settings_file:
            return Settings(_env_file=settings_file, **overrides)  # type: ignore[call-arg]
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(f"settings refused: {settings_problems(exc)}") from None


def settings_problems(exc: Any) -> str:
    """A pydantic ValidationError as one line: `TFCOMPAT_X: reason; ...`."""
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error.get("loc", ()))
        message = str(error.get("msg", "")).removeprefix("Value error, ")
        problems.append(f"TFCOMPAT_{field.upper()}: {message}" if field else message)
    return "; ".join(problems)


def masked(settings: Settings) -> dict[str, Any]:
    """Every setting with secrets masked, for `tfcompat settings` and logs."""
    shown: dict[str, Any] = {}
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            value = "********" if value.get_secret_value() else ""
        shown[f"TFCOMPAT_{name.upper()}"] = value
    return shown


def named_secret(settings: Settings, name: str) -> SecretStr | None:
    """The secret a config file names by its TFCOMPAT_* variable (owners.yaml destinations).

    A Settings field of that name wins (TFCOMPAT_SLACK_WEBHOOK_URL is one), else the
    environment, else the settings file. Read when asked, never at import; the value is
    never printed by `masked`, which shows fields only.
    """
    if not name.startswith("TFCOMPAT_"):
        return None
    field_name = name.removeprefix("TFCOMPAT_").lower()
    if field_name in type(settings).model_fields:
        value = getattr(settings, field_name)
        if isinstance(value, SecretStr) or value is None:
            return value
        return SecretStr(str(value))
    if os.environ.get(name):
        return SecretStr(os.environ[name])
    settings_file = os.environ.get("TFCOMPAT_SETTINGS_FILE")
    if settings_file:
        from dotenv import dotenv_values

        found = dotenv_values(settings_file).get(name)
        if found:
            return SecretStr(found)
    return None


def settings_key(settings: Settings) -> str:
    """A cache key that tells any two different settings apart, secrets included.

    (`model_dump_json` masks SecretStr values, so settings rebuilt from it have lost them.)"""
    import hashlib
    import json

    values = {
        name: value.get_secret_value() if isinstance(value, SecretStr) else value
        for name, value in settings.model_dump().items()
    }
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()
