"""The `tfcompat` argument parser, one function per group of commands.

Kept apart from the command functions so that `healthcheck`, which parses the
command line of the process it probes, can be handed the same parser.
"""

from __future__ import annotations

import argparse
import functools
from typing import TypeAlias

from worker.cli.fanout import (
    cmd_beat,
    cmd_dead_letters_list,
    cmd_dead_letters_retry,
    cmd_fleet_status,
)
from worker.cli.fix import cmd_fix
from worker.cli.fleet import (
    cmd_dump_manifest,
    cmd_fleet_apply,
    cmd_fleet_impact,
    cmd_fleet_list,
    cmd_fleet_plan,
    cmd_index_rebuild,
)
from worker.cli.models import cmd_catalog, cmd_check, cmd_inspect, cmd_settings
from worker.cli.processes import cmd_healthcheck, cmd_serve, cmd_sqs_bridge, cmd_worker

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tfcompat",
        description="Check TensorFlow models against the TensorFlow releases that load them, "
        "without TensorFlow.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_model_commands(sub)
    add_fleet_commands(sub)
    add_process_commands(sub)
    return parser


def add_model_commands(sub: Subparsers) -> None:
    """inspect, check, catalog, settings: one-shot commands over models and configuration."""

    p = sub.add_parser("inspect", help="print what a model says about itself")
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="model file (.pb, .pbtxt, .meta, .index, .tflite, Keras .keras/.h5), SavedModel "
        "dir, checkpoint, "
        "archive, or s3://bucket/key",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser(
        "check",
        help="predict which consumers can load a model and answer a request",
        description="Each consumer gets `loads` (its TensorFlow loads the model) and `serves` "
        "(it loads it and answers a request), each true, false or unknown (null: no op "
        "registry for that release or build, record one with `tfcompat fleet dump-manifest`; "
        "for a .tflite, no measured table for that TFLite runtime). "
        "Status: compatible (every consumer serves it), at-risk (it serves, with a named "
        "hazard), unknown, incompatible, invalid. Without --consumer or --fleet only the "
        "releases that serve it are reported, and the status is unknown (incompatible if "
        "no known release serves it). Keras files are checked against the Keras each "
        "consumer's load_model runs. Ops that should never be served (file I/O, Python, "
        "network) are warnings, errors under a fleet policy `unsafe_ops: error`. Exit "
        "status: 0 every consumer serves it, 1 some cannot, 2 invalid input or usage, 3 "
        "some answer is unknown and none fails.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument(
        "--consumer",
        action="append",
        default=[],
        metavar="SPEC",
        help="tf==X.Y[.Z][@LOADER] or NAME=MANIFEST.json[@LOADER]; LOADER is "
        "saved-model-v1 (default, TF Serving), saved-model-v2 or graph-import; the same "
        "release may be given with several loaders (named tf-X.Y.Z@LOADER). For Keras "
        "files, ,keras==X.Y and ,python==X.Y after the release say which Keras and Python "
        "it runs (default: the Keras its release brings; Python unknown), and "
        ",custom_objects=NAME[+NAME...] the Keras objects its process registers; serving==X.Y is "
        "a TensorFlow Serving binary, which reads SavedModels only. A TFLite "
        "runtime: tflite==X.Y[.Z] (tflite-runtime) or litert==X.Y[.Z] (ai-edge-litert), "
        "judged on .tflite files only; a tf== consumer checks a .tflite with that "
        "release's tf.lite.Interpreter",
    )
    p.add_argument(
        "--fleet",
        metavar="FLEET.yaml",
        help="check every consumer of a fleet file; 'builtin': every catalogued release",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--format",
        choices=("text", "json", "sarif", "junit"),
        help="text (default), json (as --json), sarif (SARIF 2.1.0: one result per "
        "finding, for code scanning) or junit (JUnit XML: a test case per model and "
        "consumer, failed where it cannot serve it)",
    )
    p.add_argument(
        "--output", metavar="FILE", help="write the report there instead of standard output"
    )
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "fix",
        help="write a copy of a model that the named consumers can serve (safe rewrites only)",
        description="Drops only attrs a consumer's OpDef lacks that hold the producer's "
        "default (what strip_default_attrs=True does, in graph nodes and function bodies) "
        "and attrs that carry no meaning for computation (a curated table). Never drops an "
        "op, lowers a VersionDef or changes a value. Exit 0 copy written, 1 some consumer "
        "cannot be fixed (nothing written), 2 invalid model, unsafe path or usage.",
    )
    p.add_argument("model", metavar="MODEL", help="SavedModel dir, frozen graph, .meta or archive")
    p.add_argument(
        "--for",
        dest="consumers",
        action="append",
        default=[],
        metavar="SPEC",
        help="a consumer the copy is for (repeatable): tf==X.Y[.Z][@LOADER] or "
        "NAME=MANIFEST.json[@LOADER]",
    )
    p.add_argument("-o", "--output", metavar="OUT", help="where the copy goes (same kind)")
    p.add_argument("--dry-run", action="store_true", help="list the rewrites, write nothing")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_fix)

    p = sub.add_parser("catalog", help="list the TensorFlow releases tfcompat knows")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_catalog)

    p = sub.add_parser("settings", help="print the effective settings, secrets masked")
    p.set_defaults(func=cmd_settings)


