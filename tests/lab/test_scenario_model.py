"""The loaded Scenario: typed fields, lookups, derived resource ids, finding scenario files."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Any

import pytest

from lab.scenario import (
    ScenarioError,
    find_scenario,
    load_scenario,
    parse_scenario,
    shipped_dir,
    shipped_scenarios,
)
from tests.lab.conftest import SUBSCRIPTION, base_scenario, hub_spoke_scenario

SUB = f"/subscriptions/{SUBSCRIPTION}/resourceGroups"


def test_fields_are_typed_and_defaults_are_azures() -> None:
    s = parse_scenario(base_scenario(), "x.yaml")
    web = s.vm("web-vm-01")
    assert web is not None
    assert web.ip == IPv4Address("10.1.1.4")
    assert (web.vnet, web.subnet, web.mtu, web.ip_forwarding, web.nic_nsg) == (
        "vnet-prod", "snet-web", 1500, False, None)
    assert s.vnets[0].address_space == (IPv4Network("10.1.0.0/16"),)
    assert s.vnets[0].dns_servers == ()
    assert s.now == datetime(2026, 11, 20, 14, 20, tzinfo=UTC)
    event = s.activity_log[0]
    assert (event.ago_seconds, event.time) == (900, datetime(2026, 11, 20, 14, 5, tzinfo=UTC))
    assert s.traffic[0].source == "web-vm-01"


@pytest.mark.parametrize(("ago", "seconds"), [("30s", 30), ("15m", 900), ("2h", 7200),
                                              ("1d", 86400)])
def test_ago_units(ago: str, seconds: int) -> None:
    data = base_scenario()
    data["activity_log"][0]["ago"] = ago
    assert parse_scenario(data, "x.yaml").activity_log[0].ago_seconds == seconds


def test_lookups_return_none_when_absent() -> None:
    s = parse_scenario(base_scenario(), "x.yaml")
    assert s.vm("nope") is None and s.vnet("nope") is None and s.nsg("nope") is None
    assert s.subnet("vnet-prod", "nope") is None and s.route_table("nope") is None
    assert s.zone("nope") is None and s.vm_by_ip("not-an-ip") is None
    assert s.faults_at("web-vm-01") == ()
    redis = s.vm_by_ip("10.1.2.4")
    assert redis is not None and redis.name == "redis-vm-01"
    sub = s.subnet_of("redis-vm-01")
    assert sub is not None and sub.nsg == "nsg-data"


def test_resource_ids_follow_azure() -> None:
    s = parse_scenario(hub_spoke_scenario(), "x.yaml")
    net = f"{SUB}/rg-hub/providers/Microsoft.Network"
    assert s.vm_id("nva-01") == f"{SUB}/rg-hub/providers/Microsoft.Compute/virtualMachines/nva-01"
    assert s.nic_name("nva-01") == "nva-01VMNic"
    assert s.nic_id("nva-01") == f"{net}/networkInterfaces/nva-01VMNic"
    assert s.subnet_id("vnet-hub", "snet-nva") == f"{net}/virtualNetworks/vnet-hub/subnets/snet-nva"
    assert s.peering_id("vnet-hub", "hub-to-spoke1") == (
        f"{net}/virtualNetworks/vnet-hub/virtualNetworkPeerings/hub-to-spoke1")
    assert s.rule_id("nsg-nva", "x") == f"{net}/networkSecurityGroups/nsg-nva/securityRules/x"
    assert s.default_rule_id("nsg-nva", "DenyAllInBound") == (
        f"{net}/networkSecurityGroups/nsg-nva/defaultSecurityRules/DenyAllInBound")
    assert s.route_id("rt-spoke1", "to-spoke2") == (
        f"{SUB}/rg-spoke1/providers/Microsoft.Network/routeTables/rt-spoke1/routes/to-spoke2")
    with pytest.raises(KeyError):
        s.nsg_id("nope")


@pytest.mark.parametrize(("text", "suffix"), [
    ("nva-01", "/providers/Microsoft.Compute/virtualMachines/nva-01"),
    ("nsg-nva", "/networkSecurityGroups/nsg-nva"),
    ("vnet-hub", "/virtualNetworks/vnet-hub"),
    ("rt-spoke1/to-spoke2", "/routeTables/rt-spoke1/routes/to-spoke2"),
    ("vnet-hub/snet-nva", "/virtualNetworks/vnet-hub/subnets/snet-nva"),
    ("hub-to-spoke1", "/virtualNetworks/vnet-hub/virtualNetworkPeerings/hub-to-spoke1"),
    # a NIC named as az vm create names it lives in its VM's resource group
    ("nva-01VMNic", "/networkInterfaces/nva-01VMNic"),
])
def test_activity_resources_that_name_the_model_get_ids(text: str, suffix: str) -> None:
    s = parse_scenario(hub_spoke_scenario(), "x.yaml")
    rid = s.resource_id_for(text)
    assert rid is not None and rid.endswith(suffix)


def test_activity_resources_outside_the_model_have_no_id() -> None:
    s = parse_scenario(hub_spoke_scenario(), "x.yaml")
    assert s.resource_id_for("api-vm-02") is None
    assert s.resource_id_for("nsg-nva/no-such-rule") is None


def test_find_scenario_by_path_or_shipped_name(
    write_scenario: Callable[[dict[str, Any]], Path],
) -> None:
    path = write_scenario(base_scenario())
    assert find_scenario(str(path)) == path
    assert load_scenario(find_scenario(str(path))).name == "test-estate"
    for shipped in shipped_scenarios():
        assert shipped.parent == shipped_dir()
        assert find_scenario(shipped.stem) == shipped
    with pytest.raises(ScenarioError) as info:
        find_scenario("no-such-scenario")
    assert info.value.errors[0].startswith(
        "no-such-scenario: no such scenario file or shipped scenario (shipped: ")
