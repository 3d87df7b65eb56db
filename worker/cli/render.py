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


def render_check(reports: list[dict[str, Any]]) -> str:
    out: list[str] = []
    for r in reports:
        ranges = tag_value(r["compatible_releases"])
        out.append(
            f"{r['path']}  [{r['format']}]  {r['status'].upper()}"
            + (
                ""
                if r["error"]
                else f"  releases: {ranges}"
                + (f" (min {r['min_release']})" if r["min_release"] else "")
            )
        )
        if r["error"]:
            out.append(f"  error: {r['error']}")
        for c in r["consumers"]:
            mark = "loads" if c["loads"] else "FAILS"
            fixable = {
                True: "  [fixable: tfcompat fix writes a copy it serves]",
                False: "  [no safe rewrite fixes it]",
            }.get(c.get("fixable"), "")
            out.append(
                f"  {mark:5}  {c['name']} (TensorFlow {c['tensorflow'] or 'custom'}, "
                f"GraphDef {c['graph_def_version']}, {c['loader']}){fixable}"
            )
            for f in c["findings"]:
                out.append(f"         {f['severity']} {f['code']}: {f['message']}")
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
                c.tensorflow or "custom",
                str(c.graph_def_version),
                str(c.loader),
                c.registry.source if c.registry else "none (versions only)",
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


def render_impact(impact: Any) -> str:
    lines = [
        f"{impact.examined} model(s) examined, {impact.checks} check(s) run"
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
