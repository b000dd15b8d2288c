"""`ghost demo` as a newcomer runs it: no key, no Azure, no network (a network namespace with
nothing in it), and the whole investigation real but the estate."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lab.scenario import find_scenario, load_scenario
from storage.store import Store

from .wiring_fixtures import REPLAY, scenario_data, write_scenario

GHOST = [sys.executable, "-m", "bot.cli"]
NO_NETWORK = ["unshare", "--net", "--map-root-user"]


def _offline() -> list[str]:
    """Run without any network when the machine lets us make a namespace (else as is)."""
    if shutil.which("unshare") and subprocess.run(
            [*NO_NETWORK, "true"], capture_output=True).returncode == 0:
        return NO_NETWORK
    return []


def fresh_env(tmp_path: Path, database_url: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GHOST_", "GEMINI_", "GOOGLE_", "AZURE_", "SLACK_", "XDG_"))}
    env["HOME"] = str(tmp_path / "home")
    if database_url:
        env["GHOST_DATABASE_URL"] = database_url
    return env


def demo(tmp_path: Path, *args: str, stdin: str = "", database_url: str | None = None,
         offline: bool = False) -> tuple[subprocess.CompletedProcess[str], float]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    start = time.monotonic()
    result = subprocess.run([*(_offline() if offline else []), *GHOST, "demo", *args],
                            env=fresh_env(tmp_path, database_url), cwd=work, input=stdin,
                            capture_output=True, text=True, timeout=120)
    return result, time.monotonic() - start


def commands(audit: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in audit if r.get("kind") == "command"]


def test_a_fresh_demo_finishes_offline_with_an_rca_naming_the_faulty_resource(
        tmp_path: Path) -> None:
    result, seconds = demo(tmp_path, "--yes", offline=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert seconds < 60
    truth = load_scenario(find_scenario("nsg-deny-redis")).truth
    # the default data directory is the user's (platformdirs), not the working directory
    data = tmp_path / "home" / ".local" / "share" / "ghost"
    assert not (tmp_path / "work" / "ghost-data").exists()
    rca = next((data / "audit").glob("ghost_rca_*.md"))
    text = rca.read_text(encoding="utf-8")
    assert "LAB RUN" in text
    assert all(word in text for word in truth.keywords), truth.keywords
    head = result.stdout.split("[Ghost Agent]", 1)[0]
    assert "LAB RUN" in head and "replay:nsg-deny-redis" in head and "Simulated" in head


def _store(url: str) -> Store:
    return Store.from_url(url)


def test_every_command_of_a_demo_went_through_the_gate_and_the_capture_was_analysed(
        tmp_path: Path, migrated_url: str) -> None:
    path = write_scenario(tmp_path / "scn", scenario_data(), REPLAY)
    result, _ = demo(tmp_path, str(path), "--yes", database_url=migrated_url)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    store = _store(migrated_url)
    [inv] = store.list_investigations()
    assert inv.lab == str(path.resolve()) and inv.status == "completed"
    audit = store.audit_records(inv.session_id)
    ran = commands(audit)
    assert ran and all(r["classification"] in ("SAFE", "RISKY") for r in ran)
    assert all(r["action"] in ("auto_approved", "user_approved") for r in ran)
    approvals = {r["details"]["approval_id"]: r["actor"] for r in audit
                 if r.get("kind") == "approval" and r["status"] == "approved"}
    risky = [r for r in ran if r["classification"] == "RISKY"]
    assert risky and all(r["details"]["approval_id"] in approvals for r in risky)
    assert set(approvals.values()) == {"second-engineer (ghost demo --yes)"}
    forensics = [r for r in ran if r["command"].startswith("ghost-forensics ")]
    assert forensics and forensics[0]["exit_code"] == 0
    assert "TCP connection attempt" in "".join(r.get("output") or "" for r in ran
                                                if r["command"].startswith("cat ")), \
        "the forensics engine saw the SYNs the NSG drops"
    verify = subprocess.run([*GHOST, "audit", "verify", inv.session_id],
                            env=fresh_env(tmp_path, migrated_url), capture_output=True,
                            text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    store.db.dispose()


def test_piped_answers_decide_the_approvals_and_a_denial_lets_the_replay_go_on(
        tmp_path: Path, migrated_url: str) -> None:
    path = write_scenario(tmp_path / "scn", scenario_data(), REPLAY)
    result, _ = demo(tmp_path, str(path), stdin="d\nnot in prod hours\n",
                     database_url=migrated_url)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "SAFETY SHELL ALERT" in result.stdout and "RCA REPORT WRITTEN" in result.stdout
    store = _store(migrated_url)
    [inv] = store.list_investigations()
    denied = [r for r in store.audit_records(inv.session_id)
              if r.get("kind") == "approval" and r["status"] == "denied"]
    assert denied and denied[0]["denial_reason"] == "not in prod hours"
    assert "packet-capture create" in denied[0]["command"]
    store.db.dispose()


def test_a_scenario_without_a_replay_and_no_key_is_one_actionable_line(
        tmp_path: Path) -> None:
    path = write_scenario(tmp_path / "scn", scenario_data())
    result, _ = demo(tmp_path, str(path))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no replay" in result.stderr and "GEMINI_API_KEY" in result.stderr


@pytest.mark.parametrize("name", ["no-such-scenario"])
def test_an_unknown_scenario_is_one_line(tmp_path: Path, name: str) -> None:
    result, _ = demo(tmp_path, name)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert name in result.stderr and json.dumps(result.stderr).count("\\n") == 1


def test_with_a_key_gemini_investigates_the_simulated_estate(
        tmp_path: Path, fake_gemini: Any) -> None:
    from tests.fakes.gemini_server import call, function_call_turn

    fake_gemini.enqueue(
        function_call_turn(call("run_shell_cmd", {
            "command": "az network watcher test-ip-flow -g rg-data --vm db-1 --direction "
                       "Inbound --protocol TCP --local 10.20.2.4:6380 --remote 10.20.1.4:50000",
            "reasoning": "which rule decides"})),
        function_call_turn(call("complete_investigation", {
            "confidence": "high", "root_cause_summary": "deny-app-6380 on nsg-db."})),
    )
    path = write_scenario(tmp_path / "scn", scenario_data())  # no replay needed with a key
    env = fresh_env(tmp_path)
    env.update(GEMINI_API_KEY=os.environ["GEMINI_API_KEY"],
               GOOGLE_GEMINI_BASE_URL=os.environ["GOOGLE_GEMINI_BASE_URL"],
               NO_PROXY="127.0.0.1,localhost")
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run([*GHOST, "demo", str(path), "--yes", "--model", "gemini-test"],
                            env=env, cwd=work, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    banner = result.stdout.split("[Shell]", 1)[0]
    assert "gemini-test — Gemini, investigating the simulated estate" in banner
    seen = fake_gemini.requests[1].function_responses()[0]["response"]
    assert "securityRules/deny-app-6380" in seen["output"]
    fake_gemini.assert_drained()


def test_yes_answers_continue_to_a_text_only_turn_and_the_replay_goes_on(
        tmp_path: Path, migrated_url: str) -> None:
    replay = [REPLAY[0], {"parts": [{"text": "The rule list shows deny-app-6380."}]},
              *REPLAY[1:]]
    path = write_scenario(tmp_path / "scn", scenario_data(), replay)
    result, _ = demo(tmp_path, str(path), "--yes", database_url=migrated_url)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "Continue investigation? [C]ontinue / [D]one > c   (--yes)" in result.stdout
    assert "RCA REPORT WRITTEN" in result.stdout
