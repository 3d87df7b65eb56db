"""`make demo`: the product's main job end to end on one machine, local defaults.

Starts its own Redis (a redis-server on a free port; or the one
TFCOMPAT_DEMO_REDIS_URL names, whose database it empties), a local
S3-compatible endpoint (moto's server) whose bucket notifies an SQS queue, the
SQS bridge, a Celery worker and the HTTP receiver; uploads real
TensorFlow-written models; waits until each carries its `tfcompat:*` tags;
prints model, status, releases and each consumer's verdict. Nobody calls a
check: S3 notifies, the bridge enqueues, the worker checks, tags and reports.
Where MLflow is installed (the dev extras), it also starts an MLflow tracking
server (SQLite, artifact proxy) whose webhook points at the receiver, registers
one model version, and shows that version's tags in the same table.
With --keep the stack stays up, with the commands to try next; --stop ends it.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Literal

from worker.cli.demo_stack import (
    CREDENTIALS,
    ROOT,
    DemoError,
    Stack,
    free_port,
    prepare,
    start_redis,
    stop_recorded,
    wait_for,
)

BUCKET = "models"
STATE = ROOT / "var" / "demo"

# (what, fixture path under artifacts/, key prefix in the bucket, object to watch)
MODELS = [
    ("TF1 graph, defaults kept (2.12)", "tf2.12/savedmodel_v1", "ranking/v1", "saved_model.pb"),
    ("TF2 SavedModel (2.21)", "tf2.21/savedmodel_v2", "search/2", "saved_model.pb"),
    ("new op DecodeWebP (2.21)", "tf2.21/new_op", "vision/7", "saved_model.pb"),
    ("new attr, non-default (2.21)", "tf2.21/new_attr_nondefault", "nlp/3", "saved_model.pb"),
    ("new dtype for Xlogy (2.12)", "tf2.12/new_allowed_value", "ads/5", "saved_model.pb"),
    ("frozen graph (2.21)", "tf2.21/frozen_graph", "edge/frozen", "frozen_graph.pb"),
    ("checkpoint (2.12)", "tf2.12/checkpoint", "training/ckpt", "ckpt-1.index"),
    ("Keras 3, saved_model.save (2.21)", "tf2.21/keras3_module_save", "keras/1", "saved_model.pb"),
]
# One file written by a real TFLite converter (tests/fixtures/tflite): int8 with per-channel
# FULLY_CONNECTED weights, which 1.15's interpreter (legacy-edge) runs and answers wrongly.
TFLITE = (
    "int8 TFLite (2.21 converter)",
    ROOT / "tests" / "fixtures" / "tflite" / "models" / "tf2.21" / "dense_int8.tflite",
    "mobile/int8/model.tflite",
)
BROKEN = ("random bytes", "broken/model.pb")
FIX_PREFIX = "fixed"  # TFCOMPAT_FIX_PREFIX: the worker writes fixed copies under it
# The upload whose fixed copy the demo waits for: legacy-edge (TF 1.15) cannot load it
# only because of attrs at their default, so the worker writes a copy it can serve.
FIXED = ("ranking/v1/saved_model.pb", "legacy-edge")


def say(text: str) -> None:
    print(text, flush=True)


FIXTURE_ROOTS = (
    ROOT / "tests" / "fixtures" / "tf-base" / "artifacts",
    ROOT / "tests" / "fixtures" / "tf-real" / "artifacts",
)


def fixture_path(fixture: str) -> Path:
    """A fixture model, from the base set when it has it, else from the larger one."""
    for root in FIXTURE_ROOTS:
        if (root / fixture).is_dir():
            return root / fixture
    raise DemoError(f"fixture model {fixture} not found")


def verdict_word(consumer: dict[str, Any]) -> str:
    """ok: it serves the model; FAILS: it cannot load it; REQUESTS FAIL: it loads it and
    every request fails; unknown: no op registry to tell."""
    if consumer.get("loads") is False:
        return "FAILS"
    if consumer.get("serves", consumer.get("loads")) is False:
        return "REQUESTS FAIL"
    if consumer.get("loads") is None or consumer.get("serves") is None:
        return "unknown"
    return "ok"


def client(service: Literal["s3", "sqs"], endpoint: str) -> Any:
    import boto3

    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )


# --- the stack ----------------------------------------------------------------------------


def start_stack(stack: Stack) -> tuple[Any, str]:
    """Redis, the S3 endpoint with a notifying bucket, worker, bridge and receiver:
    (an S3 client, the receiver's port)."""
    broker = start_redis(stack)
    endpoint = f"http://127.0.0.1:{free_port()}"
    stack.env.update(
        {
            **CREDENTIALS,
            "TFCOMPAT_BROKER_URL": broker,
            "TFCOMPAT_S3_ENDPOINT_URL": endpoint,
            "TFCOMPAT_SQS_ENDPOINT_URL": endpoint,  # moto speaks both
            "TFCOMPAT_FLEET": str(ROOT / "config" / "fleet.yaml"),
            "TFCOMPAT_INDEX_BUCKETS": json.dumps([BUCKET]),
            # The receiver and the bridge take events for the demo bucket only, and the
            # receiver serves the routes the demo uses, each with its token.
            "TFCOMPAT_BUCKETS": json.dumps([BUCKET]),
            "TFCOMPAT_RECEIVER_ROUTES": json.dumps(["s3", "eventbridge"]),
            "TFCOMPAT_EVENTS_TOKEN": secrets.token_urlsafe(24),
            "TFCOMPAT_FIX_PREFIX": FIX_PREFIX,
            # the fleet page, signed in with a token made for this stack
            "TFCOMPAT_UI_ENABLED": "true",
            "TFCOMPAT_UI_TOKEN": secrets.token_urlsafe(16),
            "TFCOMPAT_UI_PORT": str(free_port()),  # the page's own listener
            "TFCOMPAT_LOG_FORMAT": "json",
            "PYTHONUNBUFFERED": "1",
        }
    )
    say(f"1/5 {stack.notes[-1]}; local S3 endpoint (moto) on {endpoint}")
    stack.start(
        "moto",
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", endpoint.rsplit(":", 1)[1]],
    )
    start_mlflow(stack)
    s3 = client("s3", endpoint)
    wait_for(lambda: s3.list_buckets() is not None, 30, "the S3 endpoint")
    queue = set_up_bucket(s3, client("sqs", endpoint))
    say(f"2/5 bucket s3://{BUCKET} (versioned) notifies SQS {queue.rsplit('/', 1)[1]}")
    port = free_port()
    # for the kept stack's instructions (`KEPT_INSTRUCTIONS`), through env.sh
    stack.env["DEMO_RECEIVER_URL"] = f"http://127.0.0.1:{port}"
    say(
        f"3/5 starting the worker, the SQS bridge and the receiver (port {port}, the fleet "
        f"page on port {stack.env['TFCOMPAT_UI_PORT']}); "
        f"logs in {stack.logs}"
    )
    tfcompat = [sys.executable, "-m", "worker.cli"]
    stack.start("worker", [*tfcompat, "worker", "--concurrency", "2"])
    stack.start("sqs-bridge", [*tfcompat, "sqs-bridge", "--queue-url", queue, "--wait", "1"])
    stack.start("receiver", [*tfcompat, "serve", "--port", str(port)])
    wait_for(
        lambda: re.search(r"@\S+ ready\.", (stack.logs / "worker.log").read_text()),
        60,
        "the worker",
    )
    return s3, str(port)


MLFLOW = Path(sys.executable).with_name("mlflow")
MLFLOW_MODEL = ("MLflow version, new op (2.21)", "tf2.21/new_op", "vision-dnn")


def start_mlflow(stack: Stack) -> None:
    """An MLflow tracking server on a free port, when MLflow is installed; the worker and
    the receiver then take its webhooks (the secret is the demo's own)."""
    if not MLFLOW.exists():
        say("     (MLflow is not installed here: the model registry part is left out)")
        return
    url = f"http://127.0.0.1:{free_port()}"
    stack.env.update(
        {
            "TFCOMPAT_MLFLOW_TRACKING_URI": url,
            "TFCOMPAT_MLFLOW_WEBHOOK_SECRET": os.urandom(16).hex(),
            "TFCOMPAT_REPORT_BUCKET": BUCKET,  # where the version's report goes
            "TFCOMPAT_RECEIVER_ROUTES": json.dumps(["s3", "eventbridge", "mlflow"]),
            # MLflow's own switches for webhooks to a local receiver over http
            "MLFLOW_WEBHOOK_ALLOWED_SCHEMES": "http,https",
            "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true",
            "MLFLOW_DISABLE_TELEMETRY": "true",
            # the key MLflow encrypts webhook secrets with (random per process if unset)
            "MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY": base64.urlsafe_b64encode(
                os.urandom(32)
            ).decode(),
        }
    )
    say(f"     MLflow tracking server (SQLite, artifact proxy) on {url}")
    stack.start(
        "mlflow",
        [
            str(MLFLOW),
            "server",
            "--backend-store-uri",
            f"sqlite:///{stack.state / 'mlflow.db'}",
            "--artifacts-destination",
            str(stack.state / "mlartifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            url.rsplit(":", 1)[1],
            "--workers",
            "1",
        ],
    )


def register_version(stack: Stack, receiver_port: str, timeout: float) -> tuple[str, str] | None:
    """Point MLflow's webhook at the receiver and register one model version; (what,
    `mlflow://name/version`), or None without MLflow."""
    import subprocess
    import urllib.request

    url = stack.env.get("TFCOMPAT_MLFLOW_TRACKING_URI")
    if url is None:
        return None
    wait_for(
        lambda: urllib.request.urlopen(f"{url}/health", timeout=5).status == 200,
        timeout,
        "the MLflow tracking server",
    )
    what, fixture, name = MLFLOW_MODEL
    registered = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "mlflow_register.py"),
            url,
            name,
            str(fixture_path(fixture)),
            "--webhook",
            f"http://127.0.0.1:{receiver_port}/webhooks/mlflow",
            "--secret",
            stack.env["TFCOMPAT_MLFLOW_WEBHOOK_SECRET"],
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **stack.env},
        timeout=timeout,
    )
    if registered.returncode != 0:
        raise DemoError(f"registering an MLflow model version failed: {registered.stderr[-500:]}")
    version = registered.stdout.strip().splitlines()[-1]
    say(f"     registered MLflow model {name} version {version} ({what})")
    return what, f"mlflow://{name}/{version}"


