"""`ghost doctor`: one line per check, what to fix, exit 1 on a required failure."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.cli import main
from tests.deploy.conftest import set_az_state

SUB = "11111111-2222-3333-4444-555555555555"


def _doctor(capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["doctor"])
    return code, capsys.readouterr().out.splitlines()


def _line(lines: list[str], name: str) -> str:
    found = [ln for ln in lines if ln.split()[1:2] == [name]]
    assert found, (name, lines)
    return found[0]


def _healthy(monkeypatch: pytest.MonkeyPatch, fake_az: Path) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1-2-abc")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "signing")
    monkeypatch.setenv("GHOST_AZURE_SUBSCRIPTION_ID", SUB)
    monkeypatch.setenv("GHOST_CAPTURE_STORAGE_ACCOUNT", f"/subscriptions/{SUB}/resourceGroups/"
                       "ghost-rg/providers/Microsoft.Storage/storageAccounts/ghostcap1")
    set_az_state(fake_az, signed_in=True, subscription=SUB)


def test_a_ready_deployment_passes_every_check(
        ghost_env: Path, fake_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _healthy(monkeypatch, fake_az)
    assert main(["db", "upgrade"]) == 0  # doctor checks the database; it never creates one
    capsys.readouterr()
    code, lines = _doctor(capsys)
    assert code == 0, lines
    assert lines[-1] == "ghost doctor: ready"
    assert [ln.split()[0] for ln in lines[:-1]] == ["ok"] * (len(lines) - 1)
    assert "at revision" in _line(lines, "database")
    assert "signed in as servicePrincipal ghost-identity" in _line(lines, "az")
    # az ran as Ghost runs the model's commands: no shell, and the read went through
    assert (fake_az / "calls.log").read_text().splitlines() == [
        "account show --output json",
        "account get-access-token --query expiresOn --output tsv",
        "group list --query length(@) --output tsv"]


def test_each_problem_is_one_line_with_its_fix(
        ghost_env: Path, fake_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], database_url: str) -> None:
    # never migrated: an empty PostgreSQL schema, or a SQLite file that does not exist yet
    monkeypatch.setenv("GHOST_DATABASE_URL", database_url)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1-2-abc")  # HTTP mode, no signing secret
    set_az_state(fake_az, signed_in=False)
    code, lines = _doctor(capsys)
    assert code == 1
    assert lines[-1] == "ghost doctor: 4 problem(s)"
    db = _line(lines, "database")
    assert db.startswith("FAIL") and "— fix: " in db and "`ghost db upgrade`" in db
    assert _line(lines, "slack").startswith("FAIL  slack      HTTP mode without "
                                            "SLACK_SIGNING_SECRET — fix: copy the signing secret")
    assert _line(lines, "gemini").startswith("FAIL  gemini     GEMINI_API_KEY is not set")
    az = _line(lines, "az")
    assert az.startswith("FAIL") and "Please run 'az login'" in az and "AZURE_CLIENT_ID" in az
    assert _line(lines, "captures").startswith("warn")  # captures off is allowed


def test_missing_local_tools_are_a_warning(
        ghost_env: Path, fake_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _healthy(monkeypatch, fake_az)
    bin_dir = fake_az.parent / "bin"
    for tool in ("dig", "nc"):
        (bin_dir / tool).unlink()
    (bin_dir / "python3").symlink_to(sys.executable)  # for the stand-in az
    monkeypatch.setenv("PATH", str(bin_dir))  # only the stand-ins
    code, lines = _doctor(capsys)
    assert code == 0
    assert _line(lines, "tools").startswith("warn  tools      not on Ghost's PATH: dig, nc ")


def test_az_missing_from_ghosts_path(
        ghost_env: Path, monkeypatch: pytest.MonkeyPatch, fake_az: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _healthy(monkeypatch, fake_az)
    monkeypatch.setenv("PATH", str(ghost_env / "empty-bin"))
    code, lines = _doctor(capsys)
    assert code == 1
    assert _line(lines, "az").startswith("FAIL  az         `az` is not on Ghost's PATH")
    assert "install the azure-cli package" in _line(lines, "az")


def test_az_signed_in_but_without_a_token(
        ghost_env: Path, fake_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """What Container Apps does when the identity endpoint does not reach az's process."""
    _healthy(monkeypatch, fake_az)
    set_az_state(fake_az, signed_in=True, subscription=SUB,
                 token_error="ManagedIdentityCredential authentication unavailable.")
    code, lines = _doctor(capsys)
    assert code == 1
    token = [ln for ln in lines if "az token" in ln][0]
    assert token.startswith("FAIL") and "ManagedIdentityCredential" in token


def test_az_on_another_subscription_is_a_warning(
        ghost_env: Path, fake_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _healthy(monkeypatch, fake_az)
    set_az_state(fake_az, signed_in=True, subscription="99999999-0000-0000-0000-000000000000")
    code, lines = _doctor(capsys)
    assert code == 0
    warn = [ln for ln in lines if ln.startswith("warn  az")][0]
    assert f"az account set --subscription {SUB}" in warn


def test_a_broken_capture_setting_fails(
        ghost_env: Path, fake_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _healthy(monkeypatch, fake_az)
    monkeypatch.setenv("GHOST_AZURE_STORAGE_AUTH_MODE", "key")  # without a key
    code, lines = _doctor(capsys)
    assert code == 1
    assert "GHOST_AZURE_STORAGE_KEY" in _line(lines, "captures")


def test_teams_settings_are_checked(
        ghost_env: Path, fake_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _healthy(monkeypatch, fake_az)
    monkeypatch.delenv("SLACK_BOT_TOKEN")
    monkeypatch.setenv("MicrosoftAppId", "00000000-0000-0000-0000-00000000000a")
    code, lines = _doctor(capsys)
    assert code == 1
    assert "MicrosoftAppPassword is not set" in _line(lines, "teams")


def test_lab_mode_needs_neither_az_nor_gemini(
        ghost_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from bot.settings import Settings

    if "lab" not in Settings.model_fields:
        pytest.skip("this Ghost has no lab mode")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1-2-abc")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1-2")
    monkeypatch.setenv("GHOST_LAB", "nsg-deny-redis")
    monkeypatch.setenv("PATH", str(ghost_env / "empty-bin"))  # no az anywhere
    code, lines = _doctor(capsys)
    assert code == 0, lines
    assert _line(lines, "lab").startswith("ok    lab        GHOST_LAB=nsg-deny-redis")
    assert not [ln for ln in lines if ln.split()[1:2] == ["az"]]
