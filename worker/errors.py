"""The small error tree every layer speaks.

Vendor errors (botocore, redis, HTTP clients, protobuf) stop at the adapter that
met them and come out as one of these, so tasks and the CLI decide what to do
from the type alone: a `TransientError` is worth retrying, everything else is
final. Messages are one line a person can act on.
"""

from __future__ import annotations


class TfcompatError(Exception):
    """Base of every error tfcompat raises on purpose."""


class InvalidArtifact(TfcompatError):
    """The bytes are not a readable TensorFlow artifact (truncated, wrong magic,
    hostile archive, ...). Permanent: retrying reads the same bytes."""


class UnsupportedArtifact(InvalidArtifact):
    """A path or object that is not a format tfcompat reads."""


class LimitExceeded(InvalidArtifact):
    """The artifact exceeds a safety cap (archive members, expansion ratio,
    nesting, declared lengths). Permanent."""


class ConfigError(TfcompatError):
    """Fleet, owners, manifest or settings are wrong; the message points at
    the file and the entry."""


class UnknownRelease(ConfigError):
    """A TensorFlow release the catalog does not know."""


class TransientError(TfcompatError):
    """A failure that may pass: throttling, 5xx, connection reset, broker
    hiccup. Tasks retry these with backoff."""


class BrokerUnavailable(TransientError):
    """The broker (or the Redis that holds claims) did not take a task or answer in
    time. The receiver answers 503 and the sender retries; nothing was acknowledged."""


class NotFound(TfcompatError):
    """The object or file named does not exist (or no longer exists)."""


class Superseded(TfcompatError):
    """The object was written again since the event that named it: what the event
    named can no longer be read, and the newer write's own event will follow."""


class MalformedEvent(TfcompatError):
    """An event body that is not what its source sends."""


class DestinationBroken(TfcompatError):
    """The webhook or channel will not accept messages as configured (404, 410,
    invalid_token, channel_not_found, unset secret). Retrying does not help."""


class SnsRejected(TfcompatError):
    """A POST that is not a genuine, fresh SNS message for one of our topics.

    Permanent for that body: the caller answers 403 (400 for a body that is not
    an SNS document at all) and does not act on it."""


class CertificateUnavailable(SnsRejected, TransientError):
    """The signing certificate could not be fetched or read.

    Transient: the message may be genuine and the fetch may work next time, so
    the caller answers 503 and SNS retries the delivery under its retry policy."""


class SourceRefused(TfcompatError):
    """The read rule (`worker.formats.access`) does not let the worker read this model
    source: outside `TFCOMPAT_BUCKETS`, a local path outside `TFCOMPAT_LOCAL_ROOTS`, a
    scheme the worker never reads. Permanent: the message names the setting to change."""


class DeadlineExceeded(TransientError):
    """A registry check spent longer than `TFCOMPAT_CHECK_DEADLINE` reading its model.
    Transient: a slow server may answer faster on the next try."""


class VersionBusy(TransientError):
    """Another worker is checking the same model version right now (its lock is held).

    Transient: the task waits and runs after that check, which may have left nothing
    to write; one check per version at a time keeps every tag value written once."""


class Unrecheckable(TfcompatError):
    """A fleet change could not re-check a model version: its model cannot be read or
    is refused. Permanent until someone fixes the version; the work goes to the
    dead-letter list with this message as its cause."""
