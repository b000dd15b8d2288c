"""Shared lab fixtures: a small valid scenario as a plain dict, to change per test and load.

``base_scenario()`` returns a fresh dict each call: VNet vnet-prod (10.1.0.0/16) with snet-web
(10.1.1.0/24, NSG nsg-web) and snet-data (10.1.2.0/24, NSG nsg-data), web-vm-01 (10.1.1.4) and
redis-vm-01 (10.1.2.4, listening on 6379), traffic web -> redis:6379, truth ``healthy``.
Fixtures: ``scenario_dict`` (that factory), ``make_scenario`` (dict -> Scenario) and
``write_scenario`` (dict -> YAML file path under tmp_path, named after the scenario).
``hub_spoke_scenario()`` is a second estate with a forwarding NVA between two spokes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.scenario import Scenario, parse_scenario

SUBSCRIPTION = "6a1f0c2e-0000-4000-8000-00000000a001"

_BASE: dict[str, Any] = {
    "format": 1,
    "name": "test-estate",
    "title": "A small estate for tests",
    "symptom": "Redis 10.1.2.4:6379 unreachable from web-vm-01",
    "subscription": SUBSCRIPTION,
    "location": "westeurope",
    "now": "2026-11-20T14:20:00Z",
    "vnets": [
        {
            "name": "vnet-prod",
            "resource_group": "rg-prod-net",
            "address_space": ["10.1.0.0/16"],
            "subnets": [
                {"name": "snet-web", "prefix": "10.1.1.0/24", "nsg": "nsg-web"},
                {"name": "snet-data", "prefix": "10.1.2.0/24", "nsg": "nsg-data"},
            ],
        }
    ],
    "nsgs": [
        {"name": "nsg-web", "resource_group": "rg-prod-net", "rules": []},
        {
            "name": "nsg-data",
            "resource_group": "rg-prod-net",
            "rules": [
                {"name": "allow-web-to-redis", "priority": 200, "direction": "Inbound",
                 "access": "Allow", "protocol": "Tcp", "source": "10.1.1.0/24",
                 "source_ports": "*", "destination": "*", "destination_ports": "6379"},
            ],
        },
    ],
    "vms": [
        {"name": "web-vm-01", "resource_group": "rg-prod-app", "subnet": "vnet-prod/snet-web",
         "ip": "10.1.1.4", "power_state": "running", "network_watcher_extension": True,
         "listens": [80]},
        {"name": "redis-vm-01", "resource_group": "rg-prod-data",
         "subnet": "vnet-prod/snet-data", "ip": "10.1.2.4", "power_state": "running",
         "network_watcher_extension": True, "listens": [6379]},
    ],
    "traffic": [{"from": "web-vm-01", "to": "redis-vm-01", "port": 6379, "rate": 5}],
    "activity_log": [
        {"ago": "15m", "caller": "alice@contoso.com", "status": "Succeeded",
         "operation": "Microsoft.Network/networkSecurityGroups/securityRules/write",
         "resource": "nsg-data/allow-web-to-redis"},
    ],
    "truth": {"category": "healthy", "resources": [], "keywords": ["healthy"],
              "red_herrings": ["cpu"], "fix": "Nothing to fix"},
}


_HUB_SPOKE: dict[str, Any] = {
    **{k: v for k, v in _BASE.items() if k not in ("vnets", "nsgs", "vms", "traffic",
                                                   "activity_log")},
    "name": "test-hub-spoke",
    "symptom": "db-vm-01 10.2.1.4:5432 unreachable from app-vm-01",
    "vnets": [
        {"name": "vnet-hub", "resource_group": "rg-hub", "address_space": ["10.0.0.0/16"],
         "subnets": [{"name": "snet-nva", "prefix": "10.0.1.0/24", "nsg": "nsg-nva"},
                     {"name": "snet-shared", "prefix": "10.0.3.0/24"}],
         "peerings": [
             {"name": "hub-to-spoke1", "remote_vnet": "vnet-spoke1", "state": "Connected"},
             {"name": "hub-to-spoke2", "remote_vnet": "vnet-spoke2", "state": "Connected"}]},
        {"name": "vnet-spoke1", "resource_group": "rg-spoke1", "address_space": ["10.1.0.0/16"],
         "subnets": [{"name": "snet-app", "prefix": "10.1.1.0/24", "route_table": "rt-spoke1"}],
         "peerings": [{"name": "spoke1-to-hub", "remote_vnet": "vnet-hub", "state": "Connected",
                       "allow_forwarded_traffic": True}]},
        {"name": "vnet-spoke2", "resource_group": "rg-spoke2", "address_space": ["10.2.0.0/16"],
         "subnets": [{"name": "snet-db", "prefix": "10.2.1.0/24", "route_table": "rt-spoke2"}],
         "peerings": [{"name": "spoke2-to-hub", "remote_vnet": "vnet-hub", "state": "Connected",
                       "allow_forwarded_traffic": True}]},
    ],
    "nsgs": [{"name": "nsg-nva", "resource_group": "rg-hub", "rules": []}],
    "route_tables": [
        {"name": "rt-spoke1", "resource_group": "rg-spoke1", "routes": [
            {"name": "to-spoke2", "prefix": "10.2.0.0/16", "next_hop": "VirtualAppliance",
             "next_hop_ip": "10.0.1.4"}]},
        {"name": "rt-spoke2", "resource_group": "rg-spoke2", "routes": [
            {"name": "to-spoke1", "prefix": "10.1.0.0/16", "next_hop": "VirtualAppliance",
             "next_hop_ip": "10.0.1.4"}]},
    ],
    "vms": [
        {"name": "nva-01", "resource_group": "rg-hub", "subnet": "vnet-hub/snet-nva",
         "ip": "10.0.1.4", "power_state": "running", "network_watcher_extension": True,
         "listens": [], "ip_forwarding": True},
        {"name": "dns-vm-01", "resource_group": "rg-hub", "subnet": "vnet-hub/snet-shared",
         "ip": "10.0.3.4", "power_state": "running", "network_watcher_extension": True,
         "listens": [53]},
        {"name": "app-vm-01", "resource_group": "rg-spoke1", "subnet": "vnet-spoke1/snet-app",
         "ip": "10.1.1.4", "power_state": "running", "network_watcher_extension": True,
         "listens": []},
        {"name": "db-vm-01", "resource_group": "rg-spoke2", "subnet": "vnet-spoke2/snet-db",
         "ip": "10.2.1.4", "power_state": "running", "network_watcher_extension": True,
         "listens": [5432]},
    ],
    "traffic": [{"from": "app-vm-01", "to": "db-vm-01", "port": 5432, "rate": 2}],
}


def hub_spoke_scenario() -> dict[str, Any]:
    """A hub (nva-01 10.0.1.4 forwarding, dns-vm-01 10.0.3.4 on 53) and two spokes routed
    through the NVA: app-vm-01 (10.1.1.4) and db-vm-01 (10.2.1.4, listening on 5432)."""
    return copy.deepcopy(_HUB_SPOKE)


def base_scenario() -> dict[str, Any]:
    """A fresh copy of the small valid scenario (see the module docstring)."""
    return copy.deepcopy(_BASE)


@pytest.fixture
def scenario_dict() -> Callable[[], dict[str, Any]]:
    return base_scenario


@pytest.fixture
def make_scenario() -> Callable[[dict[str, Any]], Scenario]:
    def make(data: dict[str, Any]) -> Scenario:
        return parse_scenario(data, f"{data.get('name', 'scenario')}.yaml")

    return make


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    def write(data: dict[str, Any]) -> Path:
        path = tmp_path / f"{data.get('name', 'scenario')}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    return write
