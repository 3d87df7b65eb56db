"""One Settings object, built once by each entry point and passed down.

Read from `TFCOMPAT_*` environment variables, or from a dotenv-style settings
file named by `TFCOMPAT_SETTINGS_FILE` (environment variables win). Nothing in
the package reads the environment anywhere else, and nothing at import time.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
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
    model_config = SettingsConfigDict(env_prefix="TFCOMPAT_", extra="ignore", populate_by_name=True)

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
    worker_max_memory_mb: int = Field(
        1024,
        description="Resident memory (MiB) a worker's pool process may reach: past it, the "
        "process is replaced once its current task is done (Celery's "
        "`worker_max_memory_per_child`; nothing is lost, the new process starts cold). A "
        "process's memo tables grow with the models it meets, about 8 MiB per 1,000 models "
        "a fleet change re-checks; 0: never replaced",
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
        "the SQS bridge and the worker's task never read it; an MLflow version, SageMaker "
        "package or pull-request pointer on S3 is read only inside it too. Required by the "
        "receiver and the bridge unless `TFCOMPAT_ALLOW_UNAUTHENTICATED_EVENTS` is set",
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
        description="Serve the fleet page (/ui) from the receiver, on its own listener "
        "(`TFCOMPAT_UI_HOST`:`TFCOMPAT_UI_PORT`); it refuses to start "
        "unless `TFCOMPAT_UI_TOKEN` or `TFCOMPAT_UI_TRUSTED_HEADER` is set too",
    )
    ui_token: SecretStr | None = Field(
        None,
        description="Token the fleet page asks for (`Authorization: Bearer`, or typed once "
        "into its sign-in form; the browser then keeps a signed session cookie whose key "
        "changes with the token)",
    )
    ui_trusted_header: str | None = Field(
        None,
        description="Header an authenticating proxy in front of the receiver sets to the "
        "signed-in user (e.g. `X-Forwarded-User`); a request with it non-empty may read "
        "the fleet page, on the page's listener only, and only when the request carries "
        "`TFCOMPAT_UI_PROXY_SECRET` or comes from `TFCOMPAT_UI_TRUSTED_PROXIES` (one of them "
        "is required)",
    )
    mlflow_tracking_uri: str | None = Field(
        None,
        description="MLflow tracking server whose model versions are checked and tagged "
        "(`http://host:5000`); unset: MLflow webhooks are refused",
    )
    mlflow_tracking_token: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("TFCOMPAT_MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_TOKEN"),
        description="Bearer token for the MLflow tracking server, when it asks for one "
        "(MLflow's own `MLFLOW_TRACKING_TOKEN` is read too)",
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
        "`tfcompat sqs-bridge` and `tfcompat serve` start (`--metrics-port`); 0: none. "
        "The receiver's listeners do not serve /metrics. The container image sets 9808",
    )
    metrics_dir: str | None = Field(
        None,
        description="Directory where the worker's processes keep their metrics "
        "(prometheus_client multiprocess mode), one per worker; its `*.db` files are removed "
        "when the worker starts; a new temporary directory if unset",
    )

    # --- The fleet page's listener, sessions and preview; the metrics exporter's token ---
    ui_host: str = Field(
        "127.0.0.1",
        description="Address the fleet page's own listener binds (`tfcompat serve --ui-host`); "
        "the page is never served on the event listener",
    )
    ui_port: int = Field(
        8081, description="Port of the fleet page's listener (`tfcompat serve --ui-port`)"
    )
    ui_proxy_secret: SecretStr | None = Field(
        None,
        description="Secret the authenticating proxy sends in `X-Tfcompat-Proxy-Secret`; the "
        "trusted user header counts only on a request that carries it (or that comes from "
        "`TFCOMPAT_UI_TRUSTED_PROXIES`)",
    )
    ui_trusted_proxies: str = Field(
        "",
        description="Comma-separated peer addresses or CIDRs of the authenticating proxy "
        "(e.g. `10.0.0.5,10.1.0.0/16`); the trusted user header counts only from them "
        "(or with `TFCOMPAT_UI_PROXY_SECRET`)",
    )
    ui_session_ttl: int = Field(
        8 * 3600,
        description="Seconds a fleet-page session (the cookie the sign-in form sets) lasts; "
        "signing out ends it sooner",
    )
    ui_secure_cookies: bool = Field(
        False,
        description="Mark the fleet page's cookies `Secure` even when the page is reached "
        "over plain http (a TLS-terminating proxy in front); over https they always are",
    )
    ui_sign_in_per_address: int = Field(
        10,
        description="Sign-in attempts one client address may make per minute; more are "
        "answered 429 with Retry-After",
    )
    ui_sign_in_global: int = Field(
        100,
        description="Sign-in attempts every client together may make per minute; more are "
        "answered 429 with Retry-After",
    )
    ui_preview_time_limit: int = Field(
        300,
        description="Seconds a fleet-change preview may run in a worker before it is stopped "
        "and reported failed",
    )
    ui_preview_memory_mb: int = Field(
        2048,
        description="Address space (MiB) the process assessing a preview may use; more and "
        "the preview fails with a memory error, the worker carries on",
    )
    ui_previews_in_flight: int = Field(
        2,
        description="Previews that may be queued or running at once (they share the workers "
        "with model checks); one more is answered 429 with Retry-After",
    )
    ui_preview_ttl: int = Field(
        3600, description="Seconds a preview's result is kept in Redis for the page to show"
    )
    metrics_token: SecretStr | None = Field(
        None,
        description="Bearer token the metrics exporter (`TFCOMPAT_METRICS_PORT`, of every "
        "process) asks for in `Authorization: Bearer`; unset: the exporter answers anyone "
        "who reaches its port",
    )

    # --- Secrets as files (deployment hardening: infra/, docs/security.md) ---
    secrets_dir: str | None = Field(
        None,
        description="Directory of secret files, one per setting, each named like its "
        "variable (`TFCOMPAT_EVENTS_TOKEN`, `TFCOMPAT_BROKER_URL`, or a name owners.yaml "
        "gives), holding the value alone: a mounted Kubernetes Secret or Compose secrets. "
        "Environment variables and the settings file win over a file. Read once, at start; "
        "a directory that does not exist is refused",
    )

    # Reading models: what the worker may read, registry credentials, bounded outbound
    # calls (docs/reading-models.md).
    local_roots: str = Field(
        "",
        description="Directories (comma-separated) under which the worker may read a model "
        "named by a local path or `file://` URI (an MLflow version's source); compared after "
        "symlinks and `..` are resolved. Empty: local paths are refused",
    )
    mlflow_tracking_username: str | None = Field(
        None,
        validation_alias=AliasChoices(
            "TFCOMPAT_MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_USERNAME"
        ),
        description="HTTP basic auth user for the MLflow tracking server (MLflow's own "
        "`MLFLOW_TRACKING_USERNAME` is read too); a `user:password@` in "
        "`TFCOMPAT_MLFLOW_TRACKING_URI` works the same and wins",
    )
    mlflow_tracking_password: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices(
            "TFCOMPAT_MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_PASSWORD"
        ),
        description="HTTP basic auth password for the MLflow tracking server (MLflow's own "
        "`MLFLOW_TRACKING_PASSWORD` is read too)",
    )
    aws_connect_timeout: float = Field(
        5.0, description="Seconds every AWS client (S3, SQS, SageMaker) waits to connect"
    )
    aws_read_timeout: float = Field(
        30.0, description="Seconds every AWS client waits for a response's next bytes"
    )
    aws_max_attempts: int = Field(
        4,
        description="Attempts of one AWS call, the first included (botocore's "
        "`total_max_attempts`)",
    )
    aws_retry_mode: Literal["standard", "adaptive", "legacy"] = Field(
        "standard", description="botocore retry mode of every AWS client"
    )
    sqs_endpoint_url: str | None = Field(
        None,
        description="SQS endpoint of the SQS bridge and the health check (a local SQS, "
        "moto); AWS's if unset. Never taken from `TFCOMPAT_S3_ENDPOINT_URL`",
    )
    read_max_response_bytes: int = Field(
        256 << 20,
        description="Largest response body read from the MLflow tracking server in one "
        "request; a server that ignores `Range` and sends more is refused (the version is "
        "recorded as invalid with this setting named, never retried)",
    )
    check_deadline: float = Field(
        900.0,
        description="Seconds one registry check (an MLflow version, a SageMaker package) "
        "may spend reading its model; past it the check stops with an error and is retried "
        "later",
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
    fleet_stall_after: int = Field(
        2700,
        description="Seconds a running fleet change may go without any unit reporting "
        "before `tfcompat fleet status` shows it stalled and the reconciler sends its "
        "pending units again (a unit lost to the time limit is never redelivered); keep "
        "it above `TFCOMPAT_TASK_TIME_LIMIT` plus the longest retry backoff",
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
            "ui_session_ttl",
            "ui_sign_in_per_address",
            "ui_sign_in_global",
            "ui_preview_time_limit",
            "ui_preview_memory_mb",
            "ui_preview_ttl",
            "ui_previews_in_flight",
            "aws_connect_timeout",
            "aws_read_timeout",
            "aws_max_attempts",
            "read_max_response_bytes",
            "check_deadline",
            "fleet_chunk_size",
            "reconcile_interval",
            "reconcile_batch",
            "fleet_stall_after",
            "version_lock_lease",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"TFCOMPAT_{name.upper()} must be positive")
        if self.worker_max_memory_mb < 0:
            raise ValueError("TFCOMPAT_WORKER_MAX_MEMORY_MB must be 0 (no limit) or positive")
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
    sources: dict[str, Any] = {"_env_file": settings_file} if settings_file else {}
    try:
        settings = Settings(**sources, **overrides)
        if settings.secrets_dir is None:
            return settings
        # The directory itself may be named by any source, so it is known only now.
        if not os.path.isdir(settings.secrets_dir):
            raise ConfigError(
                f"TFCOMPAT_SECRETS_DIR={settings.secrets_dir} is not a directory: mount the "
                "secrets there or unset it"
            )
        sources["_secrets_dir"] = settings.secrets_dir
        return Settings(**sources, **overrides)
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
    """Every setting with secrets masked, for `tfcompat settings` and logs: SecretStr
    values whole, and the password of any URI-valued setting (a broker URL, a tracking
    URI with `user:password@`)."""
    from worker.redact import mask_password

    shown: dict[str, Any] = {}
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            value = "********" if value.get_secret_value() else ""
        elif isinstance(value, str) and "://" in value:
            value = mask_password(value)
        elif isinstance(value, list):
            value = [mask_password(v) if isinstance(v, str) and "://" in v else v for v in value]
        shown[f"TFCOMPAT_{name.upper()}"] = value
    return shown


def named_secret(settings: Settings, name: str) -> SecretStr | None:
    """The secret a config file names by its TFCOMPAT_* variable (owners.yaml destinations).

    A Settings field of that name wins (TFCOMPAT_SLACK_WEBHOOK_URL is one), else the
    environment, else the settings file, else a file of that name in TFCOMPAT_SECRETS_DIR.
    Read when asked, never at import; the value is never printed by `masked`, which shows
    fields only.
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
    if settings.secrets_dir:
        path = os.path.join(settings.secrets_dir, name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                value = file.read().strip()
            if value:
                return SecretStr(value)
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
