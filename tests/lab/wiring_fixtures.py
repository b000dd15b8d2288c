"""A small scenario of our own (not a shipped one) for the capture, CLI and chat tests.

app-1 talks to db-1:5432 (works), cache-1:6379 (nothing listens: RST), db-1:6380 (an NSG
denies it: SYNs unanswered) and, through the NVA nva-1, to far-1:443 (faults are added per test).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

BASE: dict[str, Any] = {
    "format": 1,
    "name": "wiring-test",
    "title": "App tier cannot reach the database",
    "symptom": "app-1 cannot reach db-1:6380 since 09:00 UTC",
    "subscription": "00000000-0000-4000-8000-000000000001",
    "location": "northeurope",
    "now": "2026-03-02T09:30:00Z",
    "vnets": [{
        "name": "vnet-t", "resource_group": "rg-net", "address_space": ["10.20.0.0/16"],
        "subnets": [
            {"name": "snet-nva", "prefix": "10.20.0.0/24"},
            {"name": "snet-app", "prefix": "10.20.1.0/24", "route_table": "rt-app"},
            {"name": "snet-db", "prefix": "10.20.2.0/24", "nsg": "nsg-db"},
            {"name": "snet-far", "prefix": "10.20.3.0/24", "route_table": "rt-far"},
        ],
    }],
    "nsgs": [{
        "name": "nsg-db", "resource_group": "rg-net",
        "rules": [{"name": "deny-app-6380", "priority": 100, "direction": "Inbound",
                   "access": "Deny", "protocol": "Tcp", "source": "10.20.1.0/24",
                   "source_ports": "*", "destination": "*", "destination_ports": "6380"}],
    }],
    "route_tables": [
        {"name": "rt-app", "resource_group": "rg-net", "routes": [
            {"name": "far-via-nva", "prefix": "10.20.3.0/24", "next_hop": "VirtualAppliance",
             "next_hop_ip": "10.20.0.4"}]},
        {"name": "rt-far", "resource_group": "rg-net", "routes": [
            {"name": "app-via-nva", "prefix": "10.20.1.0/24", "next_hop": "VirtualAppliance",
             "next_hop_ip": "10.20.0.4"}]},
    ],
    "private_dns_zones": [{
        "name": "privatelink.postgres.database.azure.com", "resource_group": "rg-net",
        "linked_vnets": [], "records": {"pg-1": "10.20.2.8"}}],
    "public_dns": {"pg-1.postgres.database.azure.com": "20.61.14.5",
                   "pg-1.privatelink.postgres.database.azure.com": "20.61.14.5"},
    "vms": [
        {"name": "app-1", "resource_group": "rg-app", "subnet": "vnet-t/snet-app",
         "ip": "10.20.1.4", "power_state": "running", "network_watcher_extension": True,
         "listens": []},
        {"name": "db-1", "resource_group": "rg-data", "subnet": "vnet-t/snet-db",
         "ip": "10.20.2.4", "power_state": "running", "network_watcher_extension": True,
         "listens": [5432, 6380]},
        {"name": "cache-1", "resource_group": "rg-data", "subnet": "vnet-t/snet-db",
         "ip": "10.20.2.5", "power_state": "running", "network_watcher_extension": True,
         "listens": []},
        {"name": "stopped-1", "resource_group": "rg-data", "subnet": "vnet-t/snet-db",
         "ip": "10.20.2.6", "power_state": "deallocated", "network_watcher_extension": True,
         "listens": []},
        {"name": "noext-1", "resource_group": "rg-data", "subnet": "vnet-t/snet-db",
         "ip": "10.20.2.7", "power_state": "running", "network_watcher_extension": False,
         "listens": [80]},
        {"name": "nva-1", "resource_group": "rg-net", "subnet": "vnet-t/snet-nva",
         "ip": "10.20.0.4", "power_state": "running", "network_watcher_extension": True,
         "listens": [], "ip_forwarding": True},
        {"name": "far-1", "resource_group": "rg-far", "subnet": "vnet-t/snet-far",
         "ip": "10.20.3.4", "power_state": "running", "network_watcher_extension": True,
         "listens": [443]},
    ],
    "traffic": [
        {"from": "app-1", "to": "db-1", "port": 5432, "rate": 1},
        {"from": "app-1", "to": "cache-1", "port": 6379, "rate": 1},
        {"from": "app-1", "to": "db-1", "port": 6380, "rate": 1},
        {"from": "app-1", "to": "far-1", "port": 443, "rate": 1},
    ],
    "faults": [],
    "activity_log": [
        {"ago": "30m", "caller": "bob@contoso.com", "status": "Succeeded",
         "operation": "Microsoft.Network/networkSecurityGroups/securityRules/write",
         "resource": "nsg-db/deny-app-6380"},
    ],
    "truth": {"category": "nsg_deny", "resources": ["nsg-db/deny-app-6380"],
              "keywords": ["deny-app-6380"], "red_herrings": ["nva-1"],
              "fix": "Remove rule deny-app-6380 from nsg-db"},
}

#: a reference investigation of the scenario: gated reads, a capture with approval, the RCA
REPLAY: list[dict[str, Any]] = [
    {"parts": [
        {"text": "Hypotheses: h1 an NSG on snet-db denies 6380; h2 db-1 is down."},
        {"functionCall": {"name": "run_shell_cmd", "args": {
            "command": "az network nsg rule list -g rg-net --nsg-name nsg-db -o json",
            "reasoning": "The custom rules on the database subnet."}}}]},
    {"parts": [{"functionCall": {"name": "capture_traffic", "args": {
        "target": "app-1", "resource_group": "rg-app", "storage_account": "ghostlab",
        "duration_seconds": 20, "investigation_context": "SYNs from app-1 to db-1:6380"}}}]},
    {"parts": [{"functionCall": {"name": "check_task", "args": {"task_id": "{{task:0}}"}}}]},
    {"parts": [{"functionCall": {"name": "complete_investigation", "args": {
        "confidence": "high",
        "root_cause_summary": "Rule deny-app-6380 on nsg-db drops app-1's SYNs to db-1:6380.",
        "confirmed_hypotheses": ["h1"], "refuted_hypotheses": ["h2"],
        "recommended_actions": ["Remove rule deny-app-6380 from nsg-db"]}}}]},
]


def scenario_data(faults: list[dict[str, Any]] | None = None, **changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["faults"] = faults or []
    data.update(changes)
    return data


def write_scenario(folder: Path, data: dict[str, Any] | None = None,
                   replay: list[dict[str, Any]] | None = None) -> Path:
    """The scenario (and its replay) as files in ``folder``; returns the YAML path."""
    data = copy.deepcopy(data or scenario_data())
    folder.mkdir(parents=True, exist_ok=True)
    name = str(data["name"])
    if replay is not None:
        data["replay"] = f"{name}.replay.json"
        (folder / data["replay"]).write_text(json.dumps(replay), encoding="utf-8")
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path
