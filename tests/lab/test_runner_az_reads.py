"""The lab's `az` reads: resource shapes, names and ids per the format, lookups as ARM does them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.runner import LabRunner
from lab.scenario import parse_scenario
from tests.lab.conftest import SUBSCRIPTION, base_scenario

RG_NET = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-prod-net/providers/Microsoft.Network"
RG_APP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-prod-app/providers"


def _estate() -> dict[str, Any]:
    data = base_scenario()
    data["vnets"][0]["subnets"][1]["route_table"] = "rt-data"
    data["vnets"][0]["dns_servers"] = []
    data["route_tables"] = [{"name": "rt-data", "resource_group": "rg-prod-net", "routes": [
        {"name": "blackhole", "prefix": "10.1.1.0/24", "next_hop": "None"},
        {"name": "to-fw", "prefix": "0.0.0.0/0", "next_hop": "VirtualAppliance",
         "next_hop_ip": "10.1.1.4"}]}]
    data["nsgs"][1]["rules"].append(
        {"name": "allow-web", "priority": 300, "direction": "Inbound", "access": "Allow",
         "protocol": "Tcp", "source": "VirtualNetwork", "source_ports": "*",
         "destination": "*", "destination_ports": "80,443"})
    data["vms"][0]["nic_nsg"] = "nsg-web"
    data["private_dns_zones"] = [{"name": "privatelink.redis.cache.windows.net",
                                  "resource_group": "rg-prod-net", "linked_vnets": ["vnet-prod"],
                                  "records": {"redis-prod": "10.1.2.4"}}]
    return data


@pytest.fixture
def runner() -> LabRunner:
    return LabRunner(parse_scenario(_estate(), "reads.yaml"))


def az(runner: LabRunner, command: str) -> Any:
    answer = runner.run(["az", *command.split()])
    assert answer.exit_code == 0, answer.stderr
    assert answer.stderr == ""
    return json.loads(answer.stdout)


@pytest.mark.parametrize(("command", "expected_id", "expected_type"), [
    ("network vnet show -g rg-prod-net -n vnet-prod", f"{RG_NET}/virtualNetworks/vnet-prod",
     "Microsoft.Network/virtualNetworks"),
    ("network vnet subnet show -g rg-prod-net --vnet-name vnet-prod -n snet-data",
     f"{RG_NET}/virtualNetworks/vnet-prod/subnets/snet-data",
     "Microsoft.Network/virtualNetworks/subnets"),
    ("network nsg show -g rg-prod-net -n nsg-data", f"{RG_NET}/networkSecurityGroups/nsg-data",
     "Microsoft.Network/networkSecurityGroups"),
    ("network nsg rule show -g rg-prod-net --nsg-name nsg-data -n allow-web",
     f"{RG_NET}/networkSecurityGroups/nsg-data/securityRules/allow-web",
     "Microsoft.Network/networkSecurityGroups/securityRules"),
    ("network nic show -g rg-prod-app -n web-vm-01VMNic",
     f"{RG_APP}/Microsoft.Network/networkInterfaces/web-vm-01VMNic",
     "Microsoft.Network/networkInterfaces"),
    ("network route-table show -g rg-prod-net -n rt-data", f"{RG_NET}/routeTables/rt-data",
     "Microsoft.Network/routeTables"),
    ("network route-table route show -g rg-prod-net --route-table-name rt-data -n blackhole",
     f"{RG_NET}/routeTables/rt-data/routes/blackhole", "Microsoft.Network/routeTables/routes"),
    ("network private-dns zone show -g rg-prod-net -n privatelink.redis.cache.windows.net",
     f"{RG_NET}/privateDnsZones/privatelink.redis.cache.windows.net",
     "Microsoft.Network/privateDnsZones"),
    ("network private-dns link vnet show -g rg-prod-net -z privatelink.redis.cache.windows.net "
     "-n vnet-prod",
     f"{RG_NET}/privateDnsZones/privatelink.redis.cache.windows.net/virtualNetworkLinks/vnet-prod",
     "Microsoft.Network/privateDnsZones/virtualNetworkLinks"),
    ("network private-dns record-set a show -g rg-prod-net -z privatelink.redis.cache.windows.net "
     "-n redis-prod", f"{RG_NET}/privateDnsZones/privatelink.redis.cache.windows.net/A/redis-prod",
     "Microsoft.Network/privateDnsZones/A"),
    ("vm show -g rg-prod-app -n web-vm-01", f"{RG_APP}/Microsoft.Compute/virtualMachines/web-vm-01",
     "Microsoft.Compute/virtualMachines"),
])
def test_show_names_resources_by_their_derived_ids(runner: LabRunner, command: str,
                                                   expected_id: str, expected_type: str) -> None:
    body = az(runner, command)
    assert body["id"] == expected_id
    assert body["type"] == expected_type
    assert body["name"] == expected_id.rsplit("/", 1)[1]
    assert body["resourceGroup"] == expected_id.split("/")[4]


def test_nic_follows_az_vm_create_naming_and_carries_the_vm_settings(runner: LabRunner) -> None:
    nic = az(runner, "network nic show -g rg-prod-app -n web-vm-01VMNic")
    config = nic["ipConfigurations"][0]
    assert config["name"] == "ipconfigweb-vm-01"
    assert config["privateIPAddress"] == "10.1.1.4"
    assert config["privateIPAllocationMethod"] == "Static"
    assert config["subnet"]["id"].endswith("/virtualNetworks/vnet-prod/subnets/snet-web")
    assert nic["enableIPForwarding"] is False
    assert nic["networkSecurityGroup"]["id"].endswith("/networkSecurityGroups/nsg-web")
    assert nic["networkSecurityGroup"]["resourceGroup"] == "rg-prod-net"
    assert nic["virtualMachine"]["id"].endswith("/virtualMachines/web-vm-01")


def test_rules_with_port_lists_use_the_plural_fields(runner: LabRunner) -> None:
    rule = az(runner, "network nsg rule show -g rg-prod-net --nsg-name nsg-data -n allow-web")
    assert rule["destinationPortRanges"] == ["80", "443"]
    assert "destinationPortRange" not in rule
    assert rule["sourceAddressPrefix"] == "VirtualNetwork"
    assert (rule["priority"], rule["access"], rule["direction"]) == (300, "Allow", "Inbound")


def test_nsg_has_azure_default_rules_and_its_associations(runner: LabRunner) -> None:
    nsg = az(runner, "network nsg show -g rg-prod-net -n nsg-web")
    defaults = {(r["name"], r["priority"], r["direction"], r["access"])
                for r in nsg["defaultSecurityRules"]}
    assert ("DenyAllInBound", 65500, "Inbound", "Deny") in defaults
    assert ("AllowInternetOutBound", 65001, "Outbound", "Allow") in defaults
    assert len(defaults) == 6
    assert [s["id"].rsplit("/", 1)[1] for s in nsg["subnets"]] == ["snet-web"]
    assert [n["id"].rsplit("/", 1)[1] for n in nsg["networkInterfaces"]] == ["web-vm-01VMNic"]
    listed = az(runner, "network nsg rule list -g rg-prod-net --nsg-name nsg-web")
    assert listed == []
    with_defaults = az(runner, "network nsg rule list -g rg-prod-net --nsg-name nsg-web "
                               "--include-default")
    assert len(with_defaults) == 6


def test_routes_show_next_hops_as_written(runner: LabRunner) -> None:
    routes = az(runner, "network route-table route list -g rg-prod-net --route-table-name rt-data")
    assert [(r["name"], r["addressPrefix"], r["nextHopType"], r.get("nextHopIpAddress"))
            for r in routes] == [("blackhole", "10.1.1.0/24", "None", None),
                                 ("to-fw", "0.0.0.0/0", "VirtualAppliance", "10.1.1.4")]


def test_zone_link_is_named_after_the_vnet_without_registration(runner: LabRunner) -> None:
    links = az(runner, "network private-dns link vnet list -g rg-prod-net "
                       "--zone-name privatelink.redis.cache.windows.net")
    assert [(lk["name"], lk["registrationEnabled"]) for lk in links] == [("vnet-prod", False)]
    assert links[0]["virtualNetwork"]["id"] == f"{RG_NET}/virtualNetworks/vnet-prod"
    records = az(runner, "network private-dns record-set a list -g rg-prod-net "
                         "-z privatelink.redis.cache.windows.net")
    assert records[0]["aRecords"] == [{"ipv4Address": "10.1.2.4"}]


@pytest.mark.parametrize(("command", "names"), [
    ("network vnet list", ["vnet-prod"]),
    ("network nsg list -g rg-prod-net", ["nsg-web", "nsg-data"]),
    ("vm list", ["web-vm-01", "redis-vm-01"]),
    ("vm list -g RG-PROD-DATA", ["redis-vm-01"]),
    ("network nic list -g rg-prod-app", ["web-vm-01VMNic"]),
    ("network public-ip list", []),
    ("network lb list -g rg-prod-net", []),
    ("group list", ["rg-prod-net", "rg-prod-app", "rg-prod-data"]),
])
def test_lists_filter_by_resource_group_case_insensitively(runner: LabRunner, command: str,
                                                           names: list[str]) -> None:
    assert [item["name"] for item in az(runner, command)] == names


def test_ids_replace_group_and_name_and_accept_several(runner: LabRunner) -> None:
    one = az(runner, f"network vnet show --ids {RG_NET}/virtualNetworks/vnet-prod")
    assert one["name"] == "vnet-prod"
    both = az(runner, f"network nsg show --ids {RG_NET}/networkSecurityGroups/nsg-web "
                      f"{RG_NET}/networkSecurityGroups/nsg-data")
    assert [n["name"] for n in both] == ["nsg-web", "nsg-data"]
    subnet = az(runner, "network vnet subnet show --ids "
                        f"{RG_NET}/virtualNetworks/vnet-prod/subnets/snet-web")
    assert subnet["addressPrefix"] == "10.1.1.0/24"


def test_vm_views_show_power_state_and_addresses(runner: LabRunner) -> None:
    details = az(runner, "vm show -g rg-prod-app -n web-vm-01 -d")
    assert (details["powerState"], details["privateIps"]) == ("VM running", "10.1.1.4")
    ips = az(runner, "vm list-ip-addresses -g rg-prod-data")
    assert ips == [{"virtualMachine": {"name": "redis-vm-01", "resourceGroup": "rg-prod-data",
                                       "network": {"privateIpAddresses": ["10.1.2.4"],
                                                   "publicIpAddresses": []}}}]
    account = az(runner, "account show")
    assert account["id"] == SUBSCRIPTION
    assert account["isDefault"] is True


def test_resource_list_and_show_cover_the_estate(runner: LabRunner) -> None:
    types = {r["type"] for r in az(runner, "resource list")}
    assert {"Microsoft.Network/virtualNetworks", "Microsoft.Network/networkSecurityGroups",
            "Microsoft.Network/networkInterfaces", "Microsoft.Compute/virtualMachines",
            "Microsoft.Network/routeTables", "Microsoft.Network/privateDnsZones"} <= types
    shown = az(runner, f"resource show --ids {RG_NET}/routeTables/rt-data")
    assert shown["properties"]["routes"][0]["name"] == "blackhole"
    by_name = az(runner, "resource show -g rg-prod-net -n nsg-web "
                         "--resource-type Microsoft.Network/networkSecurityGroups")
    assert by_name["name"] == "nsg-web"


@pytest.mark.parametrize(("installed", "names"), [(True, ["NetworkWatcherAgentLinux"]),
                                                  (False, [])])
def test_vm_extension_list_shows_the_watcher_agent_when_installed(installed: bool,
                                                                  names: list[str]) -> None:
    data = _estate()
    data["vms"][1]["network_watcher_extension"] = installed
    runner = LabRunner(parse_scenario(data, "ext.yaml"))
    listed = az(runner, "vm extension list -g rg-prod-data --vm-name redis-vm-01")
    assert [e["name"] for e in listed] == names
    show = runner.run(["az", "vm", "extension", "show", "-g", "rg-prod-data", "--vm-name",
                       "redis-vm-01", "-n", "NetworkWatcherAgentLinux"])
    assert show.exit_code == (0 if installed else 3)
    view = az(runner, "vm get-instance-view -g rg-prod-data -n redis-vm-01")
    assert [e["name"] for e in view["instanceView"].get("extensions", [])] == names


def test_nic_ip_configs_and_zone_record_sets(runner: LabRunner) -> None:
    configs = az(runner, "network nic ip-config list -g rg-prod-app --nic-name web-vm-01VMNic")
    assert [(c["name"], c["privateIPAddress"]) for c in configs] == [("ipconfigweb-vm-01",
                                                                      "10.1.1.4")]
    records = az(runner, "network private-dns record-set list -g rg-prod-net "
                         "-z privatelink.redis.cache.windows.net")
    assert [(r["name"], r["type"].rsplit("/", 1)[1]) for r in records] == [("@", "SOA"),
                                                                          ("redis-prod", "A")]
    nics = az(runner, "vm nic list -g rg-prod-app --vm-name web-vm-01")
    assert nics[0]["id"].endswith("/networkInterfaces/web-vm-01VMNic")