def mlflow_tags(stack: Stack, model: str, timeout: float) -> dict[str, str]:
    """The version's tags once ours are on it (`tfcompat.status` is written last)."""
    from worker.sinks.mlflow import MlflowRegistry

    registry = MlflowRegistry(stack.env["TFCOMPAT_MLFLOW_TRACKING_URI"])
    name, version = model.removeprefix("mlflow://").rsplit("/", 1)

    def tagged() -> dict[str, str] | None:
        found = registry.model_version(name, version).tags
        return found if found.get("tfcompat.status") else None

    found: dict[str, str] = wait_for(tagged, timeout, f"tags on {model}")
    return found


def set_up_bucket(s3: Any, sqs: Any) -> str:
    s3.create_bucket(Bucket=BUCKET)
    s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    queue = sqs.create_queue(QueueName="model-events")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    s3.put_bucket_notification_configuration(
        Bucket=BUCKET,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]
        },
    )
    return str(queue)


# --- the models ---------------------------------------------------------------------------


# Models that are one file: (what, file under tests/fixtures/, key in the bucket)
FILES = [
    ("Keras 2 .h5, LSTM (2.15)", "keras/models/tf2.15/lstm.h5", "keras/2/model.h5"),
]


def upload_models(s3: Any) -> list[tuple[str, str]]:
    """Every demo model and a broken one; (what, key to watch) of each."""
    say(
        f"4/5 uploading {len(MODELS) + len(FILES) + 1} models written by real TensorFlow "
        "(tests/fixtures) plus a broken one"
    )
    for _, fixture, prefix, _ in MODELS:
        source = fixture_path(fixture)
        for path in sorted(source.rglob("*")):
            if path.is_file():
                s3.put_object(
                    Bucket=BUCKET,
                    Key=f"{prefix}/{path.relative_to(source).as_posix()}",
                    Body=path.read_bytes(),
                    Tagging="team=demo",
                )
    for _, fixture, key in FILES:
        body = (ROOT / "tests" / "fixtures" / fixture).read_bytes()
        s3.put_object(Bucket=BUCKET, Key=key, Body=body, Tagging="team=demo")
    what, path, key = TFLITE
    s3.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes(), Tagging="team=demo")
    s3.put_object(Bucket=BUCKET, Key=BROKEN[1], Body=os.urandom(2048))
    models = [(what, f"{prefix}/{obj}") for what, _, prefix, obj in MODELS]
    return [*models, *((w, k) for w, _, k in FILES), (what, key), BROKEN]


