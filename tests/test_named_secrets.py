"""Secrets that owners.yaml names by variable: found in settings, environment or the
settings file; only TFCOMPAT_* names; never shown by `tfcompat settings`."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.settings import Settings, masked, named_secret, settings_key


def test_a_settings_field_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TFCOMPAT_SLACK_WEBHOOK_URL", "https://from-env")
    settings = Settings(slack_webhook_url="https://given")  # type: ignore[arg-type]
    secret = named_secret(settings, "TFCOMPAT_SLACK_WEBHOOK_URL")
    assert secret is not None and secret.get_secret_value() == "https://given"


def test_other_names_come_from_the_environment_then_the_settings_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings_file = tmp_path / "tfcompat.env"
    settings_file.write_text("TFCOMPAT_SLACK_WEBHOOK_SEARCH=https://from-file\n")
    monkeypatch.setenv("TFCOMPAT_SETTINGS_FILE", str(settings_file))
    monkeypatch.setenv("TFCOMPAT_SLACK_WEBHOOK_RANKING", "https://from-env")
    ranking = named_secret(Settings(), "TFCOMPAT_SLACK_WEBHOOK_RANKING")
    search = named_secret(Settings(), "TFCOMPAT_SLACK_WEBHOOK_SEARCH")
    assert ranking is not None and ranking.get_secret_value() == "https://from-env"
    assert search is not None and search.get_secret_value() == "https://from-file"
    assert named_secret(Settings(), "TFCOMPAT_SLACK_WEBHOOK_NOBODY") is None


def test_only_tfcompat_names_are_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    assert named_secret(Settings(), "AWS_SECRET_ACCESS_KEY") is None


def test_settings_show_secrets_masked_and_named_ones_not_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TFCOMPAT_SLACK_WEBHOOK_RANKING", "https://hooks.example/secret")
    shown = masked(Settings(slack_webhook_url="https://hooks.example/x"))  # type: ignore[arg-type]
    assert shown["TFCOMPAT_SLACK_WEBHOOK_URL"] == "********"
    assert "hooks.example" not in str(shown)


def test_settings_that_differ_only_in_a_secret_have_different_keys() -> None:
    a = Settings(slack_webhook_url="https://a")  # type: ignore[arg-type]
    b = Settings(slack_webhook_url="https://b")  # type: ignore[arg-type]
    assert settings_key(a) != settings_key(b)
    assert settings_key(a) == settings_key(Settings(slack_webhook_url="https://a"))  # type: ignore[arg-type]
