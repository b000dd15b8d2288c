"""A scenario written for this test in the lab format (not shipped) runs and scores through
`ghost eval` without any code knowing about it; the report compares with itself."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.commands.eval import compare_reports
from tests.eval.helpers import complete, hyp, isolate, shell

SCENARIO: dict[str, Any] = {
    "format": 1,
    "name": "ledger-db-blocked",
    "title": "The ledger app cannot reach its database after a hardening change",
    "symptom": "ledger-app-01 cannot open connections to ledger-db-01 10.7.2.4:5432",
    "subscription": "6a1f0c2e-0000-4000-8000-00000000a777",
    "location": "northeurope",
    "now": "2026-11-21T09:00:00Z",
    "vnets": [{"name": "vnet-ledger", "resource_group": "rg-ledger-net",
               "address_space": ["10.7.0.0/16"],
               "subnets": [{"name": "snet-app", "prefix": "10.7.1.0/24"},
                           {"name": "snet-db", "prefix": "10.7.2.0/24", "nsg": "nsg-db"}]}],
    "nsgs": [{"name": "nsg-db", "resource_group": "rg-ledger-net", "rules": [
        {"name": "deny-app-to-db", "priority": 110, "direction": "Inbound", "access": "Deny",
         "protocol": "Tcp", "source": "10.7.1.0/24", "source_ports": "*",
         "destination": "*", "destination_ports": "5432"}]}],
    "vms": [
        {"name": "ledger-app-01", "resource_group": "rg-ledger-app",
         "subnet": "vnet-ledger/snet-app", "ip": "10.7.1.4", "power_state": "running",
         "network_watcher_extension": True, "listens": [443]},
        {"name": "ledger-db-01", "resource_group": "rg-ledger-db",
         "subnet": "vnet-ledger/snet-db", "ip": "10.7.2.4", "power_state": "running",
         "network_watcher_extension": True, "listens": [5432]}],
    "traffic": [{"from": "ledger-app-01", "to": "ledger-db-01", "port": 5432, "rate": 3}],
    "vm_facts": {"ledger-db-01": {"cpu_percent": 91}},
    "truth": {"category": "nsg_deny", "resources": ["nsg-db/deny-app-to-db"],
              "keywords": ["deny-app-to-db"], "red_herrings": ["cpu"],
              "fix": "Remove deny-app-to-db from nsg-db"},
    "replay": "ledger-db-blocked.replay.json",
}
CLAIM = "An NSG rule on nsg-db denies TCP 5432 from ledger-app-01 to ledger-db-01."
REPLAY = [
    shell("az network watcher test-ip-flow -g rg-ledger-db --vm ledger-db-01 --direction "
          "Inbound --protocol TCP --local 10.7.2.4:5432 --remote 10.7.1.4:49152",
          hypotheses=[hyp("h1", "ACTIVE", CLAIM)]),
    complete("Rule deny-app-to-db on nsg-db drops TCP 5432 from snet-app to ledger-db-01; the "
             "database's high CPU is not the cause.", confirmed=["h1"],
             hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"])],
             text="IP flow verify: Deny by securityRules/deny-app-to-db.\n"
                  "H1 CONFIRMED ({{audit:0}})."),
]


def _write(folder: Path) -> Path:
    folder.mkdir()
    path = folder / "ledger-db-blocked.yaml"
    path.write_text(yaml.safe_dump(SCENARIO, sort_keys=False), encoding="utf-8")
    (folder / "ledger-db-blocked.replay.json").write_text(json.dumps(REPLAY), encoding="utf-8")
    return path


def test_a_new_scenario_runs_and_scores_through_the_cli(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate(monkeypatch, tmp_path)
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "ghost-data"))
    path = _write(tmp_path / "mine")
    code = main(["eval", "--replay", "--scenarios", str(path.parent), "--report",
                 str(tmp_path / "a"), "--repeat", "2"])
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    assert "ledger-db-blocked #1" in printed.out and "ledger-db-blocked #2" in printed.out
    doc = json.loads((tmp_path / "a" / "eval.json").read_text(encoding="utf-8"))
    assert [r["repeat"] for r in doc["runs"]] == [0, 1]
    for run in doc["runs"]:
        assert run["scenario"] == "ledger-db-blocked" and run["category"] == "nsg_deny"
        assert run["solved"] and run["evidence"] and run["error"] is None
        assert run["scenario_file"] == str(path.resolve())
        assert run["commands"] == 1 and run["safe"] == 1 and run["turns"] == 2

    out = io.StringIO()
    assert compare_reports(tmp_path / "a" / "eval.json", tmp_path / "a" / "eval.json", out) == 0
    assert "ledger-db-blocked  2/2       2/2" in out.getvalue()
    assert "Changed: nothing" in out.getvalue()


def test_without_a_key_eval_says_what_to_do_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate(monkeypatch, tmp_path)
    assert main(["eval"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GEMINI_API_KEY" in err and "ghost eval --replay" in err


def test_a_broken_scenario_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    isolate(monkeypatch, tmp_path)
    assert main(["eval", "--replay", "--scenarios", str(tmp_path / "nope.yaml")]) == 1
    err = capsys.readouterr().err
    assert "nope.yaml" in err and "Traceback" not in err
