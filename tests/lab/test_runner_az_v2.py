"""The lab's az answers for format 2's resources, in az's shapes (the REST resource with its
properties lifted, ``resourceGroup`` added) and az's errors."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from lab.runner import LabRunner
from lab.scenario import Scenario, parse_scenario
from tests.lab.v2_fixtures import v2_scenario


@pytest.fixture(scope="module")
def s() -> Scenario:
    return parse_scenario(v2_scenario(), "t.yaml")


def _run(s: Scenario, command: str) -> tuple[int, str, str]:
    a = LabRunner(s).run(shlex.split(command))
    return a.exit_code, a.stdout, a.stderr


def az(s: Scenario, command: str) -> Any:
    code, out, err = _run(s, command)
    assert code == 0, err
    return json.loads(out)


def test_load_balancer_and_its_parts(s: Scenario) -> None:
    lb = az(s, "az network lb show -g rg-prod-app -n ilb-app")
    assert (lb["type"], lb["sku"]) == ("Microsoft.Network/loadBalancers",
                                       {"name": "Standard", "tier": "Regional"})
    fe = lb["frontendIPConfigurations"][0]
    assert (fe["privateIPAddress"], fe["privateIPAllocationMethod"]) == ("10.1.3.10", "Static")
    assert fe["subnet"]["id"] == s.subnet_id("vnet-prod", "snet-app")
    probe = az(s, "az network lb probe show -g rg-prod-app --lb-name ilb-app -n hp-app")
    assert (probe["intervalInSeconds"], probe["numberOfProbes"], probe["port"],
            probe["protocol"]) == (5, 1, 8080, "Tcp")
    assert "requestPath" not in probe
    rule = az(s, "az network lb rule show -g rg-prod-app --lb-name ilb-app -n lbr-app")
    assert (rule["enableFloatingIP"], rule["idleTimeoutInMinutes"], rule["loadDistribution"],
            rule["frontendPort"], rule["backendPort"]) == (False, 4, "Default", 443, 8080)
    pool = az(s, "az network lb address-pool show -g rg-prod-app --lb-name ilb-app -n bp-app")
    assert [c["id"].split("/")[8] for c in pool["backendIPConfigurations"]] == [
        "app-vm-01VMNic", "app-vm-02VMNic"]
    nic = az(s, "az network nic show -g rg-prod-app -n app-vm-01VMNic")
    assert nic["ipConfigurations"][0]["loadBalancerBackendAddressPools"][0]["id"] == pool["id"]
    code, _, err = _run(s, "az network lb probe show -g rg-prod-app --lb-name ilb-app -n nope")
    assert code == 3 and err.startswith(
        f"ERROR: (NotFound) Resource {s.lb_id('ilb-app')}/probes/nope not found.")
    public = az(s, "az network lb frontend-ip list -g rg-prod-app --lb-name lbe-web")[0]
    pip = az(s, "az network public-ip show -g rg-prod-app -n pip-web")
    assert public["publicIPAddress"]["id"] == pip["id"]
    assert (pip["ipAddress"], pip["publicIPAllocationMethod"], pip["sku"]["name"],
            pip["ipConfiguration"]["id"]) == ("20.50.2.10", "Static", "Standard", public["id"])


def test_nat_gateway_and_its_subnet(s: Scenario) -> None:
    ngw = az(s, "az network nat gateway show -g rg-prod-net -n ngw-prod")
    assert (ngw["idleTimeoutInMinutes"], ngw["sku"]) == (4, {"name": "Standard"})
    assert ngw["subnets"][0]["id"] == s.subnet_id("vnet-prod", "snet-web")
    subnet = az(s, "az network vnet subnet show -g rg-prod-net --vnet-name vnet-prod "
                   "-n snet-web")
    assert subnet["natGateway"]["id"] == ngw["id"]
    pip = az(s, "az network public-ip show -g rg-prod-net -n pip-ngw")
    assert pip["natGateway"]["id"] == ngw["id"]


def test_firewall_with_a_policy(s: Scenario) -> None:
    fw = az(s, "az network firewall show -g rg-hub-net -n afw-hub")
    assert (fw["sku"], fw["threatIntelMode"]) == ({"name": "AZFW_VNet", "tier": "Standard"},
                                                  "Alert")
    assert fw["firewallPolicy"]["id"].endswith("/firewallPolicies/afwp-hub")
    assert fw["networkRuleCollections"] == [] and fw["applicationRuleCollections"] == []
    configs = az(s, "az network firewall ip-config list -g rg-hub-net -f afw-hub")
    assert configs[0]["name"] == "pip-afw" and configs[0]["privateIPAddress"] == "10.0.1.4"
    policy = az(s, "az network firewall policy show -g rg-hub-net -n afwp-hub")
    assert [g["id"].rsplit("/", 1)[1] for g in policy["ruleCollectionGroups"]] == ["rcg-spokes"]
    group = az(s, "az network firewall policy rule-collection-group show -g rg-hub-net "
                  "--policy-name afwp-hub -n rcg-spokes")
    assert group["priority"] == 200
    net, app = group["ruleCollections"]
    assert (net["ruleCollectionType"], net["action"], net["rules"][0]["ruleType"],
            net["rules"][0]["ipProtocols"], net["rules"][0]["destinationPorts"]) == (
        "FirewallPolicyFilterRuleCollection", {"type": "Deny"}, "NetworkRule", ["TCP"], ["25"])
    assert app["rules"][0]["protocols"] == [{"port": 443, "protocolType": "Https"}]
    listed = az(s, "az network firewall policy rule-collection-group collection list "
                   "-g rg-hub-net --policy-name afwp-hub --rcg-name rcg-spokes")
    assert [c["name"] for c in listed] == ["net-deny-smtp", "app-partner"]


def test_firewall_with_classic_rules() -> None:
    d = v2_scenario()
    fw = d["firewalls"][0]
    fw["rule_collections"] = fw.pop("policy")["groups"][0]["collections"]
    s = parse_scenario(d, "t.yaml")
    collections = az(s, "az network firewall network-rule collection list -g rg-hub-net "
                        "-f afw-hub")
    assert [(c["name"], c["priority"], c["action"]) for c in collections] == [
        ("net-deny-smtp", 100, {"type": "Deny"})]
    rules = az(s, "az network firewall network-rule list -g rg-hub-net -f afw-hub "
                  "--collection-name net-deny-smtp")
    assert rules[0]["protocols"] == ["TCP"] and "ruleType" not in rules[0]
    app = az(s, "az network firewall application-rule collection show -g rg-hub-net -f afw-hub "
                "-c app-partner")
    assert app["rules"][0]["targetFqdns"] == ["api.partner.example"]
    assert "firewallPolicy" not in az(s, "az network firewall show -g rg-hub-net -n afw-hub")


def test_storage_accounts_and_the_resource_list(s: Scenario) -> None:
    accounts = az(s, "az storage account list")
    assert [(a["name"], a["kind"], a["sku"]["name"]) for a in accounts] == [
        ("stflowweu01", "StorageV2", "Standard_LRS")]
    types = {r["type"] for r in az(s, "az resource list")}
    assert {"Microsoft.Network/loadBalancers", "Microsoft.Network/privateEndpoints",
            "Microsoft.Network/azureFirewalls", "Microsoft.Network/natGateways",
            "Microsoft.Network/publicIPAddresses", "Microsoft.Sql/servers",
            "Microsoft.Storage/storageAccounts"} <= types


@pytest.mark.parametrize(("command", "code", "message"), [
    ("az monitor metrics list --resource {lb} --metric Nope", 1,
     "ERROR: (BadRequest) Failed to find metric configuration for provider: Microsoft.Network, "
     "resource Type: loadBalancers, metric: Nope, Valid metrics: DipAvailability, "
     "VipAvailability"),
    ("az monitor metrics list --resource {lb} --metric DipAvailability --filter \"Bad eq '*'\"",
     1, "ERROR: (BadRequest) Metric DipAvailability has no dimension Bad"),
    ("az monitor metrics list --resource {vm} --metric \"Percentage CPU\"", 2,
     "not modelled by the lab: az monitor metrics of Microsoft.Compute/virtualMachines"),
    ("az monitor metrics list --resource {lb} --metric DipAvailability --interval PT2M", 1,
     "ERROR: (BadRequest) Invalid interval 'PT2M'"),
])
def test_metrics_errors_read_as_azure_writes_them(s: Scenario, command: str, code: int,
                                                  message: str) -> None:
    filled = command.format(lb=s.lb_id("ilb-app"), vm=s.vm_id("app-vm-01"))
    got, out, err = _run(s, filled)
    assert (got, out) == (code, "")
    assert err.startswith(message), err


def test_metrics_intervals_and_aggregations(s: Scenario) -> None:
    lb = s.lb_id("ilb-app")
    got = az(s, f"az monitor metrics list --resource {lb} --metric DipAvailability --offset 1h "
                "--interval 15m --aggregation Average Minimum")
    assert got["interval"] == "PT15M" and got["timespan"] == (
        "2026-11-20T13:20:00Z/2026-11-20T14:20:00Z")
    points = got["value"][0]["timeseries"][0]["data"]
    assert [p["timeStamp"] for p in points] == [f"2026-11-20T{t}:00+00:00" for t in
                                                ("13:20", "13:35", "13:50", "14:05")]
    assert points[0] == {"average": 100.0, "minimum": 100.0,
                         "timeStamp": "2026-11-20T13:20:00+00:00"}