def add_fleet_commands(sub: Subparsers) -> None:
    """fleet list|dump-manifest|impact|apply and index rebuild."""
    fleet = sub.add_parser("fleet", help="the consumer fleet").add_subparsers(
        dest="fleet_command", required=True, metavar="SUBCOMMAND"
    )
    p = fleet.add_parser("list", help="show the fleet's consumers")
    p.add_argument(
        "--fleet",
        metavar="FLEET.yaml",
        help="a fleet file, or 'builtin' (every catalogued release); default: TFCOMPAT_FLEET, "
        "else config/fleet.yaml when present, else the built-in fleet",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fleet_list)
    p = fleet.add_parser(
        "dump-manifest",
        help="record a TensorFlow environment's versions and op registry",
        description="Runs inside any Python that has TensorFlow (use --python to point at it).",
    )
    p.add_argument("--python", help="interpreter of the environment to record (default: this one)")
    p.add_argument("-o", "--output", default="-", help="manifest file (default: stdout)")
    p.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first so its ops are recorded (repeatable)",
    )
    p.add_argument(
        "--load-op-library",
        dest="op_libraries",
        action="append",
        default=[],
        metavar="SO",
        help="tf.load_op_library(SO) first (repeatable)",
    )
    p.set_defaults(func=cmd_dump_manifest)

    p = fleet.add_parser(
        "plan",
        help="which release each consumer should move to, or which models to re-export",
        description="For every consumer, each release it may move to (its fleet entry's "
        "upgrade_to range; default: every catalog minor not older than its own) and what "
        "the indexed models would then do there, from their recorded verdicts (no model is "
        "read again); the lowest release serving every model the consumer must serve, or "
        "what blocks it and the re-exports that would do instead; and per model owner, the "
        "newest release to export with. Exit 1 when some consumer has no release serving "
        "everything it must.",
    )
    p.add_argument(
        "--fleet",
        metavar="FLEET.yaml",
        help="the fleet to plan for (default: TFCOMPAT_FLEET, else config/fleet.yaml)",
    )
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="the whole plan as JSON")
    form.add_argument("--csv", action="store_true", help="one row per consumer and candidate")
    p.add_argument(
        "--apply-preview",
        action="store_true",
        help="then show what `fleet apply` would re-tag and whom it would tell once every "
        "consumer is at its recommended release (nothing is written)",
    )
    p.set_defaults(func=cmd_fleet_plan)

    for name, func, text in (
        ("impact", cmd_fleet_impact, "which indexed models a fleet change would change, and why"),
        ("apply", cmd_fleet_apply, "re-check every indexed model against a fleet, re-tag, notify"),
    ):
        p = fleet.add_parser(
            name,
            help=text,
            description=text + ". Exit 1 (impact) when a "
            "model would become unloadable by a consumer.",
        )
        p.add_argument("--fleet", metavar="NEW.yaml", help="the new fleet file")
        p.add_argument(
            "--current", metavar="FLEET.yaml", help="the fleet in force (default: TFCOMPAT_FLEET)"
        )
        p.add_argument(
            "--add-consumer",
            action="append",
            default=[],
            metavar="SPEC",
            help="add a consumer (tf==X.Y[@LOADER], tflite==X.Y, litert==X.Y or "
            "NAME=MANIFEST.json)",
        )
        p.add_argument(
            "--remove-consumer",
            action="append",
            default=[],
            metavar="NAME",
            help="remove a consumer by name",
        )
        if name == "impact":
            p.add_argument("--json", action="store_true")
            p.add_argument(
                "--jobs",
                type=_jobs,
                default=None,
                metavar="N",
                help="processes that share the models (default: the CPUs this process may use)",
            )
        else:
            p.add_argument(
                "--enqueue",
                action="store_true",
                help="hand the re-evaluation to the workers instead",
            )
        p.set_defaults(func=func)

    index = sub.add_parser("index", help="the model index").add_subparsers(
        dest="index_command", required=True, metavar="SUBCOMMAND"
    )
    p = index.add_parser(
        "rebuild",
        help="rebuild the index from the stored reports (in a worker, streamed, one at a time)",
    )
    p.add_argument(
        "--wait",
        type=float,
        default=600,
        metavar="SECONDS",
        help="wait this long for a worker to finish it (default 600; 0: do not wait)",
    )
    p.set_defaults(func=cmd_index_rebuild)
    p = fleet.add_parser(
        "status", help="the running (or last) fleet change: planned, done, changed, failed, applied"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fleet_status)
    letters = sub.add_parser(
        "dead-letters", help="work that failed for good, kept with its cause"
    ).add_subparsers(dest="dead_letters_command", required=True, metavar="SUBCOMMAND")
    p = letters.add_parser("list", help="show every dead letter and its cause")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_dead_letters_list)
    p = letters.add_parser("retry", help="send a dead letter's work again (ID, or --all)")
    p.add_argument("id", nargs="?", metavar="ID")
    p.add_argument("--all", action="store_true", help="every dead letter")
    p.set_defaults(func=cmd_dead_letters_retry)


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of processes >= 1, got {text!r}")
    return jobs


