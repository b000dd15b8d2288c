"""Load balancers against Azure's documented behaviour (*Azure Load Balancer health probes*,
*What is Azure Load Balancer?*, *High availability ports overview*, *Supported metrics for
Microsoft.Network/loadBalancers*): probes from 168.63.129.16 through the NSGs, all-down drops,
public frontends closed unless NSGs open them, HA ports, metrics and captures."""

from __future__ import annotations

import json
import shlex
from ipaddress import IPv4Address
from typing import Any

import pytest

from lab.network import Estate
from lab.network.lb import probe_vm
from lab.runner import LabRunner
from lab.scenario import Scenario, parse_scenario
from lab.traffic import capture_frames
from tests.lab.v2_fixtures import v2_scenario

PLATFORM = IPv4Address("168.63.129.16")


def _rule(name: str, priority: int, access: str, source: str, ports: str = "*",
          protocol: str = "*") -> dict[str, Any]:
    return {"name": name, "priority": priority, "direction": "Inbound", "access": access,
            "protocol": protocol, "source": source, "source_ports": "*", "destination": "*",
            "destination_ports": ports}


def _app_estate(extra_rules: list[dict[str, Any]], **vm: Any) -> Scenario:
    """The v2 estate with extra rules on nsg-app (ilb-app's backends) and app-vm-01 changed."""
    d = v2_scenario()
    d["nsgs"][1]["rules"] += extra_rules
    d["vms"][2].update(vm)
    return parse_scenario(d, "t.yaml")


ALLOW_WEB = "allow-web-to-app"
# (why, extra nsg-app rules, app-vm-01 changes, probe up?, the verdict's reason)
PROBE_CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any], bool, str]] = [
    ("the defaults admit the probe (168.63.129.16 is in VirtualNetwork: AllowVnetInBound)",
     [], {}, True, "up"),
    ("a custom deny-all above 65001 meets the probe first, the clients' allow still works",
     [_rule("deny-all", 4000, "Deny", "*")], {}, False,
     "nsg nsg-app/securityRules/deny-all"),
    ("denying the AzureLoadBalancer tag blocks it", [_rule("deny-lb", 300, "Deny",
                                                           "AzureLoadBalancer")], {}, False,
     "nsg nsg-app/securityRules/deny-lb"),
    ("denying 168.63.129.16 itself blocks it", [_rule("deny-ip", 300, "Deny",
                                                      "168.63.129.16")], {}, False,
     "nsg nsg-app/securityRules/deny-ip"),
    ("denying VirtualNetwork blocks it too (the platform address is in the tag)",
     [_rule("deny-vnet", 300, "Deny", "VirtualNetwork")], {}, False,
     "nsg nsg-app/securityRules/deny-vnet"),
    ("an allow from AzureLoadBalancer above the deny-all keeps it up",
     [_rule("allow-lb", 200, "Allow", "AzureLoadBalancer"), _rule("deny-all", 4000, "Deny",
                                                                  "*")], {}, True, "up"),
    ("denying another port does not touch the probe",
     [_rule("deny-ssh", 300, "Deny", "*", "22")], {}, True, "up"),
    ("a stopped VM is not probed: down", [], {"power_state": "stopped"}, False,
     "vm stopped"),
    ("nothing listens on the probe port: the VM answers RST, down", [], {"listens": [9090]},
     False, "nothing listens on 8080"),
]


@pytest.mark.parametrize(("why", "rules", "vm", "up", "reason"), PROBE_CASES,
                         ids=[c[0] for c in PROBE_CASES])
def test_the_probe_is_an_inbound_flow_from_the_platform(why: str, rules: list[dict[str, Any]],
                                                        vm: dict[str, Any], up: bool,
                                                        reason: str) -> None:
    s = _app_estate(rules, **vm)
    balancer = s.lb("ilb-app")
    assert balancer is not None
    probe = balancer.probe("hp-app")
    assert probe is not None
    verdict = probe_vm(s, probe, s.vm("app-vm-01"))  # type: ignore[arg-type]
    assert (verdict.up, verdict.why) == (up, reason), why
    if vm.get("power_state") is None and "listens" not in vm:
        # IP flow verify with remote 168.63.129.16 gives the same verdict
        flow = Estate(s).ip_flow_verify("app-vm-01", "Inbound", "TCP", "10.1.3.4", 8080,
                                        "168.63.129.16", 54321)
        assert (flow.access == "Allow") == up, why


