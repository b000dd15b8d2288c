"""Azure Firewall and the Internet edge against Azure's documented behaviour (*Azure Firewall
rule processing logic*, *Azure Firewall Policy rule sets*, *Azure Firewall SNAT private IP
address ranges*, *Azure Firewall FAQ*, *Azure NAT Gateway resource*): rule order, default
deny, the 80/443 proxy, SNAT, no default outbound access, SNAT exhaustion and latency."""

from __future__ import annotations

import json
import shlex
from ipaddress import IPv4Address
from typing import Any

import pytest

from lab.model_v2 import Firewall, FwAppRule, FwCollection, FwGroup, FwNetworkRule, FwPolicy
from lab.network import Estate
from lab.network.firewall import evaluate, fqdn_matches
from lab.runner import LabRunner
from lab.scenario import parse_scenario
from lab.traffic import capture_frames
from tests.lab.v2_fixtures import v2_scenario

SRC, DST = IPv4Address("10.1.5.4"), IPv4Address("203.0.113.50")


def _net(name: str, ports: str, dest: str = "*", proto: str = "TCP") -> FwNetworkRule:
    return FwNetworkRule(name, (proto,), ("10.1.0.0/16",), (dest,), ports)


def _app(name: str, fqdn: str) -> FwAppRule:
    return FwAppRule(name, ("*",), (fqdn,), (("Https", 443),))


def _fw(*groups: FwGroup, classic: tuple[FwCollection, ...] = ()) -> Firewall:
    policy = FwPolicy("p", groups) if groups else None
    return Firewall("fw", "rg", "vnet-hub", IPv4Address("10.0.1.4"), (), "Standard", policy,
                    classic)


DENY_443 = FwCollection("net-deny", "Network", 100, "Deny", (_net("web", "443"),))
ALLOW_443 = FwCollection("net-allow", "Network", 200, "Allow", (_net("web", "443"),))
APP_ALLOW = FwCollection("app-allow", "Application", 100, "Allow",
                         (_app("partner", "*.partner.example"),))

# (why, firewall, port, fqdn, allowed, deciding kind/collection)
CASES: list[tuple[str, Firewall, int, str | None, bool, str]] = [
    ("nothing matched: denied by default", _fw(FwGroup("g", 100, ())), 443, None, False,
     "no rule matched (default deny)"),
    ("the lower priority number decides within a group",
     _fw(FwGroup("g", 100, (ALLOW_443, DENY_443))), 443, None, False,
     "network rule g/net-deny/web"),
    ("groups by priority before the collections inside",
     _fw(FwGroup("late", 500, (DENY_443,)), FwGroup("early", 200, (ALLOW_443,))), 443, None,
     True, "network rule early/net-allow/web"),
    ("network rules first, whatever the application rules' priorities",
     _fw(FwGroup("g", 100, (APP_ALLOW, FwCollection("net-deny", "Network", 65000, "Deny",
                                                    (_net("web", "443"),))))),
     443, "api.partner.example", False, "network rule g/net-deny/web"),
    ("an application rule matches the FQDN asked for",
     _fw(FwGroup("g", 100, (APP_ALLOW,))), 443, "api.partner.example", True,
     "application rule g/app-allow/partner"),
    ("*.partner.example does not match partner.example",
     _fw(FwGroup("g", 100, (APP_ALLOW,))), 443, "partner.example", False,
     "no rule matched (default deny)"),
    ("application rules only see their listed ports",
     _fw(FwGroup("g", 100, (APP_ALLOW,))), 5432, "api.partner.example", False,
     "no rule matched (default deny)"),
    ("classic collections: by priority within the type",
     _fw(classic=(ALLOW_443, DENY_443)), 443, None, False, "network rule net-deny/web"),
]


@pytest.mark.parametrize(("why", "fw", "port", "fqdn", "allowed", "decided"), CASES,
                         ids=[c[0] for c in CASES])
def test_rule_processing(why: str, fw: Firewall, port: int, fqdn: str | None, allowed: bool,
                         decided: str) -> None:
    verdict = evaluate(fw, "tcp", SRC, DST, port, fqdn)
    assert (verdict.allowed, verdict.describe) == (allowed, decided), why


