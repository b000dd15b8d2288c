"""Settings that protect a deployment: the Gemini endpoint (the API key travels with every
request) and the placeholders the Azure deployment writes for secrets it was not given."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.cli import main
from bot.settings import SECRET_PLACEHOLDER, Settings


def _settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


@pytest.mark.parametrize("url", ["https://generativelanguage.googleapis.com",
                                 "https://gemini.internal.example:8443/v1",
                                 "http://127.0.0.1:8080", "http://127.9.9.9", "http://[::1]:9",
                                 "http://localhost:3000/"])
def test_https_or_loopback_gemini_urls_are_accepted(ghost_env: Path, url: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert _settings(monkeypatch, GOOGLE_GEMINI_BASE_URL=url).gemini_base_url == url


@pytest.mark.parametrize("url", ["http://generativelanguage.googleapis.com",
                                 "http://10.0.0.5:8080", "http://127.0.0.1.evil.example",
                                 "ftp://127.0.0.1", "https://", "127.0.0.1:8080"])
def test_other_gemini_urls_are_refused(ghost_env: Path, url: str,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValidationError, match="must be an https URL"):
        _settings(monkeypatch, GOOGLE_GEMINI_BASE_URL=url)
    assert main(["doctor"]) == 2  # one line for the engineer, not a traceback
    err = capsys.readouterr().err
    assert err.startswith("ghost: setting GOOGLE_GEMINI_BASE_URL is invalid: ") and \
        "Traceback" not in err


def test_placeholders_read_as_unset_and_doctor_names_them(
        ghost_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    settings = _settings(monkeypatch, SLACK_BOT_TOKEN=SECRET_PLACEHOLDER,
                         SLACK_SIGNING_SECRET="real-secret",
                         MicrosoftAppPassword=SECRET_PLACEHOLDER)
    assert settings.slack_bot_token is None and settings.teams_app_password is None
    assert settings.slack_signing_secret == "real-secret"
    assert settings.placeholder_secrets == ["slack_bot_token", "teams_app_password"]
    main(["doctor"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.split()[1:2] == ["secrets"]]
    assert len(lines) == 2
    assert lines[0].startswith("warn  secrets    SLACK_BOT_TOKEN is the deployment's "
                               "placeholder: Key Vault secret slack-bot-token")
    assert "deploy again with the slackBotToken parameter set" in lines[0]
    assert "teamsAppPassword" in lines[1]
