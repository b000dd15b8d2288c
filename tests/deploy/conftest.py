"""Fixtures for the deployment tests: a clean Ghost environment and a stand-in `az`."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

#: settings a developer's shell (or CI) may have that would change what these tests see
_GHOST_ENV = ("GHOST_DATABASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_GEMINI_API_KEY",
              "GOOGLE_GEMINI_BASE_URL", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET",
              "SLACK_APP_TOKEN", "MicrosoftAppId", "MICROSOFT_APP_ID", "MicrosoftAppPassword",
              "MicrosoftAppType", "MicrosoftAppTenantId", "GHOST_AZURE_SUBSCRIPTION_ID",
              "GHOST_AZURE_STORAGE_AUTH_MODE", "GHOST_CAPTURE_DIR_OVERRIDE", "GHOST_LOG_FORMAT",
              "AZURE_CONFIG_DIR", "AZURE_CLIENT_ID", "GHOST_LAB", "GHOST_CAPTURE_STORAGE_ACCOUNT",
              "GHOST_CAPTURE_STORAGE_RESOURCE_GROUP", "IDENTITY_ENDPOINT", "IDENTITY_HEADER",
              "MSI_ENDPOINT", "MSI_SECRET")

#: a stand-in for the Azure CLI; its state lives in AZURE_CONFIG_DIR, as the real one's does
FAKE_AZ = """#!/usr/bin/env python3
import json, os, sys
state_file = os.path.join(os.environ.get("AZURE_CONFIG_DIR", "/nonexistent"), "fake-state.json")
state = json.load(open(state_file)) if os.path.exists(state_file) else {}
args = sys.argv[1:]
with open(os.path.join(os.environ.get("AZURE_CONFIG_DIR", "/tmp"), "calls.log"), "a") as log:
    log.write(" ".join(args) + "\\n")
if args[:2] == ["account", "show"]:
    if not state.get("signed_in"):
        print("ERROR: Please run 'az login' to setup account.", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"id": state["subscription"], "user": {"type": "servicePrincipal",
                      "name": "ghost-identity"}}))
elif args[:2] in (["group", "list"], ["account", "get-access-token"]):
    if state.get("token_error"):
        print("ERROR: " + state["token_error"], file=sys.stderr)
        sys.exit(1)
    print("3" if args[0] == "group" else "2026-01-01 10:00:00.000000")
else:
    sys.exit(2)
"""


@pytest.fixture
def ghost_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with no .env, no inherited Ghost settings, GHOST_DATA_DIR inside it."""
    for name in _GHOST_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "data"))
    return tmp_path


@pytest.fixture
def fake_az(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`az` on the PATH Ghost gives its commands; write the state with ``set_az_state``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "az"
    script.write_text(FAKE_AZ)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for tool in ("dig", "ping", "traceroute", "ss", "curl", "nc"):  # present, never run
        (bin_dir / tool).write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / tool).chmod(0o755)
    config = tmp_path / "azure"
    config.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(config))
    return config


def set_az_state(config: Path, **state: object) -> None:
    (config / "fake-state.json").write_text(json.dumps(state))
