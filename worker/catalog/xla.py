"""What each release's XlaCallModule runs (`data/xla_call_module.json`).

Written by tools/xla/build_table.py (format `tfcompat-xla-call-module/1`): per release,
the `version` values a run accepts, whether a platform list without 'CPU' fails it and
whether disabled_checks=['platform'] lifts that, the versions where an empty platform
list fails, and the newest StableHLO stamp it deserializes, each with the release's own
error text. A release is matched by its minor (the patch releases of a minor share the
kernel as far as the catalog knows); one the file does not hold has no answer (None).
"""

from __future__ import annotations

import json
from typing import Any

from worker.catalog.sources import Source, source_of
from worker.model.xla import XlaCallModuleSupport, version_key

XLA_CALL_MODULE_FORMAT = "tfcompat-xla-call-module/1"


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


DEFAULT_ORDER = ("version", "module", "platform")  # XlaCallModuleLoader::LoadModule, then the op


def _order(measured: list[dict[str, Any]]) -> tuple[str, ...]:
    """The checks first to last, from which failed first when two were wrong at once."""
    wins = dict.fromkeys(DEFAULT_ORDER, 0)
    for case in measured:
        if len(case["wrong"]) == 2 and case["first"] in case["wrong"]:
            wins[case["first"]] += 1
    return tuple(sorted(DEFAULT_ORDER, key=lambda c: (-wins[c], DEFAULT_ORDER.index(c))))


def _support(release: str, row: dict[str, Any]) -> XlaCallModuleSupport:
    checked = [c for c in row["platform_check"].values() if c["checked"]]
    refused = row.get("stablehlo_refused") or {}
    errors = row.get("version_errors", {})
    return XlaCallModuleSupport(
        release=release,
        attrs=frozenset(row["op_attrs"]),
        versions=tuple(row["versions"]),
        version_below_error=errors.get("below", ""),
        version_above_error=errors.get("above", ""),
        platform_error=checked[0]["error"] if checked and "platforms" in row["op_attrs"] else "",
        disabled_checks_honoured=bool(row["disabled_checks_platform_honoured"]),
        empty_platforms_fail_at=tuple(row["empty_platforms_fail_at"]),
        stablehlo_refused=refused.get("stamp"),
        stablehlo_newest=row.get("stablehlo_newest"),
        stablehlo_error=refused.get("error", "")
        or (row.get("rich_refused") or {}).get("error", ""),
        rich_refused=(row.get("rich_refused") or {}).get("stamp"),
        rich_newest=row.get("rich_newest"),
        check_order=_order(row.get("check_order", [])),
    )


class ShippedXlaCallModule:
    """Minor -> what its measured release's XlaCallModule runs."""

    def __init__(self, data: bytes) -> None:
        doc = json.loads(data)
        if doc.get("format") != XLA_CALL_MODULE_FORMAT:
            raise ValueError(f"xla_call_module: unknown format {doc.get('format')!r}")
        self.source: Source = source_of(doc, "xla_call_module.json")
        self._by_minor: dict[str, XlaCallModuleSupport] = {}
        for release, row in sorted(doc["releases"].items(), key=lambda kv: version_key(kv[0])):
            self._by_minor[_minor(release)] = _support(release, row)

    def support(self, release: str) -> XlaCallModuleSupport | None:
        return self._by_minor.get(_minor(release))

    def releases(self) -> tuple[XlaCallModuleSupport, ...]:
        """Every measured release, oldest first."""
        return tuple(sorted(self._by_minor.values(), key=lambda s: version_key(s.release)))
