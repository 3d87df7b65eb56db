"""Slack messages from real reports: who cannot load the model and why, the fix, and
Slack's limits held whatever the report's size."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from tests.sinks.documents import NEW_OP, NONDEFAULT, STRIPPED, UNSTRIPPED, checked
from tests.standins.slack import shape_errors
from worker.notify.messages import (
    MAX_BLOCKS,
    artifact_version,
    owner_message,
    reason,
    verdict,
)


@functools.cache
def _document(model: Path, version_id: str | None) -> dict[str, Any]:
    _, outcome, _ = checked(model, version_id=version_id)
    assert outcome.document is not None
    return {**outcome.document, "report": outcome.report}


def document(model: Path, version_id: str | None = "v1") -> dict[str, Any]:
    return copy.deepcopy(_document(model, version_id))


def texts(message: Any) -> str:
    out = []
    for block in message.blocks:
        if "text" in block:
            out.append(block["text"]["text"])
        out += [e["text"] for e in block.get("elements", [])]
    return "\n".join(out)


def fix_lines(body: str) -> list[str]:
    return body.split("*Fix*\n")[1].splitlines()


def test_new_op_names_the_op_and_one_upgrade_per_consumer_inside_the_range() -> None:
    message = owner_message([document(NEW_OP)], "Ranking")
    body = texts(message)
    assert message.blocks[0]["type"] == "header"
    assert message.blocks[0]["text"]["text"].endswith("Incompatible: ranking/m/1")
    assert "*serving-prod* (TF 2.15.1): op `DecodeWebP` not registered" in body
    assert "Serves in TensorFlow *2.20.0-2.21.x* (min 2.20.0)" in body
    fix = fix_lines(body)
    assert fix.count("• Upgrade `serving-prod` to TensorFlow >= 2.20.0") == 1
    assert "• Or re-export without op `DecodeWebP`" in fix
    assert "serving-canary" not in body.split("*Fix*")[0]  # it serves the model
    assert message.text.startswith("[Ranking] INCOMPATIBLE: s3://models/ranking/m/1/saved_model.pb")
    assert shape_errors(message.to_json()) == []


def test_unstripped_default_attrs_suggest_strip_default_attrs_first() -> None:
    body = texts(owner_message([document(UNSTRIPPED)], "Ranking"))
    fix = fix_lines(body)
    assert "strip_default_attrs=True" in fix[0]
    assert "unknown attr `VarHandleOp.allowed_devices`" in body


def test_a_naming_attr_is_dropped_not_set_back_to_a_default() -> None:
    body = texts(owner_message([document(NONDEFAULT)], "Ranking"))
    assert "Re-export without attr `VarHandleOp.debug_name`" in body
    assert "`VarHandleOp.debug_name` at its default" not in body


def test_non_default_attr_suggests_leaving_it_at_its_default() -> None:
    body = texts(owner_message([document(NONDEFAULT)], "Ranking"))
    assert "type mismatch at `TensorListGetItem`" in body
    assert "• Or export with `TensorListGetItem.Tshape` at its default" in fix_lines(body)


def test_compatible_model_lists_nobody() -> None:
    body = texts(owner_message([document(STRIPPED)], "Ranking"))
    assert "Cannot serve it" not in body and "*Fix*" not in body


def test_fixes_come_from_data_not_from_message_text() -> None:
    doc = document(NEW_OP)
    for artifact in doc["artifacts"]:
        for consumer in artifact["consumers"]:
            for finding in consumer["findings"]:
                finding["message"] = "upgrade the consumer to >= 9.9.9"
    fix = fix_lines(texts(owner_message([doc], "Ranking")))
    assert "• Upgrade `serving-prod` to TensorFlow >= 2.20.0" in fix
    assert not any("9.9.9" in line for line in fix)


def test_a_model_that_loads_and_fails_every_request_cannot_be_served() -> None:
    doc = document(STRIPPED)
    consumer = doc["artifacts"][0]["consumers"][0]
    consumer["serves"] = False
    consumer["findings"] = [
        {
            "code": "resource.uninitialized",
            "severity": "error",
            "stage": "request",
            "message": "reads variables the restore never fills",
            "op": "VarHandleOp",
            "attr": None,
            "fix": {"kind": "use_model_export", "loader": "saved-model-v2"},
        }
    ]
    body = texts(owner_message([doc], "Ranking"))
    assert "*Cannot serve it*" in body
    assert "variables the restore never fills (requests fail)" in body
    assert "model.export()" in fix_lines(body)[0]


# The few words a finding becomes.
def test_reasons() -> None:
    assert reason({"code": "op.custom", "op": "MyOp", "message": ""}) == (
        "custom op `MyOp` (needs its library)"
    )
    assert reason({"code": "attr.unknown", "op": "A", "attr": "b", "message": "x"}) == (
        "unknown attr `A.b`"
    )
    assert reason({"code": "something.new", "message": ""}) == "something new"


def test_verdict_changes_when_a_consumer_stops_serving() -> None:
    doc = document(NEW_OP)
    changed = copy.deepcopy(doc)
    changed["artifacts"][0]["consumers"][1]["serves"] = False
    assert verdict(doc) == verdict(copy.deepcopy(doc))
    assert verdict(doc) != verdict(changed)


def test_artifact_version_is_the_version_id_else_the_etag() -> None:
    assert artifact_version(document(NEW_OP)) == "s3://models/ranking/m/1/saved_model.pb@v1"
    unversioned = document(NEW_OP, version_id=None)
    etag = unversioned["object"]["etag"]
    assert (
        etag and artifact_version(unversioned) == f"s3://models/ranking/m/1/saved_model.pb@{etag}"
    )


def test_huge_report_stays_within_slack_limits() -> None:
    doc = document(NEW_OP)
    consumer = doc["artifacts"][0]["consumers"][0]
    consumer["findings"] = [
        {**consumer["findings"][0], "op": f"Op{i}" * 20, "message": "x" * 3000} for i in range(40)
    ]
    doc["artifacts"][0]["consumers"] = [
        {**consumer, "name": f"consumer-{i}" * 10} for i in range(200)
    ]
    doc["object"]["key"] = "k/" * 400 + "saved_model.pb"
    message = owner_message([doc], "Ranking" * 100)
    assert shape_errors(message.to_json()) == []
    assert "…and 192 more" in texts(message)


def test_many_models_coalesce_into_one_message_within_limits() -> None:
    docs = []
    for i in range(30):
        doc = document(NEW_OP)
        doc["object"]["key"] = f"ranking/m{i}/saved_model.pb"
        docs.append(doc)
    message = owner_message(docs, "Ranking", "fleet change: serving-prod now 2.12")
    assert len(message.blocks) <= MAX_BLOCKS
    assert shape_errors(message.to_json()) == []
    body = texts(message)
    assert message.blocks[0]["text"]["text"].endswith("30 models need attention")
    assert "ranking/m0/saved_model.pb" in body and "…and 10 more models" in body
    assert "fleet change: serving-prod now 2.12" in body


def test_a_fixed_copy_the_worker_wrote_comes_first_among_the_fixes() -> None:
    doc = document(UNSTRIPPED)
    doc["fixed_copies"] = [
        {
            "consumer": "legacy-edge",
            "url": "s3://models/tfcompat-fixed/ranking/m/1/for-legacy-edge/saved_model.pb",
            "status": "compatible",
            "report": "tfcompat-reports/x.json",
            "rewrites": ["VarHandleOp.allowed_devices"],
        }
    ]
    message = owner_message([doc], "Ranking")
    fix = fix_lines(texts(message))
    assert fix[0] == (
        "• `legacy-edge` can use this fixed copy: "
        "`s3://models/tfcompat-fixed/ranking/m/1/for-legacy-edge/saved_model.pb` (compatible)"
    )
    assert shape_errors(message.to_json()) == []
