"""Plain-text renderings for the terminal (inspect, check, fleet list).

Kept apart from the commands' argument handling: these functions take the
report documents and return text, so they are tested without a terminal.
"""

from __future__ import annotations

from typing import Any

from worker.compat.ranges import tag_value


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _versions(v: dict[str, Any] | None) -> str:
    if not v:
        return "no VersionDef"
    text = f"producer {v['producer']} min-consumer {v['min_consumer']}"
    if v["bad_consumers"]:
        text += " bad-consumers " + ",".join(str(b) for b in v["bad_consumers"])
    return text


def _graph_lines(graph: dict[str, Any], usage: dict[str, Any], indent: str) -> list[str]:
    lines = [
        f"{indent}GraphDef: {_versions(graph['versions'])}; {graph['node_count']} nodes"
        + (
            f", {len(graph['functions'])} functions ({graph['library_node_count']} nodes)"
            if graph["functions"]
            else ""
        )
    ]
    ops = [op for op, u in usage.items() if not u["is_function"]]
    lines.append(f"{indent}ops ({len(ops)}):")
    for op in ops:
        u = usage[op]
        count = str(u["nodes"])
        if u["library_nodes"]:
            count += f"+{u['library_nodes']} in functions"
        attrs = []
        for name, state in u.get("attrs", {}).items():
            flag = {True: "=default", False: "", None: ""}[state["equals_default"]]
            attrs.append(f"{name}{flag}")
        lines.append(f"{indent}  {op} x{count}" + (f"  [{', '.join(attrs)}]" if attrs else ""))
    return lines


def _tflite_lines(model: dict[str, Any], ops: list[dict[str, Any]]) -> list[str]:
    runtime = model["min_runtime_version"]
    head = f"  TFLite schema {model['schema_version']}"
    if model["description"]:
        head += f", converter's note {model['description']!r}"
    if runtime is not None:
        head += f", min_runtime_version {runtime or '(empty)'} (no runtime checks it)"
    lines = [
        head,
        f"  {model['subgraphs']} subgraph(s), {model['operators']} operators, "
        f"{model['tensors']} tensors, {model['buffers']} buffers",
    ]
    if model["signatures"]:
        lines.append(f"  signatures: {', '.join(model['signatures'])}")
    if model.get("features"):
        lines.append(f"  file features: {', '.join(model['features'])}")
    lines.append(f"  ops ({len(ops)}):")
    for op in ops:
        what = f"code {op['code']}"
        if op["custom"]:
            what = "Select TF op" if op["flex"] else "custom op"
        tensors = ", ".join(op["input_types"])
        if op["per_channel"]:
            tensors += ", per-channel quantized"
        if op["max_rank"] > 4:
            tensors += f", rank {op['max_rank']}"
        lines.append(
            f"    {op['name']} v{op['version']} ({what}) x{op['operators']}"
            + (f"  [{tensors}]" if tensors else "")
        )
    return lines


def render_inspect(documents: list[dict[str, Any]]) -> str:
    out: list[str] = []
    for doc in documents:
        out.append(
            f"{doc['path']}  ({doc['format']}, {_size(doc['size'])}, sha256 {doc['sha256'][:12]})"
        )
        usage_by_tags = {tuple(u["tags"]): u["ops"] for u in doc.get("op_usage", [])}
        if doc.get("saved_model_schema_version") is not None:
            out.append(f"  SavedModel schema version {doc['saved_model_schema_version']}")
        for mg in doc["meta_graphs"]:
            out.append(
                f"  MetaGraph [{', '.join(mg['tags'])}]: written by TensorFlow "
                f"{mg['tensorflow_version'] or '?'} ({mg['tensorflow_git_version'] or '?'})"
                f", stripped_default_attrs={str(mg['stripped_default_attrs']).lower()}"
                f"{', TF2 object graph' if mg['has_object_graph'] else ''}"
            )
            if mg["signatures"]:
                out.append(f"    signatures: {', '.join(mg['signatures'])}")
            out += _graph_lines(mg["graph"], usage_by_tags.get(tuple(mg["tags"]), {}), "    ")
        if doc.get("graph"):
            out += _graph_lines(doc["graph"], usage_by_tags.get((), {}), "  ")
        if doc.get("keras"):
            out += _keras_lines(doc["keras"])
        if doc.get("tflite"):
            out += _tflite_lines(doc["tflite"], doc.get("tflite_ops", []))
        ckpt = doc.get("checkpoint")
        if ckpt:
            label = "variables" if doc["format"] == "savedmodel" else "checkpoint"
            out.append(
                f"  {label}: bundle {_versions(ckpt['versions'])}, {ckpt['tensors']} "
                f"tensors, {_size(ckpt['tensor_bytes'])} in {ckpt['num_shards']} shard(s)"
            )
        if doc.get("fixable_releases"):
            out.append(
                f"  fixable for: {', '.join(doc['fixable_releases'])} "
                "(fail as it is; `tfcompat fix --for tf==X` writes a copy they serve)"
            )
        for note in doc.get("notes", []):
            out.append(f"  note: {note}")
        out.append("")
    return "\n".join(out)


