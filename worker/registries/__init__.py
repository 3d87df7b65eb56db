"""Model registries (MLflow Model Registry, SageMaker Model Registry): pure logic.

Webhook and event payloads to jobs, `MLmodel` reading, and the tag policy. The
registry clients live in `worker.sinks`, the HTTP route in `worker.ingest`.
"""