def tags(s3: Any, key: str) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in s3.get_object_tagging(Bucket=BUCKET, Key=key)["TagSet"]}


def wait_for_tags(
    s3: Any, watched: list[tuple[str, str]], timeout: float, uploaded: float
) -> dict[str, Any]:
    """Each watched object's tags, once written; says how long after the uploads (started
    at `uploaded`, a `time.monotonic()`) each was first seen tagged."""
    say("5/5 waiting for tags and reports (S3 -> SQS -> bridge -> Celery -> tags)")
    results = {}
    for _, key in watched:

        def tagged(key: str = key) -> dict[str, str] | None:
            found = tags(s3, key)
            return found if found.get("tfcompat:status") else None

        results[key] = wait_for(tagged, timeout, f"tags on {key}")
        seen = time.monotonic() - uploaded
        say(f"     {key}: {results[key]['tfcompat:status']} (tagged {seen:.1f}s after upload)")
    return results


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def verdicts_table(s3: Any, watched: list[tuple[str, str]], results: dict[str, Any]) -> str:
    """One row per model: uploads by key, a registered version by `mlflow://name/version`
    (its tags are `tfcompat.*`, its report an `s3://` URL)."""
    rows = [["model", "object", "status", "releases", "consumers (serves / FAILS)"]]
    for what, key in watched:
        found = dict(results[key])
        if key.startswith("mlflow://"):
            found = {k.replace("tfcompat.", "tfcompat:", 1): v for k, v in found.items()}
            found["tfcompat:report"] = found["tfcompat:report"].split("/", 3)[3]
        report = json.loads(
            s3.get_object(Bucket=BUCKET, Key=found["tfcompat:report"])["Body"].read()
        )
        verdicts = ", ".join(
            f"{c['name']} {verdict_word(c)}" for a in report["artifacts"] for c in a["consumers"]
        )
        rows.append(
            [
                what,
                key,
                found["tfcompat:status"],
                found.get("tfcompat:releases", "-"),
                verdicts or "-",
            ]
        )
    return table(rows)


