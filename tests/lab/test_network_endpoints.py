"""Private endpoints against Azure's documented behaviour (*What is Azure Private Endpoint?*,
*Azure Private Endpoint DNS integration*, *Azure Private Endpoint private DNS zone values*,
*Manage network policies for private endpoints*): approval, network policies, the /32 route,
the public CNAME into the privatelink zone, and az's shapes."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from lab.network import Estate
from lab.runner import LabRunner
from lab.scenario import parse_scenario
from tests.lab.v2_fixtures import v2_scenario


def _estate(**changes: Any) -> Estate:
    d = v2_scenario()
    pe = d["private_endpoints"][0]
    for key, value in changes.items():
        if key in ("policies",):
            d["vnets"][0]["subnets"][1]["private_endpoint_network_policies"] = value
        elif key == "target":
            pe["target"].update(value)
        else:
            pe[key] = value
    return Estate(parse_scenario(d, "t.yaml"))


@pytest.mark.parametrize(("why", "changes", "port", "outcome"), [
    ("Approved carries traffic on the kind's port (sqlServer: 1433)", {}, 1433, "connected"),
    ("another port of the endpoint answers nothing", {}, 443, "timeout"),
    ("Pending carries nothing", {"state": "Pending"}, 1433, "timeout"),
    ("Rejected carries nothing", {"state": "Rejected"}, 1433, "timeout"),
    ("Disconnected carries nothing", {"state": "Disconnected"}, 1433, "timeout"),
    ("the subnet NSG does not apply with policies Disabled (the default)", {}, 1433,
     "connected"),
    ("it applies with policies Enabled", {"policies": "Enabled"}, 1433, "timeout"),
    ("and with NetworkSecurityGroupEnabled", {"policies": "NetworkSecurityGroupEnabled"}, 1433,
     "timeout"),
    ("not with RouteTableEnabled alone", {"policies": "RouteTableEnabled"}, 1433, "connected"),
])
def test_a_private_endpoint_answers_only_approved_on_its_ports(why: str, changes: dict[str, Any],
                                                                port: int, outcome: str) -> None:
    # nsg-pe (on snet-pe) denies 1433 from 10.1.0.0/16, where web-vm-01 lives
    conn = _estate(**changes).connect("web-vm-01", "10.0.4.5", port)
    assert conn.outcome == outcome, why


def _routes(e: Estate, vm: str) -> dict[str, tuple[str, str]]:
    return {r.prefixes[0]: (r.next_hop_type, r.state) for r in e.effective_routes(vm)}


def test_the_endpoint_adds_a_slash_32_in_its_vnet_and_peered_vnets() -> None:
    e = _estate()
    for vm in ("web-vm-01", "batch-vm-01"):  # vnet-prod, peered with the endpoint's hub
        assert _routes(e, vm)["10.0.4.5/32"] == ("InterfaceEndpoint", "Active")
    hop = e.next_hop("web-vm-01", "10.1.1.4", "10.0.4.5")
    assert (hop.next_hop_type, hop.route_table_id) == ("VnetLocal", "System Route")


@pytest.mark.parametrize(("why", "policies", "prefix", "state"), [
    ("a UDR at least as long as the VNet's prefix overrides it under RouteTableEnabled",
     "RouteTableEnabled", "10.0.0.0/16", "Invalid"),
    ("and under Enabled", "Enabled", "10.0.4.0/24", "Invalid"),
    ("a shorter UDR does not", "RouteTableEnabled", "10.0.0.0/8", "Active"),
    ("0.0.0.0/0 never does", "Enabled", "0.0.0.0/0", "Active"),
    ("without route-table policies nothing does", "Disabled", "10.0.0.0/16", "Active"),
])
def test_a_user_route_overrides_the_slash_32_only_under_network_policies(
        why: str, policies: str, prefix: str, state: str) -> None:
    d = v2_scenario()
    d["vnets"][0]["subnets"][1]["private_endpoint_network_policies"] = policies
    d["route_tables"][0]["routes"][0]["prefix"] = prefix
    e = Estate(parse_scenario(d, "t.yaml"))
    assert _routes(e, "batch-vm-01")["10.0.4.5/32"] == ("InterfaceEndpoint", state), why


@pytest.mark.parametrize(("why", "links", "zone_group", "addresses", "rcode"), [
    ("a linked zone holding the record gives the endpoint's address",
     ["vnet-hub", "vnet-prod"], True, ["10.0.4.5"], "NOERROR"),
    ("an unlinked zone gives the public address", ["vnet-hub"], True, ["20.50.5.10"],
     "NOERROR"),
    ("a linked zone without the record gives NXDOMAIN, no public fallback",
     ["vnet-hub", "vnet-prod"], False, [], "NXDOMAIN"),
])
def test_azure_dns_follows_the_public_cname_into_the_private_zone(
        why: str, links: list[str], zone_group: bool, addresses: list[str], rcode: str) -> None:
    d = v2_scenario()
    d["private_dns_zones"][0]["linked_vnets"] = links
    if not zone_group:
        del d["private_endpoints"][0]["zone_group"]
    e = Estate(parse_scenario(d, "t.yaml"))
    answer = e.resolve("sql-prod.database.windows.net", "web-vm-01")
    assert (answer.rcode, [str(a) for a in answer.addresses]) == (rcode, addresses), why
    assert answer.cname == "sql-prod.privatelink.database.windows.net"
    public = e.resolve("sql-prod.database.windows.net", None)  # the engineer's machine
    assert [str(a) for a in public.addresses] == ["20.50.5.10"]


@pytest.mark.parametrize(("access", "outcome"), [("Enabled", "connected"),
                                                 ("Disabled", "timeout")])
def test_the_targets_public_ip_answers_public_sources_only_when_enabled(
        access: str, outcome: str) -> None:
    e = _estate(target={"public_access": access})
    assert e.connect(None, "20.50.5.10", 1433).outcome == outcome


def _az(e: Estate, command: str) -> Any:
    answer = LabRunner(e.timeline, e).run(shlex.split(command))
    assert answer.exit_code == 0, answer.stderr
    return json.loads(answer.stdout) if answer.stdout.strip() else None


def test_az_shows_the_endpoint_its_nic_and_zone_group_as_azure_does() -> None:
    e = _estate(state="Pending")
    pe = _az(e, "az network private-endpoint show -g rg-prod-data -n pe-sql")
    conn = pe["privateLinkServiceConnections"][0]
    assert conn["groupIds"] == ["sqlServer"]
    assert conn["privateLinkServiceConnectionState"] == {"actionsRequired": "None",
                                                         "description": "", "status": "Pending"}
    assert conn["privateLinkServiceId"].endswith("/providers/Microsoft.Sql/servers/sql-prod")
    assert pe["customDnsConfigs"] == [{"fqdn": "sql-prod.database.windows.net",
                                       "ipAddresses": ["10.0.4.5"]}]
    nic_name = pe["networkInterfaces"][0]["id"].rsplit("/", 1)[1]
    assert nic_name.startswith("pe-sql.nic.")
    nic = _az(e, f"az network nic show -g rg-prod-data -n {nic_name}")
    assert nic["privateEndpoint"]["id"] == pe["id"]
    assert nic["ipConfigurations"][0]["name"].startswith("privateEndpointIpConfig.")
    assert nic["ipConfigurations"][0]["privateIPAddress"] == "10.0.4.5"
    groups = _az(e, "az network private-endpoint dns-zone-group list -g rg-prod-data "
                    "--endpoint-name pe-sql")
    assert [g["name"] for g in groups] == ["default"]
    config = groups[0]["privateDnsZoneConfigs"][0]
    assert config["name"] == "privatelink-database-windows-net"
    assert config["recordSets"][0] == {
        "fqdn": "sql-prod.privatelink.database.windows.net.", "ipAddresses": ["10.0.4.5"],
        "provisioningState": "Succeeded", "recordSetName": "sql-prod", "recordType": "A",
        "ttl": 10}
    # the zone group's record is in the zone too
    records = _az(e, "az network private-dns record-set a list -g rg-hub-net "
                     "-z privatelink.database.windows.net")
    assert [(r["name"], r["aRecords"]) for r in records] == [
        ("sql-prod", [{"ipv4Address": "10.0.4.5"}])]
    subnet = _az(e, "az network vnet subnet show -g rg-hub-net --vnet-name vnet-hub -n snet-pe")
    assert subnet["privateEndpointNetworkPolicies"] == "Disabled"
    assert subnet["privateEndpoints"] == [{"id": pe["id"], "resourceGroup": "rg-prod-data"}]
    server = _az(e, "az sql server show -g rg-prod-data -n sql-prod")
    assert server["publicNetworkAccess"] == "Disabled"
    assert server["privateEndpointConnections"][0]["properties"][
        "privateLinkServiceConnectionState"]["status"] == "Pending"


def test_an_endpoint_without_zone_group_lists_none() -> None:
    d = v2_scenario()
    del d["private_endpoints"][0]["zone_group"]
    e = Estate(parse_scenario(d, "t.yaml"))
    assert _az(e, "az network private-endpoint dns-zone-group list -g rg-prod-data "
                  "--endpoint-name pe-sql") == []