def test_wildcards_match_subdomains_only() -> None:
    assert fqdn_matches("*.contoso.com", "a.b.contoso.com")
    assert not fqdn_matches("*.contoso.com", "contoso.com")
    assert fqdn_matches("api.contoso.com", "API.contoso.com.")


def _estate(**change: Any) -> Estate:
    d = v2_scenario()
    for key, value in change.items():
        d[key] = value
    return Estate(parse_scenario(d, "t.yaml"))


def test_through_the_firewall_next_hop_is_its_private_ip_and_ip_flow_sees_nsgs_only() -> None:
    e = _estate()
    hop = e.next_hop("batch-vm-01", "10.1.5.4", "203.0.113.50")
    assert (hop.next_hop_type, hop.next_hop_ip) == ("VirtualAppliance", "10.0.1.4")
    # the firewall denies SMTP (net-deny-smtp), IP flow verify still says Allow
    assert e.ip_flow_verify("batch-vm-01", "Outbound", "TCP", "10.1.5.4", 49152,
                            "203.0.113.50", 25).access == "Allow"
    assert e.connect("batch-vm-01", "203.0.113.50", 25).forward.drop_kind == "firewall"


def test_snat_network_rules_to_public_only_application_rules_always() -> None:
    e = _estate()
    app = e.connect("batch-vm-01", "203.0.113.50", 443, fqdn="api.partner.example")
    assert app.outcome == "connected" and app.forward.snat == "afw-hub"
    view = app.forward.views[-1]
    assert view is not None and str(view.src) == "20.50.3.4"  # public_ips[0]
    assert 1024 <= (view.src_port or 0) <= 65535


@pytest.mark.parametrize(("port", "fqdn", "expect"), [
    (443, "evil.example", "proxy"),  # the proxy completes the handshake, then refuses
    (25, None, "dropped"),  # a network deny drops silently
])
def test_denied_flows_on_80_443_meet_the_proxy_others_vanish(port: int, fqdn: str | None,
                                                             expect: str) -> None:
    conn = _estate().connect("batch-vm-01", "203.0.113.50", port, fqdn=fqdn)
    if expect == "proxy":
        assert (conn.outcome, conn.refused_by_proxy) == ("connected", "afw-hub")
    else:
        assert (conn.outcome, conn.refused_by_proxy) == ("timeout", None)


def _run(e: Estate, command: str) -> tuple[int, str, str]:
    a = LabRunner(e.timeline, e).run(shlex.split(command))
    return a.exit_code, a.stdout, a.stderr


def test_curl_through_the_proxy_gets_470_or_a_reset() -> None:
    e = _estate()
    script = ("az vm run-command invoke -g rg-prod-app -n batch-vm-01 --command-id "
              "RunShellScript --scripts \"curl -s -m 5 -o /dev/null -w %{http_code} "
              "http://203.0.113.50\" \"curl -sS -m 5 https://evil.example.com\"")
    code, out, _ = _run(e, script)
    message = json.loads(out)["value"][0]["message"]
    assert code == 0 and "470" in message, message


@pytest.mark.parametrize(("vm", "outcome", "drop"), [
    ("web-vm-01", "connected", None),  # snet-web has the NAT gateway
    ("app-vm-01", "timeout", "no_outbound"),  # no NAT gateway, no firewall: no way out
])
def test_no_default_outbound_access(vm: str, outcome: str, drop: str | None) -> None:
    conn = _estate().connect(vm, "203.0.113.50", 443)
    assert (conn.outcome, conn.forward.drop_kind) == (outcome, drop)


def test_the_nat_gateway_snats_tcp_to_its_first_ip_and_icmp_gets_no_reply() -> None:
    e = _estate()
    conn = e.connect("web-vm-01", "203.0.113.50", 443)
    view = conn.forward.views[-1]
    assert conn.forward.snat == "ngw-prod" and view is not None
    assert str(view.src) == "20.50.4.1"
    assert e.ping("web-vm-01", "203.0.113.50").outcome == "timeout"
    # an Internet address nothing holds answers nothing
    assert e.connect("web-vm-01", "203.0.113.99", 443).forward.drop_kind == "no_host"


