"""Secrets as files (TFCOMPAT_SECRETS_DIR): a mounted Kubernetes Secret or Compose secrets
give the settings their values, so no secret has to sit in a process's environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.errors import ConfigError
from worker.settings import load_settings, named_secret


@pytest.fixture
def secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("TFCOMPAT_EVENTS_TOKEN", "TFCOMPAT_BROKER_URL", "TFCOMPAT_SETTINGS_FILE"):
        monkeypatch.delenv(name, raising=False)
    directory = tmp_path / "secrets"
    directory.mkdir()
    monkeypatch.setenv("TFCOMPAT_SECRETS_DIR", str(directory))
    return directory


def kubernetes_mount(directory: Path, values: dict[str, str]) -> None:
    """The layout the kubelet writes: each key a symlink into a timestamped directory."""
    data = directory / "..2026_12_04_19_00_00.000000001"
    data.mkdir()
    for name, value in values.items():
        (data / name).write_text(value)
    (directory / "..data").symlink_to(data.name)
    for name in values:
        (directory / name).symlink_to(Path("..data") / name)


def test_a_secret_file_gives_its_setting_without_the_trailing_newline(secrets: Path) -> None:
    (secrets / "TFCOMPAT_EVENTS_TOKEN").write_text("from-a-file\n")
    token = load_settings().events_token
    assert token is not None and token.get_secret_value() == "from-a-file"


def test_a_mounted_kubernetes_secret_is_read_through_its_links(secrets: Path) -> None:
    kubernetes_mount(
        secrets,
        {
            "TFCOMPAT_EVENTS_TOKEN": "mounted-token",
            "TFCOMPAT_BROKER_URL": "redis://:pw@tfcompat-redis:6379/0",
        },
    )
    settings = load_settings()
    assert settings.events_token is not None
    assert settings.events_token.get_secret_value() == "mounted-token"
    assert settings.broker_url == "redis://:pw@tfcompat-redis:6379/0"


def test_the_environment_wins_over_a_secret_file(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (secrets / "TFCOMPAT_EVENTS_TOKEN").write_text("from-a-file")
    (secrets / "TFCOMPAT_BROKER_URL").write_text("redis://from-a-file:6379/0")
    monkeypatch.setenv("TFCOMPAT_EVENTS_TOKEN", "from-the-environment")
    settings = load_settings()
    assert settings.events_token is not None
    assert settings.events_token.get_secret_value() == "from-the-environment"
    assert settings.broker_url == "redis://from-a-file:6379/0"  # the directory was read


def test_the_directory_may_be_named_in_the_settings_file(
    tmp_path: Path, secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TFCOMPAT_SECRETS_DIR")
    settings_file = tmp_path / "tfcompat.env"
    settings_file.write_text(f"TFCOMPAT_SECRETS_DIR={secrets}\n")
    monkeypatch.setenv("TFCOMPAT_SETTINGS_FILE", str(settings_file))
    (secrets / "TFCOMPAT_EVENTS_TOKEN").write_text("from-a-file")
    token = load_settings().events_token
    assert token is not None and token.get_secret_value() == "from-a-file"


def test_a_missing_secrets_directory_is_refused_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TFCOMPAT_SECRETS_DIR", str(tmp_path / "not-mounted"))
    with pytest.raises(ConfigError, match=r"TFCOMPAT_SECRETS_DIR=.*not-mounted is not a directory"):
        load_settings()


def test_a_secret_owners_yaml_names_is_read_from_the_directory(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TFCOMPAT_SLACK_WEBHOOK_RANKING", raising=False)
    kubernetes_mount(secrets, {"TFCOMPAT_SLACK_WEBHOOK_RANKING": "https://hooks.example/r\n"})
    settings = load_settings()
    secret = named_secret(settings, "TFCOMPAT_SLACK_WEBHOOK_RANKING")
    assert secret is not None and secret.get_secret_value() == "https://hooks.example/r"
    assert named_secret(settings, "TFCOMPAT_SLACK_WEBHOOK_NOBODY") is None
