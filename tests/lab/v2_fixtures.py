"""A format-2 estate for tests, as a plain dict to change per test and load.

``v2_scenario()`` returns a fresh copy of:

- vnet-hub 10.0.0.0/16: AzureFirewallSubnet 10.0.1.0/26 with afw-hub (10.0.1.4, public
  20.50.3.4, policy afwp-hub), snet-pe 10.0.4.0/24 with pe-sql (10.0.4.5 -> sql-prod, zone
  group privatelink.database.windows.net, Approved);
- vnet-prod 10.1.0.0/16 peered with the hub: snet-web 10.1.1.0/24 (nsg-web, NAT gateway
  ngw-prod 20.50.4.1) with web-vm-01 10.1.1.4 and web-vm-02 10.1.1.5 behind the public load
  balancer lbe-web (20.50.2.10:443 -> 8443, probe hp-web Http 8443 /health); snet-app
  10.1.3.0/24 (nsg-app) with app-vm-01 10.1.3.4 and app-vm-02 10.1.3.5 behind the internal
  load balancer ilb-app (10.1.3.10:443 -> 8080, probe hp-app Tcp 8080); snet-spoke-egress
  10.1.5.0/24 (route table rt-egress: 0.0.0.0/0 -> the firewall) with batch-vm-01 10.1.5.4;
- Internet host 203.0.113.50 (443), client 198.51.100.7, storage stflowweu01, flow log
  fl-vnet-prod on vnet-prod since 3h.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.lab.conftest import SUBSCRIPTION


def _vm(name: str, subnet: str, ip: str, listens: list[int], **extra: Any) -> dict[str, Any]:
    return {"name": name, "resource_group": "rg-prod-app", "subnet": subnet, "ip": ip,
            "power_state": "running", "network_watcher_extension": True, "listens": listens,
            **extra}


def _rule(name: str, priority: int, access: str, source: str, ports: str,
          **extra: Any) -> dict[str, Any]:
    return {"name": name, "priority": priority, "direction": "Inbound", "access": access,
            "protocol": "Tcp", "source": source, "source_ports": "*", "destination": "*",
            "destination_ports": ports, **extra}


_V2: dict[str, Any] = {
    "format": 2,
    "name": "test-v2",
    "title": "A format-2 estate for tests",
    "symptom": "app tier unreachable through ilb-app",
    "subscription": SUBSCRIPTION,
    "location": "westeurope",
    "now": "2026-11-20T14:20:00Z",
    "vnets": [
        {"name": "vnet-hub", "resource_group": "rg-hub-net", "address_space": ["10.0.0.0/16"],
         "subnets": [
             {"name": "AzureFirewallSubnet", "prefix": "10.0.1.0/26"},
             {"name": "snet-pe", "prefix": "10.0.4.0/24", "nsg": "nsg-pe"}],
         "peerings": [{"name": "hub-to-prod", "remote_vnet": "vnet-prod",
                       "state": "Connected", "allow_forwarded_traffic": True}]},
        {"name": "vnet-prod", "resource_group": "rg-prod-net", "address_space": ["10.1.0.0/16"],
         "subnets": [
             {"name": "snet-web", "prefix": "10.1.1.0/24", "nsg": "nsg-web"},
             {"name": "snet-app", "prefix": "10.1.3.0/24", "nsg": "nsg-app"},
             {"name": "snet-egress", "prefix": "10.1.5.0/24", "route_table": "rt-egress"}],
         "peerings": [{"name": "prod-to-hub", "remote_vnet": "vnet-hub",
                       "state": "Connected", "allow_forwarded_traffic": True}]},
    ],
    "nsgs": [
        {"name": "nsg-web", "resource_group": "rg-prod-net", "rules": [
            _rule("allow-https-in", 100, "Allow", "Internet", "8443")]},
        {"name": "nsg-app", "resource_group": "rg-prod-net", "rules": [
            _rule("allow-web-to-app", 100, "Allow", "10.1.1.0/24", "8080")]},
        {"name": "nsg-pe", "resource_group": "rg-hub-net", "rules": [
            _rule("deny-sql-from-prod", 100, "Deny", "10.1.0.0/16", "1433")]},
    ],
    "route_tables": [
        {"name": "rt-egress", "resource_group": "rg-prod-net", "routes": [
            {"name": "default-to-afw", "prefix": "0.0.0.0/0", "next_hop": "VirtualAppliance",
             "next_hop_ip": "10.0.1.4"}]},
    ],
    "private_dns_zones": [
        {"name": "privatelink.database.windows.net", "resource_group": "rg-hub-net",
         "linked_vnets": ["vnet-hub", "vnet-prod"]},
    ],
    "public_dns": {"api.partner.example": "203.0.113.50"},
    "vms": [
        _vm("web-vm-01", "vnet-prod/snet-web", "10.1.1.4", [8443]),
        _vm("web-vm-02", "vnet-prod/snet-web", "10.1.1.5", [8443]),
        _vm("app-vm-01", "vnet-prod/snet-app", "10.1.3.4", [8080]),
        _vm("app-vm-02", "vnet-prod/snet-app", "10.1.3.5", [8080]),
        _vm("batch-vm-01", "vnet-prod/snet-egress", "10.1.5.4", []),
    ],
    "load_balancers": [
        {"name": "ilb-app", "resource_group": "rg-prod-app",
         "frontend": {"name": "fe-app", "subnet": "vnet-prod/snet-app", "ip": "10.1.3.10"},
         "pools": [{"name": "bp-app", "vms": ["app-vm-01", "app-vm-02"]}],
         "probes": [{"name": "hp-app", "protocol": "Tcp", "port": 8080, "interval": 5,
                     "threshold": 1}],
         "rules": [{"name": "lbr-app", "protocol": "Tcp", "frontend_port": 443,
                    "backend_port": 8080, "pool": "bp-app", "probe": "hp-app"}]},
        {"name": "lbe-web", "resource_group": "rg-prod-app",
         "frontend": {"name": "fe-web", "public_ip": {"name": "pip-web", "ip": "20.50.2.10"}},
         "pools": [{"name": "bp-web", "vms": ["web-vm-01", "web-vm-02"]}],
         "probes": [{"name": "hp-web", "protocol": "Http", "port": 8443, "interval": 15,
                     "threshold": 2, "path": "/health"}],
         "rules": [{"name": "lbr-https", "protocol": "Tcp", "frontend_port": 443,
                    "backend_port": 8443, "pool": "bp-web", "probe": "hp-web"}]},
    ],
    "private_endpoints": [
        {"name": "pe-sql", "resource_group": "rg-prod-data", "subnet": "vnet-hub/snet-pe",
         "ip": "10.0.4.5", "state": "Approved",
         "target": {"kind": "sqlServer", "name": "sql-prod", "resource_group": "rg-prod-data",
                    "public_ip": "20.50.5.10", "public_access": "Disabled"},
         "zone_group": ["privatelink.database.windows.net"]},
    ],
    "firewalls": [
        {"name": "afw-hub", "resource_group": "rg-hub-net", "vnet": "vnet-hub",
         "private_ip": "10.0.1.4", "public_ips": [{"name": "pip-afw", "ip": "20.50.3.4"}],
         "tier": "Standard",
         "policy": {"name": "afwp-hub", "groups": [{"name": "rcg-spokes", "priority": 200,
                                                    "collections": [
             {"name": "net-deny-smtp", "type": "Network", "priority": 100, "action": "Deny",
              "rules": [{"name": "smtp", "protocols": ["TCP"], "sources": ["10.1.0.0/16"],
                         "destinations": ["*"], "ports": ["25"]}]},
             {"name": "app-partner", "type": "Application", "priority": 300,
              "action": "Allow",
              "rules": [{"name": "partner", "sources": ["10.1.5.0/24"],
                         "fqdns": ["api.partner.example"], "protocols": ["Https:443"]}]}]}]}},
    ],
    "nat_gateways": [
        {"name": "ngw-prod", "resource_group": "rg-prod-net",
         "public_ips": [{"name": "pip-ngw", "ip": "20.50.4.1"}],
         "subnets": ["vnet-prod/snet-web"]},
    ],
    "internet_hosts": {"203.0.113.50": [443]},
    "storage_accounts": [{"name": "stflowweu01", "resource_group": "rg-monitor"}],
    "flow_logs": [{"name": "fl-vnet-prod", "target": "vnet-prod",
                   "storage_account": "stflowweu01", "since": "3h"}],
    "traffic": [
        {"from": "web-vm-01", "to": "10.1.3.10", "port": 443, "rate": 2},
        {"from": "198.51.100.7", "to": "20.50.2.10", "port": 443, "rate": 1},
        {"from": "web-vm-01", "to": "203.0.113.50", "port": 443, "rate": 1,
         "fqdn": "api.partner.example"},
    ],
    "truth": {"category": "healthy", "resources": [], "keywords": ["healthy"],
              "red_herrings": [], "fix": "Nothing to fix"},
}


def v2_scenario() -> dict[str, Any]:
    """A fresh copy of the format-2 estate described in the module docstring."""
    return copy.deepcopy(_V2)
