"""Outbound calls are bounded: an MLflow response body never read past its cap (a
server that ignores `Range`, one that sends no length), a check's reads stopped at its
deadline, and every AWS client under the same timeouts and retries, SQS at its own
endpoint. The HTTP servers are real sockets on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from worker.errors import DeadlineExceeded, LimitExceeded, TransientError
from worker.formats.source import BytesSource, DeadlineTree, MappingTree
from worker.settings import Settings
from worker.sinks.aws import aws_client
from worker.sinks.mlflow import MlflowRegistry, ProxiedTree, ResponseTooLarge
from worker.sinks.s3_client import s3_client

CAP = 64 * 1024
FILE = bytes(range(256)) * 1024  # 256 KiB, four times the cap


class IgnoresRange(BaseHTTPRequestHandler):
    """An artifact proxy that answers every GET with the whole file (200), with or
    without a Content-Length."""

    send_length = True

    def do_GET(self) -> None:
        if "mlflow-artifacts/artifacts?" in self.path:
            body = b'{"files": [{"path": "model.pb", "is_dir": false, "file_size": %d}]}' % len(
                FILE
            )
        else:
            body = FILE
        self.send_response(200)
        if self.send_length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class NoLength(IgnoresRange):
    send_length = False


def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=[IgnoresRange, NoLength], ids=["content-length", "no-length"])
def whole_file_server(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from serve(request.param)


def test_a_server_that_ignores_range_is_not_read_past_the_cap(whole_file_server: str) -> None:
    registry = MlflowRegistry(whole_file_server, max_response=CAP)
    tree = ProxiedTree(registry, "1/run/artifacts/model")
    source = tree.open("model.pb")
    with pytest.raises(ResponseTooLarge, match="TFCOMPAT_READ_MAX_RESPONSE_BYTES"):
        source.read_at(0, 16)
    assert registry.bytes_read == 0  # nothing kept


def test_the_cap_is_permanent_not_transient() -> None:
    assert issubclass(ResponseTooLarge, LimitExceeded)
    assert not issubclass(ResponseTooLarge, TransientError)


def test_a_whole_file_under_the_cap_is_read(whole_file_server: str) -> None:
    registry = MlflowRegistry(whole_file_server, max_response=len(FILE))
    source = ProxiedTree(registry, "1/run/artifacts/model").open("model.pb")
    assert source.read_at(1000, 16) == FILE[1000:1016]


def test_reads_stop_at_the_deadline() -> None:
    now = [0.0]
    tree = DeadlineTree(
        MappingTree("m", {"a": BytesSource("a", b"abcdef")}), 10, clock=lambda: now[0]
    )
    source = tree.open("a")
    assert source.read_at(0, 2) == b"ab"
    now[0] = 11.0
    with pytest.raises(DeadlineExceeded, match="TFCOMPAT_CHECK_DEADLINE"):
        source.read_at(2, 2)
    with pytest.raises(DeadlineExceeded):
        tree.names()


SETTINGS = Settings(
    s3_endpoint_url="http://127.0.0.1:9/s3",
    sqs_endpoint_url="http://127.0.0.1:9/sqs",
    aws_connect_timeout=2.5,
    aws_read_timeout=7.0,
    aws_max_attempts=4,
    aws_retry_mode="adaptive",
)


@pytest.mark.parametrize(
    ("client", "endpoint"),
    [
        (lambda: s3_client(SETTINGS), "http://127.0.0.1:9/s3"),
        (lambda: aws_client("sqs", SETTINGS), "http://127.0.0.1:9/sqs"),
        (
            lambda: aws_client("sagemaker", SETTINGS),
            "https://api.sagemaker.us-east-1.amazonaws.com",
        ),
    ],
    ids=["s3", "sqs", "sagemaker"],
)
def test_every_aws_client_is_bounded_at_its_own_endpoint(client: object, endpoint: str) -> None:
    built = client()  # type: ignore[operator]
    config = built.meta.config
    assert built.meta.endpoint_url == endpoint
    assert (config.connect_timeout, config.read_timeout) == (2.5, 7.0)
    assert config.retries == {"total_max_attempts": 4, "mode": "adaptive"}
