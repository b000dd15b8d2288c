"""A format-2 scenario written for this test, with a custom ``x-`` category, loads, plays and is
scored without any code knowing about it (issue 32): `ghost lab check`, `ghost demo FILE
--yes` and `ghost eval --replay`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from tests.eval.helpers import complete, hyp, isolate, shell

SCENARIO: dict[str, Any] = {
    "format": 2,
    "name": "vault-endpoint-waiting",
    "title": "The vault behind a new private endpoint times out",
    "symptom": "billing-vm-01 cannot reach kv-billing.vault.azure.net since 08:00 UTC",
    "subscription": "6a1f0c2e-0000-4000-8000-00000000a778",
    "location": "northeurope",
    "now": "2026-11-21T09:00:00Z",
    "vnets": [{"name": "vnet-billing", "resource_group": "rg-billing-net",
               "address_space": ["10.8.0.0/16"],
               "subnets": [{"name": "snet-app", "prefix": "10.8.1.0/24", "nsg": "nsg-app"},
                           {"name": "snet-pe", "prefix": "10.8.4.0/24"}]}],
    "nsgs": [{"name": "nsg-app", "resource_group": "rg-billing-net", "rules": [
        {"name": "deny-internet-out", "priority": 200, "direction": "Outbound",
         "access": "Deny", "protocol": "*", "source": "*", "source_ports": "*",
         "destination": "Internet", "destination_ports": "*",
         "active": {"from": "50m"}}]}],
    "private_dns_zones": [{"name": "privatelink.vaultcore.azure.net",
                           "resource_group": "rg-billing-net",
                           "linked_vnets": [{"vnet": "vnet-billing",
                                             "active": {"from": "2h"}}]}],
    "vms": [{"name": "billing-vm-01", "resource_group": "rg-billing",
             "subnet": "vnet-billing/snet-app", "ip": "10.8.1.4", "power_state": "running",
             "network_watcher_extension": True, "listens": [443]}],
    "private_endpoints": [{"name": "pe-kv-billing", "resource_group": "rg-billing",
                           "subnet": "vnet-billing/snet-pe", "ip": "10.8.4.5",
                           "target": {"kind": "vault", "name": "kv-billing",
                                      "resource_group": "rg-sec", "public_ip": "20.60.1.5",
                                      "public_access": "Disabled"},
                           "state": "Pending",
                           "zone_group": ["privatelink.vaultcore.azure.net"]}],
    "traffic": [{"from": "billing-vm-01", "to": "10.8.4.5", "port": 443, "rate": 2,
                 "since": "1h"}],
    "truth": {"category": "x-endpoint-approval-pending", "resources": ["pe-kv-billing"],
              "keywords": ["Pending"], "red_herrings": ["deny-internet-out"],
              "fix": "Approve the connection of pe-kv-billing on kv-billing"},
    "replay": "vault-endpoint-waiting.replay.json",
}
CLAIM = "The connection of pe-kv-billing to kv-billing waits for approval."
HERRING = "deny-internet-out on nsg-app blocks billing-vm-01's calls to the vault."
# The conclusion clears the red herring with what a cited record shows (the rule list names
# deny-internet-out and its Internet destination): a scorer that reads grounding must see it.
REPLAY = [
    shell("az network private-endpoint show -g rg-billing -n pe-kv-billing -o json",
          hypotheses=[hyp("h1", "ACTIVE", CLAIM), hyp("h2", "ACTIVE", HERRING)]),
    shell("az network nsg rule list -g rg-billing-net --nsg-name nsg-app -o json",
          hypotheses=[hyp("h1", "CONFIRMED", evidence=["{{audit:0}}"]), hyp("h2", "ACTIVE")],
          text="pe-kv-billing: status Pending.\nH1 CONFIRMED ({{audit:0}})."),
    complete("The private endpoint pe-kv-billing's connection to kv-billing is Pending: an "
             "endpoint approval is pending, so it carries no traffic; deny-internet-out only "
             "matches Internet destinations, not 10.8.4.5.", confirmed=["h1"], refuted=["h2"],
             hypotheses=[hyp("h1", "CONFIRMED"), hyp("h2", "REFUTED", evidence=["{{audit:1}}"])],
             text="deny-internet-out only matches Internet destinations.\n"
                  "H2 REFUTED ({{audit:1}})."),
]


def _write(folder: Path) -> Path:
    folder.mkdir()
    path = folder / "vault-endpoint-waiting.yaml"
    path.write_text(yaml.safe_dump(SCENARIO, sort_keys=False), encoding="utf-8")
    (folder / "vault-endpoint-waiting.replay.json").write_text(json.dumps(REPLAY),
                                                               encoding="utf-8")
    return path


def test_a_custom_category_checks_plays_and_scores_without_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate(monkeypatch, tmp_path)
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "ghost-data"))
    path = _write(tmp_path / "mine")
    assert main(["lab", "check", str(path)]) == 0
    assert "ok" in capsys.readouterr().out
    assert main(["demo", str(path), "--yes"]) == 0
    played = capsys.readouterr().out
    assert "RCA REPORT WRITTEN" in played and "pe-kv-billing" in played
    code = main(["eval", "--replay", "--scenarios", str(path), "--report", str(tmp_path / "r")])
    printed = capsys.readouterr()
    assert code == 0, printed.out + printed.err
    run = json.loads((tmp_path / "r" / "eval.json").read_text(encoding="utf-8"))["runs"][0]
    assert run["category"] == "x-endpoint-approval-pending"  # shown verbatim
    assert run["solved"] and run["evidence"] and run["error"] is None


def test_a_custom_category_needs_format_2_and_a_keyword_or_resource(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate(monkeypatch, tmp_path)
    path = _write(tmp_path / "mine")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["truth"].update(keywords=[], resources=[])
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert main(["lab", "check", str(path)]) == 1
    out = capsys.readouterr()
    assert ("vault-endpoint-waiting.yaml: truth.category: the custom category "
            "x-endpoint-approval-pending needs at least one keywords or resources entry"
            ) in out.out + out.err