def add_process_commands(sub: Subparsers) -> None:
    """The long-running processes (worker, serve, sqs-bridge) and their healthcheck."""
    p = sub.add_parser("worker", help="run a Celery worker that checks uploaded models")
    p.add_argument("--concurrency", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--hostname", help="Celery node name (default: celery@HOST)")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve the Prometheus metrics of all worker processes on PORT "
        "(default: TFCOMPAT_METRICS_PORT; 0: none)",
    )
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser(
        "serve",
        help="run the HTTP receiver for object-store events and webhooks",
        description="The HTTP receiver's event listener (--host/--port): /events/s3, "
        "/events/sns, /events/eventbridge, /webhooks/github, /webhooks/mlflow, /healthz. "
        "When TFCOMPAT_UI_ENABLED is set (with TFCOMPAT_UI_TOKEN or "
        "TFCOMPAT_UI_TRUSTED_HEADER), the fleet page /ui on a listener of its own "
        "(--ui-host/--ui-port); Prometheus metrics on TFCOMPAT_METRICS_PORT.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    p.add_argument(
        "--ui-host",
        default=None,
        help="address the fleet page's listener binds (default: TFCOMPAT_UI_HOST, 127.0.0.1)",
    )
    p.add_argument(
        "--ui-port",
        type=int,
        default=None,
        help="port of the fleet page's listener (default: TFCOMPAT_UI_PORT, 8081)",
    )
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on PORT (default: TFCOMPAT_METRICS_PORT; 0: none)",
    )
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("sqs-bridge", help="long-poll an SQS queue that S3 notifies; enqueue checks")
    p.add_argument("--queue-url", help="queue URL (default: TFCOMPAT_SQS_QUEUE_URL)")
    p.add_argument("--wait", type=int, default=20, help="long-poll seconds (default 20)")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on PORT (default: TFCOMPAT_METRICS_PORT; 0: none)",
    )
    p.set_defaults(func=cmd_sqs_bridge)

    p = sub.add_parser(
        "beat",
        help="run the reconciler's scheduler (Celery beat; exactly one per deployment)",
        description="Sends tfcompat.reconcile every TFCOMPAT_RECONCILE_INTERVAL seconds; "
        "the schedule persists in TFCOMPAT_BEAT_SCHEDULE_FILE.",
    )
    p.set_defaults(func=cmd_beat)

    p = sub.add_parser(
        "healthcheck",
        help="exit 0 when this container's tfcompat process is healthy (image HEALTHCHECK)",
        description="Probes the receiver's /healthz (and its fleet page's listener when "
        "TFCOMPAT_UI_ENABLED), pings the Celery worker node, or checks "
        "the bridge's broker and queue. Without ROLE, probes the tfcompat command this "
        "machine or container runs. Exit 0 healthy, 1 not, 2 nothing to probe.",
    )
    p.add_argument("role", nargs="?", choices=["serve", "worker", "sqs-bridge"], metavar="ROLE")
    p.add_argument("--url", help="receiver health URL (default: from its --host/--port)")
    p.add_argument("--node", help="worker node to ping (default: from its --hostname)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds (default 10)")
    p.set_defaults(func=functools.partial(cmd_healthcheck, parser_factory=build_parser))
