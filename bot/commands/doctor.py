"""`ghost doctor`: what an operator needs before Ghost can answer in chat, one line per check.

Checks: the database (reachable, migrated), Slack/Teams settings, the Gemini key, ``az`` (on
Ghost's PATH, signed in, able to read), the local diagnostic tools, capture settings. Each line is
``ok``, ``warn`` or ``FAIL``, the check, what was found, and for a problem what to fix. Exit 1
when a required check fails (a ``warn`` does not fail), so it works as a deployment smoke test:
``docker run … doctor`` or ``az containerapp exec … --command "ghost doctor"``. ``az`` is run
exactly as Ghost runs the model's commands (same scrubbed environment and PATH), so an ``az``
that works in an operator's shell but not for Ghost shows up here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bot.settings import Settings, load_settings

Status = Literal["ok", "warn", "FAIL"]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    found: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<4}  {self.name:<9}  {self.found}"
        return f"{text} — fix: {self.fix}" if self.fix and self.status != "ok" else text


def check_database(settings: Settings) -> Check:
    from bot.health import database_status
    from bot.read_only import open_existing
    from storage.errors import DatabaseMissing

    try:  # a check creates nothing: a missing SQLite file is reported, not made
        db = open_existing(settings)
    except DatabaseMissing as exc:
        if exc.default:  # a fresh machine: the first investigation creates it
            return Check("database", "warn", f"no database yet at {exc.path}",
                         "`ghost db upgrade` creates it (so does the first investigation)")
        return Check("database", "FAIL", exc.message, exc.hint or "")
    try:
        ok, found, fix = database_status(db)
    finally:
        db.dispose()
    return Check("database", "ok" if ok else "FAIL", found, fix)


def check_chat(settings: Settings) -> list[Check]:
    checks: list[Check] = []
    if settings.slack_bot_token:
        checks.append(_check_slack(settings))
    if settings.teams_configured:
        checks.append(_check_teams(settings))
    if not checks:
        checks.append(Check("chat", "FAIL", "neither Slack nor Teams is configured",
                            "set SLACK_BOT_TOKEN (+ SLACK_SIGNING_SECRET or SLACK_APP_TOKEN) or "
                            "MicrosoftAppId (docs/slack.md, docs/teams.md)"))
    return checks


def _check_slack(settings: Settings) -> Check:
    token = settings.slack_bot_token or ""
    if not token.startswith("xoxb-"):
        return Check("slack", "FAIL", "SLACK_BOT_TOKEN is not a bot token (xoxb-…)",
                     "copy the Bot User OAuth Token from the app's OAuth & Permissions page")
    if settings.slack_app_token:
        if not settings.slack_app_token.startswith("xapp-"):
            return Check("slack", "FAIL", "SLACK_APP_TOKEN is not an app-level token (xapp-…)",
                         "create one with connections:write (Basic Information page), or unset "
                         "it for HTTP mode")
        return Check("slack", "ok", f"Socket Mode, Web API {settings.slack_api_url}")
    if not settings.slack_signing_secret:
        return Check("slack", "FAIL", "HTTP mode without SLACK_SIGNING_SECRET",
                     "copy the signing secret (Basic Information page) into SLACK_SIGNING_SECRET")
    return Check("slack", "ok", f"HTTP mode on port {settings.port} (/slack/events), Web API "
                 f"{settings.slack_api_url}")


def _check_teams(settings: Settings) -> Check:
    from bot.teams.app import check_settings

    try:
        check_settings(settings)
    except Exception as exc:  # noqa: BLE001 - TeamsSettingMissing: the problem and its fix
        return Check("teams", "FAIL", str(exc), "see docs/teams.md")
    return Check("teams", "ok", f"{settings.teams_app_type} app {settings.teams_app_id}, "
                 f"/api/messages on port {settings.teams_port}")


def check_placeholders(settings: Settings) -> list[Check]:
    """Secrets the Azure deployment wrote as placeholders (their parameter was empty)."""
    from bot.settings import PLACEHOLDER_SECRETS

    checks = []
    for name in settings.placeholder_secrets:
        env, secret, parameter = PLACEHOLDER_SECRETS[name]
        checks.append(Check("secrets", "warn", f"{env} is the deployment's placeholder: Key "
                            f"Vault secret {secret} was never given a value (read as unset)",
                            f"deploy again with the {parameter} parameter set, then restart "
                            "the apps' revisions (docs/deploy.md, \"Secrets\")"))
    return checks


def check_gemini(settings: Settings) -> Check:
    if not settings.gemini_api_key:
        return Check("gemini", "FAIL", "GEMINI_API_KEY is not set",
                     "set GEMINI_API_KEY (in Azure: Key Vault secret gemini-api-key)")
    where = f" via {settings.gemini_base_url}" if settings.gemini_base_url else ""
    return Check("gemini", "ok", f"key set, model {settings.model}{where}")


AzRunner = Callable[[list[str]], tuple[int, str, str]]


def run_az(argv: list[str]) -> tuple[int, str, str]:
    """Run ``az`` as Ghost runs the model's commands: no shell, scrubbed environment."""
    from core.safety.executor import run_argv

    result = run_argv(["az", *argv], timeout_s=60, max_output_bytes=1 << 20)
    if result.exit_code is None:
        return -1, result.stdout, "az did not answer within 60 s"
    return result.exit_code, result.stdout, result.stderr


