"""Register a TensorFlow model directory as an MLflow model version, and point MLflow's
webhook at the receiver: the MLflow half of `make demo`, run with the venv's Python
(MLflow is a dev dependency; the worker itself speaks MLflow's REST API only).

    python tools/mlflow_register.py TRACKING_URI NAME MODEL_DIR \
        [--webhook URL --secret SECRET]

The directory is laid out as `mlflow.tensorflow.save_model` lays out a `tf.Module`
(a SavedModel under `tf2model/`, and its MLmodel), logged as a run's `model`
artifacts, and registered as a new version of NAME. Prints the version number.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

MLMODEL = """artifact_path: model
flavors:
  tensorflow:
    code: null
    model_type: tf2-module
    saved_model_dir: tf2model
mlflow_version: {version}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tracking_uri")
    parser.add_argument("name")
    parser.add_argument("model_dir", type=Path, help="a SavedModel directory")
    parser.add_argument("--webhook", help="receiver URL to create MLflow's webhook for")
    parser.add_argument("--secret", help="the webhook's HMAC secret")
    args = parser.parse_args()

    import mlflow
    from mlflow import MlflowClient
    from mlflow.entities.webhook import WebhookEvent

    mlflow.set_tracking_uri(args.tracking_uri)
    client = MlflowClient(args.tracking_uri)
    if args.webhook:
        client.create_webhook(
            name="tfcompat",
            url=args.webhook,
            events=[WebhookEvent("model_version", "created")],
            secret=args.secret,
        )
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model"
        shutil.copytree(args.model_dir, model / "tf2model")
        (model / "MLmodel").write_text(MLMODEL.format(version=mlflow.__version__))
        with mlflow.start_run() as run:
            mlflow.log_artifacts(str(model), artifact_path="model")
    if not client.search_registered_models(filter_string=f"name = '{args.name}'"):
        client.create_registered_model(args.name)
    version = client.create_model_version(
        args.name, f"{run.info.artifact_uri}/model", run_id=run.info.run_id
    )
    print(version.version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
