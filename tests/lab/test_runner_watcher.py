"""Network Watcher, effective views and VM state through the runner, on scenarios built here."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from lab.runner import LabAnswer, LabRunner
from lab.scenario import parse_scenario
from tests.lab.conftest import base_scenario, hub_spoke_scenario

DENY = {"name": "deny-web-to-redis", "priority": 100, "direction": "Inbound", "access": "Deny",
        "protocol": "Tcp", "source": "10.1.1.0/24", "source_ports": "*", "destination": "*",
        "destination_ports": "6379"}


def runner_for(change: Callable[[dict[str, Any]], None] | None = None,
               data: dict[str, Any] | None = None) -> LabRunner:
    scenario = data if data is not None else base_scenario()
    if change is not None:
        change(scenario)
    return LabRunner(parse_scenario(scenario, "watcher.yaml"))


def az(runner: LabRunner, command: str) -> LabAnswer:
    return runner.run(["az", *shlex.split(command)])


def ok(runner: LabRunner, command: str) -> Any:
    answer = az(runner, command)
    assert answer.exit_code == 0, answer.stderr
    return json.loads(answer.stdout)


def add_deny(data: dict[str, Any]) -> None:
    data["nsgs"][1]["rules"].append(dict(DENY))


def udr_none(data: dict[str, Any]) -> None:
    data["vnets"][0]["subnets"][0]["route_table"] = "rt-web"
    data["route_tables"] = [{"name": "rt-web", "resource_group": "rg-prod-net", "routes": [
        {"name": "to-data", "prefix": "10.1.2.0/24", "next_hop": "None"}]}]


def power(state: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["vms"][1]["power_state"] = state
    return change


FLOW_IN = ("network watcher test-ip-flow --vm redis-vm-01 -g rg-prod-data --direction Inbound "
           "--protocol TCP --local 10.1.2.4:6379 --remote 10.1.1.4:49152")


@pytest.mark.parametrize(("change", "flow", "expected"), [
    (add_deny, FLOW_IN, {"access": "Deny", "ruleName": "securityRules/deny-web-to-redis"}),
    (None, FLOW_IN, {"access": "Allow", "ruleName": "securityRules/allow-web-to-redis"}),
    (None, FLOW_IN.replace("10.1.1.4:49152", "203.0.113.9:49152"),
     {"access": "Deny", "ruleName": "defaultSecurityRules/DenyAllInBound"}),
    (add_deny, FLOW_IN.replace("--protocol TCP", "--protocol udp"),
     {"access": "Allow", "ruleName": "defaultSecurityRules/AllowVnetInBound"}),
    (power("stopped"), FLOW_IN,
     {"access": "Allow", "ruleName": "securityRules/allow-web-to-redis"}),
])
def test_ip_flow_names_the_deciding_rule(change: Callable[[dict[str, Any]], None] | None,
                                         flow: str, expected: dict[str, str]) -> None:
    assert ok(runner_for(change), flow) == expected


def test_ip_flow_refuses_a_deallocated_vm_and_a_foreign_local_ip() -> None:
    answer = az(runner_for(power("deallocated")), FLOW_IN)
    assert answer.exit_code == 1
    assert "deallocated" in answer.stderr
    answer = az(runner_for(), FLOW_IN.replace("--local 10.1.2.4", "--local 10.1.2.9"))
    assert answer.exit_code == 1
    assert answer.stderr.startswith("ERROR: (")
    answer = az(runner_for(), FLOW_IN.replace("--local 10.1.2.4:6379", "--local 10.1.2.4"))
    assert answer.exit_code == 2


NEXT_HOP = ("network watcher show-next-hop --vm web-vm-01 -g rg-prod-app --source-ip 10.1.1.4 "
            "--dest-ip 10.1.2.4")


def test_next_hop_none_names_the_route_table() -> None:
    hop = ok(runner_for(udr_none), NEXT_HOP)
    assert hop["nextHopType"] == "None"
    assert hop["routeTableId"].endswith("/resourceGroups/rg-prod-net/providers/"
                                        "Microsoft.Network/routeTables/rt-web")
    plain = ok(runner_for(), NEXT_HOP)
    assert (plain["nextHopType"], plain["routeTableId"]) == ("VnetLocal", "System Route")


def test_next_hop_through_an_nva_shows_its_address() -> None:
    hop = ok(runner_for(data=hub_spoke_scenario()),
             "network watcher show-next-hop --vm app-vm-01 -g rg-spoke1 --source-ip 10.1.1.4 "
             "--dest-ip 10.2.1.4")
    assert (hop["nextHopType"], hop["nextHopIpAddress"]) == ("VirtualAppliance", "10.0.1.4")


def test_effective_routes_show_the_user_route_and_table() -> None:
    runner = runner_for(udr_none)
    routes = ok(runner, "network nic show-effective-route-table -g rg-prod-app -n web-vm-01VMNic")
    user = [r for r in routes["value"] if r["source"] == "User"]
    assert [(r["addressPrefix"], r["nextHopType"], r["state"]) for r in user] == [
        (["10.1.2.0/24"], "None", "Active")]
    table = az(runner, "network nic show-effective-route-table -g rg-prod-app -n web-vm-01VMNic "
                       "-o table").stdout.splitlines()
    assert table[0].split() == ["Source", "State", "Address", "Prefix", "Next", "Hop", "Type",
                                "Next", "Hop", "IP"]
    assert any(line.split()[:4] == ["User", "Active", "10.1.2.0/24", "None"] for line in table)


def test_effective_nsg_lists_rules_per_association() -> None:
    runner = runner_for(add_deny)
    body = ok(runner, "network nic list-effective-nsg -g rg-prod-data -n redis-vm-01VMNic")
    [entry] = body["value"]
    assert entry["association"]["subnet"]["id"].endswith("/subnets/snet-data")
    names = [r["name"] for r in entry["effectiveSecurityRules"]]
    assert names[0] == "securityRules/deny-web-to-redis"
    assert "defaultSecurityRules/DenyAllInBound" in names
    table = az(runner, "network nic list-effective-nsg -g rg-prod-data -n redis-vm-01VMNic "
                       "-o table").stdout.splitlines()
    assert table[2].split()[:4] == ["-", "snet-data", "nsg-data",
                                    "securityRules/deny-web-to-redis"]


@pytest.mark.parametrize("command", [
    "network nic show-effective-route-table -g rg-prod-data -n redis-vm-01VMNic",
    "network nic list-effective-nsg -g rg-prod-data -n redis-vm-01VMNic",
])
def test_effective_views_need_a_running_vm(command: str) -> None:
    answer = az(runner_for(power("stopped")), command)
    assert answer.exit_code == 1
    assert "running virtual machine" in answer.stderr


CONNECT = ("network watcher test-connectivity --source-resource web-vm-01 -g rg-prod-app "
           "--dest-address 10.1.2.4 --dest-port 6379")


def test_connectivity_reports_the_denying_rule_as_an_issue() -> None:
    result = ok(runner_for(add_deny), CONNECT)
    assert result["connectionStatus"] == "Unreachable"
    issues = [i for hop in result["hops"] for i in hop["issues"]]
    assert issues[0]["type"] == "NetworkSecurityRule"
    assert issues[0]["context"] == [{"key": "RuleName", "value": "UserRule_deny-web-to-redis"}]
    healthy = ok(runner_for(), CONNECT)
    assert healthy["connectionStatus"] == "Reachable"
    assert [h["type"] for h in healthy["hops"]] == ["Source", "VnetLocal"]
    assert healthy["hops"][1]["resourceId"].endswith(
        "/networkInterfaces/redis-vm-01VMNic/ipConfigurations/ipconfigredis-vm-01")
    assert healthy["hops"][0]["nextHopIds"] == [healthy["hops"][1]["id"]]


def test_connectivity_through_the_nva_lists_it_as_a_hop() -> None:
    result = ok(runner_for(data=hub_spoke_scenario()),
                "network watcher test-connectivity --source-resource app-vm-01 -g rg-spoke1 "
                "--dest-address 10.2.1.4 --dest-port 5432")
    assert result["connectionStatus"] == "Reachable"
    assert [(h["type"], h["address"]) for h in result["hops"]] == [
        ("Source", "10.1.1.4"), ("VirtualAppliance", "10.0.1.4"), ("VnetLocal", "10.2.1.4")]


def test_connectivity_needs_the_extension_and_a_destination() -> None:
    def no_extension(data: dict[str, Any]) -> None:
        data["vms"][0]["network_watcher_extension"] = False
    answer = az(runner_for(no_extension), CONNECT)
    assert answer.exit_code == 1
    assert "NetworkWatcherAgentLinux" in answer.stderr
    answer = az(runner_for(), "network watcher test-connectivity --source-resource web-vm-01 "
                              "-g rg-prod-app --dest-port 6379")
    assert answer.exit_code == 2
    assert "--dest-address" in answer.stderr


def test_instance_view_and_run_command_follow_the_power_state() -> None:
    runner = runner_for(power("stopped"))
    view = ok(runner, "vm get-instance-view -g rg-prod-data -n redis-vm-01")
    statuses = view["instanceView"]["statuses"]
    assert {"code": "PowerState/stopped", "displayStatus": "VM stopped", "level": "Info"} \
        in statuses
    tsv = az(runner, "vm get-instance-view -g rg-prod-data -n redis-vm-01 --query "
                     "\"instanceView.statuses[?starts_with(code, 'PowerState/')].displayStatus\" "
                     "-o tsv")
    assert tsv.stdout == "VM stopped\n"
    answer = az(runner, "vm run-command invoke -g rg-prod-data -n redis-vm-01 "
                        "--command-id RunShellScript --scripts 'ss -ltn'")
    assert answer.exit_code == 1
    assert answer.stderr.startswith("ERROR: (OperationNotAllowed) The operation requires the VM "
                                    "to be running (or set to run).")
    running = ok(runner_for(), "vm get-instance-view -g rg-prod-data -n redis-vm-01")
    assert running["instanceView"]["statuses"][1]["displayStatus"] == "VM running"


def test_topology_lists_the_group_and_its_associations() -> None:
    topo = ok(runner_for(), "network watcher show-topology -g rg-prod-net")
    names = {r["name"]: r for r in topo["resources"]}
    assert {"vnet-prod", "snet-web", "snet-data", "nsg-web", "nsg-data"} <= set(names)
    assert [a["name"] for a in names["snet-data"]["associations"]] == ["nsg-data"]
