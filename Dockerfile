# tfcompat-worker: one image for the three processes, chosen by the command.
#   docker run IMAGE worker --concurrency 2      Celery worker (metrics on :9808)
#   docker run IMAGE serve --host 0.0.0.0        HTTP receiver (events :8080, page :8081)
#   docker run IMAGE sqs-bridge                  SQS -> Celery bridge
# HEALTHCHECK runs `tfcompat healthcheck`, which probes whichever of them the container runs.

# The base image by its full tag (a patch release, not a moving 3.11), the same in both
# stages. Pin its digest too where you build (`FROM python:3.11.14-slim-bookworm@sha256:...`,
# the digest your registry mirror serves): it cannot be known before that pull.

# --- build: the project's wheel and a virtual environment with its runtime dependencies
FROM python:3.11.14-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY worker ./worker
# The sqs extra: kombu's SQS transport, for TFCOMPAT_BROKER_URL=sqs://
RUN python -m venv /opt/venv \
    && /opt/venv/bin/pip wheel --no-deps --wheel-dir /dist . \
    && /opt/venv/bin/pip install "$(find /dist -name 'tfcompat_worker-*.whl')[sqs]"

# --- runtime: the slim base, the virtual environment, the example config; no compilers
FROM python:3.11.14-slim-bookworm AS runtime
LABEL org.opencontainers.image.title="tfcompat-worker" \
      org.opencontainers.image.description="Checks TensorFlow models against the TensorFlow releases that will serve them, at upload time." \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 tfcompat \
    && useradd --system --uid 10001 --gid tfcompat --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin tfcompat
COPY --from=build /opt/venv /opt/venv
COPY config/fleet.yaml config/owners.yaml /etc/tfcompat/
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    TFCOMPAT_FLEET=/etc/tfcompat/fleet.yaml \
    TFCOMPAT_OWNERS=/etc/tfcompat/owners.yaml \
    TFCOMPAT_METRICS_PORT=9808
WORKDIR /tmp
USER 10001:10001
# 8080 events (public), 8081 the fleet page (behind its proxy only), 9808 /metrics
EXPOSE 8080 8081 9808
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=20s --start-period=30s --retries=3 \
    CMD ["tfcompat", "healthcheck", "--timeout", "10"]
ENTRYPOINT ["tfcompat"]
CMD ["worker"]
