"""The configuration page (docs/operating/configuration.md) is generated from the Settings
class: it lists every setting, and a test fails as soon as the page's copy is stale."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from pydantic import Field

from worker.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "operating" / "configuration.md"


def settings_doc() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "settings_doc", ROOT / "tools" / "settings_doc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_page_settings_table_is_current() -> None:
    doc = settings_doc()
    page = PAGE.read_text()
    assert doc.updated(page) == page, "stale: run python tools/settings_doc.py --write"


def test_table_has_every_setting_with_its_default_once() -> None:
    table = settings_doc().table()
    for name in Settings.model_fields:
        assert table.count(f"| `TFCOMPAT_{name.upper()}` |") == 1
    assert (
        "| `TFCOMPAT_BROKER_URL` | `redis://127.0.0.1:6379/0` | Celery broker: `redis://`" in table
    )
    assert "| `TFCOMPAT_EVENTS_TOKEN` | (unset) |" in table and "(secret) |" in table


def test_a_new_setting_makes_the_page_stale() -> None:
    doc = settings_doc()

    class Grown(Settings):
        new_knob: int = Field(3, description="A knob added later")

    page = PAGE.read_text()
    assert "| `TFCOMPAT_NEW_KNOB` | `3` | A knob added later |" in doc.updated(page, Grown)
    assert doc.updated(page, Grown) != page