def test_all_backends_down_drops_new_flows_silently() -> None:
    s = _app_estate([_rule("deny-all", 4000, "Deny", "*")])
    d = v2_scenario()
    d["nsgs"][1]["rules"].append(_rule("deny-all", 4000, "Deny", "*"))
    conn = Estate(parse_scenario(d, "t.yaml")).connect("web-vm-01", "10.1.3.10", 443)
    assert (conn.outcome, conn.forward.drop_kind) == ("timeout", "lb_down")
    assert "no healthy backend in bp-app" in (conn.forward.reason or "")
    # one backend down: the frontend sends every flow to the other
    one = Estate(_app_estate([], power_state="deallocated"))
    for choose in range(3):
        c = one.connect("web-vm-01", "10.1.3.10", 443, choose=choose)
        assert (c.outcome, c.forward.hops[-1]) == ("connected", "app-vm-02")
    del s


def test_flows_spread_over_up_backends_and_keep_the_client_source() -> None:
    e = Estate(parse_scenario(v2_scenario(), "t.yaml"))
    got = [e.connect("web-vm-01", "10.1.3.10", 443, choose=k).forward for k in range(4)]
    assert [d.hops[-1] for d in got] == ["app-vm-01", "app-vm-02", "app-vm-01", "app-vm-02"]
    last = got[0].views[-1]
    assert last is not None
    assert (str(last.src), str(last.dst), last.dst_port) == ("10.1.1.4", "10.1.3.4", 8080)
    # a port no rule has: dropped
    assert e.connect("web-vm-01", "10.1.3.10", 8080).forward.drop_kind == "lb_no_rule"


@pytest.mark.parametrize(("why", "nsg", "outcome"), [
    ("an NSG allowing the clients opens the public frontend", "nsg-web", "connected"),
    ("a backend without NSG on subnet or NIC receives nothing through it", None, "timeout"),
])
def test_a_public_frontend_is_closed_unless_an_nsg_opens_it(why: str, nsg: str | None,
                                                             outcome: str) -> None:
    d = v2_scenario()
    if nsg is None:
        del d["vnets"][1]["subnets"][0]["nsg"]
    e = Estate(parse_scenario(d, "t.yaml"))
    assert e.connect_from("198.51.100.7", "20.50.2.10", 443).outcome == outcome, why
    # the engineer's machine is an Internet client too
    assert e.connect(None, "20.50.2.10", 443).outcome == outcome, why


def test_clients_the_nsg_does_not_allow_fall_to_deny_all_inbound() -> None:
    d = v2_scenario()
    d["nsgs"][0]["rules"][0]["source"] = "147.243.0.0/16"
    e = Estate(parse_scenario(d, "t.yaml"))
    conn = e.connect_from("198.51.100.7", "20.50.2.10", 443)
    assert conn.outcome == "timeout"
    assert conn.forward.reason == "nsg-web/defaultSecurityRules/DenyAllInBound"


