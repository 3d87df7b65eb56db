"""infra/aws/tfcompat.yaml: what cfn-lint (run by `make lint-infra`) cannot judge, the
permissions. Each policy grants exactly what its process calls, on its own resources."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "aws" / "tfcompat.yaml"


@functools.cache
def resources() -> dict[str, Any]:
    template, errors = decode(str(TEMPLATE))
    assert not errors and template is not None
    found: dict[str, Any] = template["Resources"]
    return found


def properties(name: str) -> dict[str, Any]:
    props: dict[str, Any] = resources()[name]["Properties"]
    return props


def statements(policy: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for statement in properties(policy)["PolicyDocument"]["Statement"]:
        if "Fn::If" in statement:  # a conditional statement: the granting branch
            statement = statement["Fn::If"][1]
        found.append(statement)
    return found


def grants(policy: str) -> dict[str, list[str]]:
    """{action: [resource, ...]} of a policy's Allow statements (resources as written)."""
    granted: dict[str, list[str]] = {}
    for statement in statements(policy):
        assert statement["Effect"] == "Allow"
        actions = statement["Action"]
        for action in [actions] if isinstance(actions, str) else actions:
            granted.setdefault(action, []).append(repr(statement["Resource"]))
    return granted


def statement_resource(sid: str) -> Any:
    (found,) = [s for s in statements("WorkerPolicy") if s.get("Sid") == sid]
    return found["Resource"]


# Exactly the calls each process makes (worker/sinks/s3.py, worker/ingest/sqs_bridge.py,
# worker/pipeline/health.py), and where.
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (
            "WorkerPolicy",
            {
                "s3:GetObject": None,  # models and reports: the test below
                "s3:GetObjectVersion": "ModelsBucket.Arn}/*",
                "s3:GetObjectTagging": "ModelsBucket.Arn}/*",
                "s3:GetObjectVersionTagging": "ModelsBucket.Arn}/*",
                "s3:PutObjectTagging": "ModelsBucket.Arn}/*",
                "s3:PutObjectVersionTagging": "ModelsBucket.Arn}/*",
                "s3:ListBucket": "ModelsBucket",  # and a separate report bucket's, if any
                "s3:PutObject": "${ReportPrefix}*",
                "s3:DeleteObject": "${ReportPrefix}*",
            },
        ),
        (
            "BridgePolicy",
            {
                "sqs:ReceiveMessage": "EventQueue",
                "sqs:DeleteMessage": "EventQueue",
                "sqs:GetQueueAttributes": "EventQueue",
                "kms:Decrypt": "QueueKey",  # the queue is encrypted with the stack's key
            },
        ),
        ("ReceiverPolicy", {"s3:ListBucket": "ModelsBucket"}),
    ],
)
def test_policy_grants_only_what_its_process_calls(
    policy: str, expected: dict[str, str | None]
) -> None:
    granted = grants(policy)
    assert set(granted) == set(expected)
    for action, resource in expected.items():
        if resource is None:
            continue
        assert any(resource in where for where in granted[action]), (action, granted[action])
    assert not any("*" in action for action in granted)


def test_models_and_reports_are_readable_and_only_reports_writable() -> None:
    assert [w for w in grants("WorkerPolicy")["s3:GetObject"]] == [
        repr({"Fn::Sub": "${ModelsBucket.Arn}/*"}),
        repr(statement_resource("Reports")),
    ]
    (reports,) = [s for s in statements("WorkerPolicy") if s.get("Sid") == "Reports"]
    assert set(reports["Action"]) == {"s3:PutObject", "s3:GetObject", "s3:DeleteObject"}
    separate, own = reports["Resource"]["Fn::If"][1:]
    assert separate["Fn::Sub"].endswith(":::${ReportBucketName}/${ReportPrefix}*")
    assert own["Fn::Sub"] == "${ModelsBucket.Arn}/${ReportPrefix}*"