def _keras_lines(keras: dict[str, Any]) -> list[str]:
    container = ".keras archive" if keras["container"] == "keras-zip" else "H5 model"
    backend = f", backend {keras['backend']}" if keras["backend"] else ""
    lines = [
        f"  Keras {container}: written by Keras {keras['keras_version'] or '?'}{backend}, "
        f"{keras['model_class'] or '?'} of {len(keras['layers'])} layer(s)"
    ]
    classes: dict[str, int] = {}
    for layer in keras["layers"]:
        classes[layer["class_name"]] = classes.get(layer["class_name"], 0) + 1
    lines.append(
        "    layers: " + ", ".join(f"{c} x{n}" if n > 1 else c for c, n in classes.items())
    )
    for layer in keras["layers"]:
        if layer.get("code"):
            layout = layer["code"]["layout"] or "an unknown layout"
            lines.append(f"    Lambda '{layer['name']}': marshalled Python bytecode ({layout})")
    return lines


# The loader the catalog ranges are computed with, as it applies to each format.
RANGE_LOADER = {
    "graphdef": "graph-import",
    "checkpoint": "checkpoint",
    "metagraph": "import-meta-graph",
    "keras": "keras-load-model",
    "keras-h5": "keras-load-model",
    "tflite": "tf.lite.Interpreter",
}
# Information shown on the terminal anyway: it says why an answer is unknown.
SHOWN_INFO = frozenset(
    {"registry.unavailable", "tflite.runtime-unmeasured", "tflite.feature-unmeasured"}
)


def _consumer_mark(consumer: dict[str, Any]) -> str:
    """What happens in this consumer, as a word a person scans for."""
    loads, serves = consumer.get("loads"), consumer.get("serves", consumer.get("loads"))
    if loads is False:
        return "LOAD FAILS"
    if serves is False:
        errors = [f for f in consumer.get("findings") or [] if f.get("severity") == "error"]
        if errors and all(f.get("stage") == "policy" for f in errors):
            return "POLICY REFUSES"
        return "REQUESTS FAIL"
    if loads is None or serves is None:
        return "unknown"
    return "at risk" if consumer.get("status") == "at-risk" else "serves"