def check_az(settings: Settings, run: AzRunner = run_az) -> list[Check]:
    from core.safety.executor import scrubbed_env

    path = scrubbed_env().get("PATH", "")
    if shutil.which("az", path=path) is None:
        return [Check("az", "FAIL", f"`az` is not on Ghost's PATH ({path})",
                      "install the azure-cli package (the container image has it)")]
    code, out, err = run(["account", "show", "--output", "json"])
    if code != 0:
        return [Check("az", "FAIL", f"az is not signed in ({_first(err) or f'exit {code}'})",
                      "set AZURE_CLIENT_ID to the managed identity's client id (the entrypoint "
                      "runs `az login --identity`), or run `az login` once")]
    try:
        account = json.loads(out)
    except ValueError:
        return [Check("az", "FAIL", "`az account show` did not print JSON",
                      "check AZURE_CONFIG_DIR and the az installation")]
    user = account.get("user") or {}
    who = f"{user.get('type', '?')} {user.get('name', '?')}"
    checks = [Check("az", "ok", f"signed in as {who}, subscription {account.get('id', '?')}")]
    wanted = settings.azure_subscription_id
    if wanted and account.get("id") != wanted:
        checks.append(Check("az", "warn", f"az uses subscription {account.get('id')}, captures "
                            f"use {wanted}", f"az account set --subscription {wanted}"))
    # a token from the identity, printed nowhere: only its expiry comes back
    code, out, err = run(["account", "get-access-token", "--query", "expiresOn",
                          "--output", "tsv"])
    if code != 0:
        checks.append(Check("az token", "FAIL", f"az cannot get a token: {_first(err)}",
                            "on Container Apps / App Service the identity endpoint must reach "
                            "az (IDENTITY_ENDPOINT, IDENTITY_HEADER, AZURE_CLIENT_ID); see "
                            "docs/deploy.md \"az and the managed identity\""))
        return checks
    checks.append(Check("az token", "ok", f"az gets a token for {who} (valid until "
                        f"{_first(out) or '?'})"))
    code, _out, err = run(["group", "list", "--query", "length(@)", "--output", "tsv"])
    if code != 0:
        checks.append(Check("az read", "FAIL", f"az cannot read: {_first(err)}",
                            "check that Azure Resource Manager is reachable and the identity "
                            "has the Ghost Investigator role (docs/deploy.md)"))
    else:
        checks.append(Check("az read", "ok", "az read works (az group list)"))
    return checks


#: the local diagnostics the system prompt tells the model to start with
LOCAL_TOOLS = ("dig", "ping", "traceroute", "ss", "curl", "nc")