def test_only_this_buckets_notifications_reach_the_queue() -> None:
    (statement,) = properties("EventQueuePolicy")["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "s3.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage"
    assert "aws:SourceArn" in statement["Condition"]["ArnEquals"]
    assert statement["Condition"]["StringEquals"] == {
        "aws:SourceAccount": {"Ref": "AWS::AccountId"}
    }


def test_bucket_is_versioned_and_notifies_creations_and_removals() -> None:
    bucket = properties("ModelsBucket")
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    events = {c["Event"] for c in bucket["NotificationConfiguration"]["QueueConfigurations"]}
    assert events == {"s3:ObjectCreated:*", "s3:ObjectRemoved:*"}
    assert "EventQueuePolicy" in str(resources()["ModelsBucket"]["DependsOn"])


def test_queue_redrives_to_the_dead_letter_queue() -> None:
    redrive = properties("EventQueue")["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]}
    assert redrive["maxReceiveCount"] == {"Ref": "MaxReceiveCount"}


def test_queues_are_encrypted_with_the_stacks_rotated_key() -> None:
    key = properties("QueueKey")
    assert key["EnableKeyRotation"] is True
    for queue in ("EventQueue", "DeadLetterQueue"):
        assert properties(queue)["KmsMasterKeyId"] == {"Ref": "QueueKey"}, queue
        assert "SqsManagedSseEnabled" not in properties(queue)


def test_only_this_buckets_notifications_may_use_the_queue_key() -> None:
    (s3,) = [
        s
        for s in properties("QueueKey")["KeyPolicy"]["Statement"]
        if s.get("Principal") == {"Service": "s3.amazonaws.com"}
    ]
    assert set(s3["Action"]) == {"kms:GenerateDataKey", "kms:Decrypt"}
    assert "aws:SourceArn" in s3["Condition"]["ArnEquals"]
    assert s3["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    principals = [s["Principal"] for s in properties("QueueKey")["KeyPolicy"]["Statement"]]
    assert "*" not in principals and {"AWS": "*"} not in principals


def test_every_bucket_is_encrypted_private_and_the_models_bucket_logs_access() -> None:
    buckets = [n for n, r in resources().items() if r["Type"] == "AWS::S3::Bucket"]
    assert set(buckets) == {"ModelsBucket", "AccessLogBucket"}
    for name in buckets:
        bucket = properties(name)
        assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"], name
        assert all(bucket["PublicAccessBlockConfiguration"].values()), name
    logging = properties("ModelsBucket")["LoggingConfiguration"]
    assert logging["DestinationBucketName"] == {"Ref": "AccessLogBucket"}


def ingress(group: str) -> dict[int, list[Any]]:
    """{port: [source, ...]} of a security group, its own rules and separate ones."""
    rules = [dict(r) for r in properties(group).get("SecurityGroupIngress", [])]
    rules += [
        r["Properties"]
        for r in resources().values()
        if r["Type"] == "AWS::EC2::SecurityGroupIngress"
        and r["Properties"]["GroupId"] == {"Ref": group}
    ]
    opened: dict[int, list[Any]] = {}
    for rule in rules:
        assert rule["IpProtocol"] == "tcp" and rule["FromPort"] == rule["ToPort"], rule
        source = rule.get("CidrIp") or rule.get("SourceSecurityGroupId")
        opened.setdefault(rule["FromPort"], []).append(source)
    return opened


def test_the_receiver_opens_the_event_listener_and_the_page_proxy_never_the_page() -> None:
    opened = ingress("ReceiverSecurityGroup")
    assert opened == {
        8080: [{"Ref": "EventSenderCidr"}],
        4180: [{"Ref": "PageUserCidr"}],
        9808: [{"Ref": "MonitoringSecurityGroupId"}],
    }


def test_nothing_reaches_the_worker_and_the_bridge_but_monitoring() -> None:
    assert ingress("ProcessSecurityGroup") == {9808: [{"Ref": "MonitoringSecurityGroupId"}]}


def test_only_our_own_processes_reach_the_broker() -> None:
    ours = [{"Ref": "ReceiverSecurityGroup"}, {"Ref": "ProcessSecurityGroup"}]
    assert ingress("BrokerSecurityGroup") == {6379: ours, 5671: ours}
    (egress,) = properties("BrokerSecurityGroup")["SecurityGroupEgress"]
    assert egress["CidrIp"] == "255.255.255.255/32"  # the default allow-all is replaced


def test_every_skipped_scan_check_says_why() -> None:
    for name, resource in resources().items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert skip["id"].startswith("CKV") and len(skip["comment"].split()) >= 5, name