def render_check(reports: list[dict[str, Any]], checked: str | None = None) -> str:
    """The verdicts for a terminal: errors and warnings with their fix; information
    (the forward window, attrs a release ignores harmlessly) only in --json, except
    for a consumer whose answer is unknown, where the notes say why.

    `checked`: what the releases were computed over, said when no consumer was given
    (the status word is then not a verdict on anyone's fleet)."""
    from worker.notify.fixes import fix_text, plain

    out: list[str] = []
    for r in reports:
        head = f"{r['path']}  [{r['format']}]"
        if r["error"]:
            out += [f"{head}  INVALID", f"  error: {r['error']}", ""]
            continue
        ranges = tag_value(r["compatible_releases"])
        loader = RANGE_LOADER.get(r["format"], "saved-model-v1")
        serves_in = f"releases that serve it ({loader}): {ranges}" + (
            f" (min {r['min_release']})" if r["min_release"] else ""
        )
        if not r["consumers"] and checked:
            out.append(f"{head}  no consumer given: {serves_in}; checked {checked}")
        else:
            out.append(f"{head}  {r['status'].upper()}  {serves_in}")
        for note in r.get("range_notes") or []:
            out.append(f"  note: {note}")
        for c in r["consumers"]:
            runtime = c.get("runtime")
            tf = (
                f"TensorFlow {c['tensorflow']}"
                if c["tensorflow"]
                else f"{runtime['family']} {runtime['version']}"
                if runtime
                else "custom build"
            )
            fixable = {
                True: "  [fixable: tfcompat fix writes a copy it serves]",
                False: "  [no safe rewrite fixes it]",
            }.get(c.get("fixable"), "")
            out.append(f"  {_consumer_mark(c):13}  {c['name']} ({tf}, {c['loader']}){fixable}")
            # an unknown answer rests on its notes (what was not measured): show them
            unknown = c.get("status") == "unknown"
            shown = [
                f
                for f in c["findings"]
                if unknown or f["severity"] != "info" or f["code"] in SHOWN_INFO
            ]
            fixes: list[str] = []
            for f in shown:
                out.append(f"                 {f['severity']} {f['code']}: {f['message']}")
                fix = fix_text(f.get("fix"), c["name"], plain)
                if fix and fix not in fixes:
                    fixes.append(fix)
            for fix in fixes:
                out.append(f"                 fix: {fix}")
            hidden = len(c["findings"]) - len(shown)
            if hidden:
                out.append(f"                 ({hidden} note{'s' if hidden > 1 else ''} in --json)")
        out.append("")
    return "\n".join(out)


def render_fleet(fleet: Any) -> str:
    rows = [("NAME", "ENV", "TENSORFLOW", "GRAPH-DEF", "LOADER", "REGISTRY", "OWNERS")]
    notes = []
    for c in fleet.consumers:
        rows.append(
            (
                c.name,
                c.environment or "-",
                c.tensorflow or (c.tflite.label() if c.tflite else "custom"),
                str(c.graph_def_version) if not standalone(c) else "-",
                str(c.loader) if not standalone(c) else "-",
                _registry(c),
                ",".join(c.owners) or "-",
            )
        )
        ban = fleet.policy.banned(c.graph_def_version)
        if ban:
            notes.append(
                f"! {c.name} runs {ban.label}, banned by policy: {ban.reason} "
                f"-> owners {','.join(c.owners) or '-'}: upgrade as soon as possible"
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    return "\n".join(lines + notes) + "\n"


def standalone(consumer: Any) -> bool:
    return consumer.tflite is not None and consumer.tflite.standalone


def _registry(consumer: Any) -> str:
    if standalone(consumer):
        table = consumer.tflite.table
        return f"TFLite table {table.name}" if table else "no measured TFLite table"
    return consumer.registry.source if consumer.registry else "none (versions only)"


def render_impact(impact: Any) -> str:
    lines = [
        f"{impact.examined} model(s) examined, {impact.checks} check(s) run"
        + (f", {impact.recorded} verdict(s) as recorded at upload" if impact.recorded else "")
        + (f" for {', '.join(impact.rechecked)}" if impact.rechecked else "")
        + (f"; removed: {', '.join(impact.removed)}" if impact.removed else "")
    ]
    if not impact.models:
        lines.append("no model changes verdict")
    for changed in impact.models:
        m = changed.model
        lines.append(f"{m.location}  {m.status} -> {changed.status_after}")
        for c in changed.changes:
            lines.append(f"  {c.consumer}: {c.before or '(new)'} -> {c.after or '(removed)'}")
            for reason in c.reasons[:2]:
                lines.append(f"      {reason}")
    breaking = sum(len(m.newly_broken) for m in impact.models)
    if breaking:
        lines.append(f"{breaking} consumer verdict(s) become unloadable")
    return "\n".join(lines) + "\n"
