"""The SQS bridge: long-poll a queue that S3 notifies, enqueue tasks, then delete.

A message is deleted only after every event in it has been enqueued, so a
crash or a broker outage leaves it on the queue to be received again. A
message that cannot be parsed is left alone too: after the queue's
maxReceiveCount it moves to the dead-letter queue, where an operator can read
it. S3's test event is deleted.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from worker import metrics
from worker.errors import MalformedEvent
from worker.ingest.access import BucketAllowlist, refused_message
from worker.ingest.events import Enqueue, EventFilter, is_test_event, parse_queue_message
from worker.ingest.gate import refused_events

log = structlog.get_logger(__name__)


@dataclass
class BridgeStats:
    received: int = 0
    enqueued: int = 0
    ignored: int = 0
    malformed: int = 0
    refused: int = 0
    failed: int = 0


def handle_message(
    body: str,
    enqueue: Enqueue,
    event_filter: EventFilter,
    stats: BridgeStats,
    allowlist: BucketAllowlist | None = None,
) -> bool:
    """Enqueue the message's events; True when the message may be deleted. A message
    naming an object outside the allowlist enqueues nothing and stays, like a
    malformed one, for the dead-letter queue."""
    import json

    stats.received += 1
    try:
        events = parse_queue_message(body)
    except MalformedEvent as exc:
        try:
            if is_test_event(json.loads(body)):
                return True
        except ValueError:
            pass
        stats.malformed += 1
        metrics.EVENTS_REJECTED.labels("sqs", "malformed").inc()
        log.warning("sqs.malformed", error=str(exc), note="left for the dead-letter queue")
        return False
    outside = refused_events(allowlist, events, "sqs-bridge") if allowlist else []
    if outside:
        stats.refused += 1
        metrics.EVENTS_REJECTED.labels("sqs", "bucket").inc()
        log.warning(
            "sqs.refused_bucket",
            error=refused_message(outside),
            note="left for the dead-letter queue",
        )
        return False
    wanted = event_filter.select(events)
    metrics.EVENTS_RECEIVED.labels("sqs").inc(len(events))
    stats.ignored += len(events) - len(wanted)
    try:
        for event in wanted:
            enqueue(event)
    except Exception as exc:
        stats.failed += 1
        log.error("sqs.enqueue_failed", error=str(exc), note="message stays on the queue")
        return False
    stats.enqueued += len(wanted)
    return True


def run_bridge(
    sqs: Any,
    queue_url: str,
    enqueue: Enqueue,
    event_filter: EventFilter,
    *,
    stop: threading.Event | None = None,
    wait_seconds: int = 20,
    on_batch: Callable[[BridgeStats], None] | None = None,
    allowlist: BucketAllowlist | None = None,
) -> BridgeStats:
    """Poll until `stop` is set (SIGTERM/SIGINT set it when run from the CLI)."""
    stop = stop or threading.Event()
    stats = BridgeStats()
    log.info("sqs.start", queue=queue_url)
    while not stop.is_set():
        try:
            response = sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds
            )
        except Exception as exc:
            log.warning("sqs.receive_failed", error=str(exc))
            stop.wait(2)
            continue
        for message in response.get("Messages", []):
            body = message.get("Body", "")
            if handle_message(body, enqueue, event_filter, stats, allowlist):
                try:
                    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                except Exception as exc:
                    log.warning("sqs.delete_failed", error=str(exc))
        if on_batch:
            on_batch(stats)
    log.info("sqs.stop", **stats.__dict__)
    return stats


def install_stop_signals(stop: threading.Event) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
