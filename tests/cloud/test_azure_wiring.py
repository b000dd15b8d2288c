"""Broken Azure settings or credentials, as an engineer meets them: `ghost investigate` keeps
going, says at start-up what to fix, and the model is told why the capture cannot run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cloud.fake_arm import SUB, TOKEN, FakeArm
from tests.fakes.gemini_server import call, function_call_turn


@pytest.mark.parametrize(("settings", "expected"), [
    ({"GHOST_AZURE_STORAGE_AUTH_MODE": "key"},
     "GHOST_AZURE_STORAGE_AUTH_MODE=key needs GHOST_AZURE_STORAGE_KEY"),
    ({"GHOST_AZURE_STORAGE_AUTH_MODE": "sas"},
     "GHOST_AZURE_STORAGE_AUTH_MODE must be `login`"),
    ({"GHOST_AZURE_ARM_ENDPOINT": "http://management.example.com"},
     "GHOST_AZURE_ARM_ENDPOINT must be an https URL"),
    ({"GHOST_AZURE_STATIC_TOKEN": "t"},
     "GHOST_AZURE_STATIC_TOKEN is only accepted with a loopback test ARM endpoint"),
    ({"GHOST_AZURE_STATIC_TOKEN": "expired-or-wrong", "GHOST_AZURE_ARM_ENDPOINT": "{arm}"},
     "Azure did not accept Ghost's credential"),
])
def test_bad_azure_settings_are_explained_not_a_traceback(
        fake_gemini: Any, arm: FakeArm, cli_env: dict[str, str], tmp_path: Path,
        settings: dict[str, str], expected: str) -> None:
    arm.state.add_vm("web-vm-01")
    fake_gemini.enqueue(
        function_call_turn(call("capture_traffic", {
            "target": "web-vm-01", "resource_group": "prod-rg", "storage_account": "forensicssa",
            "duration_seconds": 60, "investigation_context": "502s"})),
        function_call_turn(call("complete_investigation", {
            "confidence": "low", "root_cause_summary": "No capture was possible."})),
    )
    env = dict(cli_env) | {"GHOST_MODEL": "gemini-test", "GHOST_AZURE_SUBSCRIPTION_ID": SUB,
                           "GHOST_AZURE_LRO_POLLING_INTERVAL": "0"}
    env |= {k: v.replace("{arm}", arm.url) for k, v in settings.items()}
    run = subprocess.run([sys.executable, "-m", "bot.cli", "investigate", "502s from web-vm-01"],
                         input="s\n" + "a\n" * 5, env=env, capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    warn = [line for line in run.stdout.splitlines() if "[WARN] Orphan scan incomplete" in line]
    assert warn and expected in warn[0], run.stdout  # said at start-up, before any capture
    [started] = fake_gemini.requests[1].function_responses()
    response = started["response"]
    assert response["status"] == "task_failed" and expected in response["error_detail"]
    assert ".." not in response["message"]
    if "credential" in expected:
        assert "managed identity" in response["error_detail"]
        assert TOKEN not in run.stdout + run.stderr


# ------------------------------------------------------------ GHOST_CAPTURE_STORAGE_ACCOUNT
def _storage_settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> Any:
    from bot.settings import Settings

    for key in ("GHOST_CAPTURE_STORAGE_ACCOUNT", "GHOST_CAPTURE_STORAGE_RESOURCE_GROUP",
                "GHOST_AZURE_SUBSCRIPTION_ID"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


_SUB = "11111111-2222-3333-4444-555555555555"
_ID = f"/subscriptions/{_SUB}/resourceGroups/ghost-rg/providers/Microsoft.Storage/" \
      "storageAccounts/ghostcap1"


@pytest.mark.parametrize(("env", "expected"), [
    ({}, (None, None)),
    ({"GHOST_CAPTURE_STORAGE_ACCOUNT": _ID, "GHOST_AZURE_SUBSCRIPTION_ID": _SUB},
     ("ghostcap1", "ghost-rg")),
    ({"GHOST_CAPTURE_STORAGE_ACCOUNT": "ghostcap1",
      "GHOST_CAPTURE_STORAGE_RESOURCE_GROUP": "ghost-rg"}, ("ghostcap1", "ghost-rg")),
])
def test_the_capture_account_setting(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                     expected: tuple[str | None, str | None]) -> None:
    from bot.azure_wiring import capture_storage

    assert capture_storage(_storage_settings(monkeypatch, **env)) == expected


@pytest.mark.parametrize(("env", "fix"), [
    ({"GHOST_CAPTURE_STORAGE_ACCOUNT": "ghostcap1"}, "set GHOST_CAPTURE_STORAGE_RESOURCE_GROUP"),
    ({"GHOST_CAPTURE_STORAGE_ACCOUNT": "/subscriptions/x/resourceGroups/rg"},
     "is not a storage account resource id"),
    ({"GHOST_CAPTURE_STORAGE_ACCOUNT": _ID.replace("ghostcap1", "Ghost_Cap")},
     "3-24 lowercase letters and digits"),
    ({"GHOST_CAPTURE_STORAGE_ACCOUNT": _ID,
      "GHOST_AZURE_SUBSCRIPTION_ID": "99999999-2222-3333-4444-555555555555"},
     "use an account in the captures' subscription"),
])
def test_a_capture_account_that_cannot_work_refuses_captures_with_the_fix(
        monkeypatch: pytest.MonkeyPatch, env: dict[str, str], fix: str) -> None:
    from bot.azure_wiring import CapturesMisconfigured, capture_backend

    backend = capture_backend(_storage_settings(
        monkeypatch, **{"GHOST_AZURE_SUBSCRIPTION_ID": _SUB, **env}))
    assert isinstance(backend, CapturesMisconfigured)
    assert fix in backend.problem