def test_a_nat_gateway_on_the_firewall_subnet_snats_instead_of_the_firewall() -> None:
    d = v2_scenario()
    d["nat_gateways"][0]["subnets"] = ["vnet-hub/AzureFirewallSubnet"]
    e = Estate(parse_scenario(d, "t.yaml"))
    conn = e.connect("batch-vm-01", "203.0.113.50", 443, fqdn="api.partner.example")
    view = conn.forward.views[-1]
    assert conn.forward.snat == "ngw-prod" and view is not None and str(view.src) == "20.50.4.1"


def _snat_estate(percent: float) -> Estate:
    d = v2_scenario()
    d["traffic"] = [{"from": "web-vm-01", "to": "203.0.113.50", "port": 443, "rate": 30}]
    d["faults"] = [{"kind": "snat_exhaustion", "at": "ngw-prod", "percent": percent,
                    "active": {"from": "10m"}}]
    return Estate(parse_scenario(d, "t.yaml"))


def test_snat_exhaustion_fails_a_share_of_new_connections_in_captures_and_metrics() -> None:
    e = _snat_estate(30)
    frames = capture_frames(e.scenario, e, "web-vm-01", 30, start_s=e.scenario.now.timestamp())
    syns: dict[int, int] = {}
    answered: set[int] = set()
    for _, f in frames:
        ip = f[14:]
        flags, sport, dport = ip[33], int.from_bytes(ip[20:22], "big"), int.from_bytes(
            ip[22:24], "big")
        if flags == 0x02:
            syns[sport] = syns.get(sport, 0) + 1
        elif flags == 0x12:
            answered.add(dport)
    failed = [p for p in syns if p not in answered]
    assert 0.15 <= len(failed) / len(syns) <= 0.45  # 30 % with a seeded draw
    assert all(syns[p] > 1 for p in failed)  # retransmitted, never answered
    ngw_id = e.scenario.nat_gateway_id("ngw-prod")
    _, out, _ = _run(e, f"az monitor metrics list --resource {ngw_id} --metric "
                        "SNATConnectionCount --offset 15m --interval PT5M --filter "
                        "\"ConnectionState eq '*'\"")
    series = {ts["metadatavalues"][0]["value"]: [p["total"] for p in ts["data"]]
              for ts in json.loads(out)["value"][0]["timeseries"]}
    # 1800 connections a minute; Failed = Attempted x 30 % while the fault is active (10 min)
    assert series == {"Attempted": [9000.0, 9000.0, 9000.0], "Failed": [0.0, 2700.0, 2700.0]}


def test_latency_at_the_firewall_slows_every_round_trip_with_jitter() -> None:
    d = v2_scenario()
    d["faults"] = [{"kind": "latency", "at": "afw-hub", "ms": 80, "jitter_ms": 40}]
    d["traffic"] = [{"from": "batch-vm-01", "to": "203.0.113.50", "port": 443, "rate": 2,
                     "fqdn": "api.partner.example"}]
    e = Estate(parse_scenario(d, "t.yaml"))
    conn = e.connect("batch-vm-01", "203.0.113.50", 443, fqdn="api.partner.example")
    assert conn.rtt_ms >= 160  # 80 ms each way through afw-hub
    frames = capture_frames(e.scenario, e, "batch-vm-01", 30,
                            start_s=e.scenario.now.timestamp())
    syn_at = {int.from_bytes(f[14 + 20:14 + 22], "big"): t for t, f in frames
              if f[14 + 33] == 0x02}
    rtts = [(t - syn_at[int.from_bytes(f[14 + 22:14 + 24], "big")]) / 1e6 for t, f in frames
            if f[14 + 33] == 0x12]
    assert rtts and min(rtts) >= 160 and max(rtts) <= 160 + 2 * 40 + 5
    assert len({round(r, 1) for r in rtts}) > 1  # jitter: not all the same