def test_ha_ports_as_next_hop_hand_the_packet_to_an_up_forwarding_vm() -> None:
    d = v2_scenario()
    d["load_balancers"][0]["rules"] = [{"name": "ha", "protocol": "All", "frontend_port": 0,
                                        "backend_port": 0, "pool": "bp-app",
                                        "probe": "hp-app"}]
    for vm in d["vms"][2:4]:
        vm["ip_forwarding"] = True
    d["route_tables"][0]["routes"][0].update(next_hop_ip="10.1.3.10", prefix="10.1.1.0/24")
    d["route_tables"].append({"name": "rt-web", "resource_group": "rg", "routes": [
        {"name": "back", "prefix": "10.1.5.0/24", "next_hop": "VirtualAppliance",
         "next_hop_ip": "10.1.3.10"}]})
    d["vnets"][1]["subnets"][0]["route_table"] = "rt-web"
    e = Estate(parse_scenario(d, "t.yaml"))
    hop = e.next_hop("batch-vm-01", "10.1.5.4", "10.1.1.4")
    assert (hop.next_hop_type, hop.next_hop_ip) == ("VirtualAppliance", "10.1.3.10")
    conn = e.connect("batch-vm-01", "10.1.1.4", 8443)
    assert conn.outcome == "connected"
    assert conn.forward.hops == ("batch-vm-01", "app-vm-01", "web-vm-01")
    assert conn.reverse is not None and conn.reverse.hops == ("web-vm-01", "app-vm-01",
                                                              "batch-vm-01")


def _az(s: Scenario, command: str) -> Any:
    answer = LabRunner(s).run(shlex.split(command))
    assert answer.exit_code == 0, answer.stderr
    return json.loads(answer.stdout)


def test_metrics_health_probe_status_per_backend_and_data_path() -> None:
    d = v2_scenario()
    d["vms"][3]["listens"] = []  # app-vm-02 fails the probe
    s = parse_scenario(d, "t.yaml")
    lb_id = s.lb_id("ilb-app")
    got = _az(s, f"az monitor metrics list --resource {lb_id} --metric DipAvailability "
                 "--offset 5m --filter \"BackendIPAddress eq '*'\"")
    series = {ts["metadatavalues"][0]["value"]: [p["average"] for p in ts["data"]]
              for ts in got["value"][0]["timeseries"]}
    assert series == {"10.1.3.4": [100.0] * 5, "10.1.3.5": [0.0] * 5}
    assert got["value"][0]["name"] == {"localizedValue": "Health Probe Status",
                                       "value": "DipAvailability"}
    vip = _az(s, f"az monitor metrics list --resource {lb_id} --metric VipAvailability "
                 "--offset 5m --interval PT5M")
    assert vip["value"][0]["timeseries"][0]["data"] == [
        {"average": 100.0, "timeStamp": "2026-11-20T14:15:00+00:00"}]


@pytest.mark.parametrize(("why", "change", "first_flags"), [
    ("up: the probe's SYN is answered and the prober closes", {}, ["S", "SA", "A"]),
    ("nothing listens on the probe port: answered by RST", {"listens": [9090]}, ["S", "RA"]),
])
def test_a_capture_on_a_pool_vm_shows_the_probes(why: str, change: dict[str, Any],
                                                 first_flags: list[str]) -> None:
    d = v2_scenario()
    d["traffic"] = [{"from": "web-vm-01", "to": "203.0.113.50", "port": 443, "rate": 1}]
    d["vms"][2].update(change)
    s = parse_scenario(d, "t.yaml")
    e = Estate(s)
    frames = capture_frames(e.scenario, e, "app-vm-01", 30, start_s=s.now.timestamp())
    probes = [f for _, f in frames if f[14 + 12:14 + 16] == PLATFORM.packed
              or f[14 + 16:14 + 20] == PLATFORM.packed]
    names = {0x02: "S", 0x12: "SA", 0x10: "A", 0x14: "RA", 0x11: "FA", 0x18: "PA"}
    flags = [names.get(f[14 + 20 + 13], "?") for f in probes[:len(first_flags)]]
    assert flags == first_flags, why
    assert len([f for f in probes if f[14 + 20 + 13] == 0x02]) == 4  # every 5 s for 24 s


def test_a_capture_shows_no_probe_an_nsg_dropped() -> None:
    d = v2_scenario()
    d["nsgs"][1]["rules"].append(_rule("deny-all", 4000, "Deny", "*"))
    s = parse_scenario(d, "t.yaml")
    e = Estate(s)
    frames = capture_frames(e.scenario, e, "app-vm-01", 30, start_s=s.now.timestamp())
    assert not any(PLATFORM.packed in f[14 + 12:14 + 20] for _, f in frames)