def report_of(s3: Any, key: str) -> dict[str, Any]:
    found = tags(s3, key)
    body = s3.get_object(Bucket=BUCKET, Key=found["tfcompat:report"])["Body"].read()
    document: dict[str, Any] = json.loads(body)
    return document


def fixed_copies(s3: Any, watched: list[tuple[str, str]], timeout: float) -> str:
    """The fixed copies the worker wrote (TFCOMPAT_FIX_PREFIX), once the one for `FIXED`
    is listed in its original's report (the worker writes copies after the tags)."""
    key, consumer = FIXED

    def listed() -> bool:
        copies = report_of(s3, key).get("fixed_copies") or []
        return any(c["consumer"] == consumer for c in copies)

    wait_for(listed, timeout, f"the fixed copy of {key} for {consumer}")
    lines = ["Fixed copies (the originals are untouched):"]
    for _, watched_key in watched:
        if watched_key == BROKEN[1] or watched_key.startswith("mlflow://"):
            continue
        for copy in report_of(s3, watched_key).get("fixed_copies") or []:
            rewrites = ", ".join(copy["rewrites"][:3])
            if len(copy["rewrites"]) > 3:
                rewrites += f" and {len(copy['rewrites']) - 3} more"
            lines.append(
                f"  {copy['consumer']} cannot load {watched_key}; it serves {copy['url']} "
                f"(status {copy['status']}; dropped {rewrites})"
            )
    return "\n".join(lines)