def check_tools() -> Check:
    from core.safety.executor import scrubbed_env

    path = scrubbed_env().get("PATH", "")
    missing = [tool for tool in LOCAL_TOOLS if shutil.which(tool, path=path) is None]
    if missing:
        return Check("tools", "warn", f"not on Ghost's PATH: {', '.join(missing)} (the model's "
                     "local diagnostics fail without them)", "install dnsutils, iputils-ping, "
                     "traceroute, iproute2, curl, netcat-openbsd (the image has them)")
    return Check("tools", "ok", ", ".join(LOCAL_TOOLS))


def check_captures(settings: Settings) -> list[Check]:
    from bot.azure_wiring import CapturesMisconfigured, CapturesNotConfigured, capture_backend

    checks: list[Check] = []
    data_dir = settings.data_dir.resolve()
    writable = _writable(settings.capture_dir)  # checked, not created: doctor changes nothing
    if writable and not settings.capture_dir.resolve().is_relative_to(data_dir):
        checks.append(Check("captures", "warn", f"capture dir {settings.capture_dir} is outside "
                            f"GHOST_DATA_DIR {data_dir}: analysing captures needs approval",
                            "unset GHOST_CAPTURE_DIR_OVERRIDE"))
    elif not writable and not checks:
        checks.append(Check("captures", "FAIL", f"{settings.capture_dir} is not writable",
                            "set GHOST_DATA_DIR to a writable directory"))
    backend = capture_backend(settings)
    if isinstance(backend, CapturesNotConfigured):
        checks.append(Check("captures", "warn", "GHOST_AZURE_SUBSCRIPTION_ID is not set: packet "
                            "captures are off", "set it to the subscription of the VMs"))
    elif isinstance(backend, CapturesMisconfigured):
        checks.append(Check("captures", "FAIL", backend.problem, "see .env.example"))
    else:
        from bot.azure_wiring import capture_storage

        account, group = capture_storage(settings)  # valid: the backend checked it
        if account is None:
            checks.append(Check("captures", "warn", "GHOST_CAPTURE_STORAGE_ACCOUNT is not set: a "
                                "capture needs the model to name a storage account",
                                "set it to the capture account's resource id (the Bicep's "
                                "captureStorageAccountId output)"))
        else:
            checks.append(Check("captures", "ok", f"captures go to storage account {account} "
                                f"(resource group {group})"))
        checks.append(Check("captures", "ok", f"subscription {settings.azure_subscription_id}, "
                            f"ARM {settings.azure_arm_endpoint}, storage auth "
                            f"{settings.azure_storage_auth_mode}, files in "
                            f"{settings.capture_dir}"))
    return checks


def _writable(path: Path) -> bool:
    """``path`` is a writable directory, or the nearest directory that exists above it is
    writable (so Ghost can create it on first use)."""
    for candidate in (path, *path.absolute().parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def _first(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:200]
    return ""


def run_checks(settings: Settings, run: AzRunner = run_az) -> list[Check]:
    lab = getattr(settings, "lab", None)
    if lab:  # a simulated estate: no Azure, and the scenario's replay can stand in for Gemini
        gemini = check_gemini(settings)
        if gemini.status == "FAIL":
            gemini = Check("gemini", "ok", "no key: the lab scenario's replay answers")
        return [check_database(settings), *check_chat(settings), gemini,
                Check("lab", "ok", f"GHOST_LAB={lab}: investigations run against the simulated "
                      "estate; az and Azure captures are not used")]
    return [check_database(settings), *check_placeholders(settings), *check_chat(settings),
            check_gemini(settings), *check_az(settings, run), check_tools(),
            *check_captures(settings)]


def doctor(args: argparse.Namespace) -> int:
    settings = load_settings()
    checks = run_checks(settings)
    failed = [c for c in checks if c.status == "FAIL"]
    if getattr(args, "json", False):  # docs/agent-contract.md, docs/schemas/doctor.schema.json
        from bot.contract.output import emit

        emit({"ready": not failed, "problems": len(failed),
              "warnings": sum(c.status == "warn" for c in checks),
              "checks": [{"name": c.name, "status": c.status.lower(), "found": c.found,
                          "fix": c.fix or None} for c in checks]})
        return 1 if failed else 0
    for check in checks:
        print(check.line(), flush=True)
    print(f"ghost doctor: {len(failed)} problem(s)" if failed else "ghost doctor: ready")
    return 1 if failed else 0