def fleet_page(stack: Stack, receiver_port: str) -> str:
    """Where the fleet page is (its own listener, not the receiver's) and the token that
    opens it."""
    return (
        f"Fleet page: http://127.0.0.1:{stack.env['TFCOMPAT_UI_PORT']}/ui  "
        f"(sign in with the token {stack.env['TFCOMPAT_UI_TOKEN']})"
    )


# What `make demo KEEP=1` prints to try on the stack it leaves: the one text of these
# instructions (docs/getting-started.md quotes it verbatim, and a test holds it so).
# Run from the clone's top folder, with the default state folder (var/demo).
KEPT_INSTRUCTIONS = f"""\
. var/demo/env.sh    # the stack's settings: Redis, the S3 endpoint, the index; .venv/bin on PATH
tfcompat fleet impact --add-consumer tf==2.10   # the models a new consumer cannot load
tfcompat fleet impact --remove-consumer legacy-edge
tfcompat inspect s3://{BUCKET}/vision/7/saved_model.pb
tfcompat check s3://{BUCKET}/edge/frozen/frozen_graph.pb --consumer tf==2.4
tfcompat check s3://{BUCKET}/{TFLITE[2]} --consumer tflite==2.9 --consumer litert==1.4
tfcompat index rebuild
tfcompat healthcheck serve --url "$DEMO_RECEIVER_URL/healthz"
make demo-stop       # ends the processes the demo recorded, and only those
"""


def next_steps(stack: Stack, receiver_port: str) -> str:
    """What to try on a kept stack, and how to stop it: where it runs, then
    `KEPT_INSTRUCTIONS` as they are."""
    lines = [
        f"The demo stack is still running (state and logs in {stack.state}).",
        fleet_page(stack, receiver_port),
    ]
    if stack.state.resolve() != STATE.resolve():
        lines.append(f"Its settings are in {stack.state / 'env.sh'} (not var/demo/env.sh).")
    return "\n".join([*lines, "Try:", KEPT_INSTRUCTIONS.rstrip("\n")])


# --- the command --------------------------------------------------------------------------


def run(state: Path, keep: bool, timeout: float) -> None:
    stack = prepare(state)
    kept = False
    try:
        s3, receiver_port = start_stack(stack)
        uploaded = time.monotonic()
        watched = upload_models(s3)
        results = wait_for_tags(s3, watched, timeout, uploaded)
        registered = register_version(stack, receiver_port, timeout)
        if registered is not None:
            results[registered[1]] = mlflow_tags(stack, registered[1], timeout)
            say(f"     {registered[1]}: {results[registered[1]]['tfcompat.status']}")
            watched.append(registered)
        say("")
        say(verdicts_table(s3, watched, results))
        say("")
        say(fixed_copies(s3, watched, timeout))
        say("")
        mid = watched[2][1]
        say(
            f"Tags of s3://{BUCKET}/{mid}: "
            + ", ".join(f"{k}={v}" for k, v in sorted(results[mid].items()))
        )
        say(f"Reports: s3://{BUCKET}/tfcompat-reports/...; logs: {stack.logs}")
        if not keep:
            say(f"{fleet_page(stack, receiver_port)}; make demo KEEP=1 keeps it up")
        if keep:
            say("")
            say(next_steps(stack, receiver_port))
            kept = True
    finally:
        if not kept:
            stack.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.cli.demo", description=__doc__)
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for results")
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--keep", action="store_true", help="leave the stack running, with commands to try"
    )
    action.add_argument("--stop", action="store_true", help="stop a stack left by --keep")
    parser.add_argument(
        "--state", type=Path, default=STATE, help=f"state and logs folder (default {STATE})"
    )
    args = parser.parse_args(argv)
    try:
        if args.stop:
            stopped = stop_recorded(args.state)
            say(
                f"stopped {', '.join(stopped)}"
                if stopped
                else f"no demo stack runs from {args.state}"
            )
            return 0
        run(args.state, args.keep, args.timeout)
    except DemoError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
