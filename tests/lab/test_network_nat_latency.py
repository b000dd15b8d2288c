"""NAT gateway SNAT and the ``latency`` fault against Azure's documented behaviour (*Azure NAT
Gateway resource*, *Supported metrics for Microsoft.Network/natgateways*, *Metrics and alerts
for Azure NAT Gateway*) and the format's *(lab)* choices, one table per behaviour: which flows
the gateway translates and to what, what its metrics count, and which packets a latency fault
delays by how much."""

from __future__ import annotations

import json
import math
import shlex
from typing import Any

import pytest

from lab.network import Estate
from lab.runner import LabRunner
from lab.scenario import parse_scenario
from tests.lab.v2_fixtures import v2_scenario


def _estate(change: dict[str, Any] | None = None) -> Estate:
    d = v2_scenario()
    for key, value in (change or {}).items():
        if key == "ngw":
            d["nat_gateways"][0].update(value)
        elif key == "rt-web":  # a route table on snet-web, and afw-hub allowing 443 out
            d["route_tables"].append({"name": "rt-web", "resource_group": "rg-prod-net",
                                      "routes": value})
            d["vnets"][1]["subnets"][0]["route_table"] = "rt-web"
            d["firewalls"][0]["policy"]["groups"][0]["collections"].append(
                {"name": "net-allow-web", "type": "Network", "priority": 150,
                 "action": "Allow", "rules": [{"name": "web", "protocols": ["TCP"],
                                               "sources": ["10.1.0.0/16"],
                                               "destinations": ["*"], "ports": ["443"]}]})
        else:
            d[key] = value
    return Estate(parse_scenario(d, "t.yaml"))


TWO_IPS = {"ngw": {"public_ips": [{"name": "pip-ngw", "ip": "20.50.4.1"},
                                  {"name": "pip-ngw-2", "ip": "20.50.4.2"}]}}
TO_AFW = {"rt-web": [{"name": "default-to-afw", "prefix": "0.0.0.0/0",
                      "next_hop": "VirtualAppliance", "next_hop_ip": "10.0.1.4"}]}

# (why, estate change, VM, destination, port, protocol, outcome, who SNATs, source seen there)
SNAT_CASES: list[tuple[str, dict[str, Any], str, str, int, str, str, str | None,
                       str | None]] = [
    ("TCP to the Internet leaves through the subnet's NAT gateway, from its public IP",
     {}, "web-vm-01", "203.0.113.50", 443, "tcp", "connected", "ngw-prod", "20.50.4.1"),
    ("with several public IPs the lab uses the first (Azure picks one)",
     TWO_IPS, "web-vm-01", "203.0.113.50", 443, "tcp", "connected", "ngw-prod", "20.50.4.1"),
    ("ICMP leaves through the NAT gateway and gets no reply",
     {}, "web-vm-01", "203.0.113.50", 0, "icmp", "timeout", "ngw-prod", None),
    ("a private destination is not translated: the source stays the VM's",
     {}, "web-vm-01", "10.1.3.4", 8080, "tcp", "connected", None, None),
    ("a subnet without NAT gateway or firewall has no default outbound access",
     {}, "app-vm-01", "203.0.113.50", 443, "tcp", "timeout", None, None),
    ("a user route to an appliance wins over the NAT gateway: the firewall SNATs instead",
     TO_AFW, "web-vm-01", "203.0.113.50", 443, "tcp", "connected", "afw-hub", "20.50.3.4"),
]


@pytest.mark.parametrize(("why", "change", "vm", "dst", "port", "proto", "outcome", "snat",
                          "source"), SNAT_CASES, ids=[c[0] for c in SNAT_CASES])
def test_which_flows_the_nat_gateway_translates(why: str, change: dict[str, Any], vm: str,
                                                dst: str, port: int, proto: str, outcome: str,
                                                snat: str | None, source: str | None) -> None:
    e = _estate(change)
    conn = e.ping(vm, dst) if proto == "icmp" else e.connect(vm, dst, port, proto)
    assert conn.outcome == outcome, why
    assert conn.forward.snat == snat, why
    if source is not None:
        seen = [v for v in conn.forward.views if v is not None]
        assert seen and str(seen[-1].src) == source, why


def _metric(e: Estate, metric: str, extra: str = "") -> dict[str, list[float]]:
    ngw = e.scenario.nat_gateway_id("ngw-prod")
    answer = LabRunner(e.scenario).run(shlex.split(
        f"az monitor metrics list --resource {ngw} --metric {metric} --offset 15m "
        f"--interval PT5M {extra}"))
    assert answer.exit_code == 0, answer.stderr
    out: dict[str, list[float]] = {}
    for ts in json.loads(answer.stdout)["value"][0]["timeseries"]:
        key = ts["metadatavalues"][0]["value"] if ts["metadatavalues"] else "all"
        out[key] = [p.get("total", p.get("average", 0.0)) for p in ts["data"]]
    return out


# (why, connections a minute, fault percent, Failed per 5-minute point once active)
METRIC_CASES: list[tuple[str, float, float, float]] = [
    ("no fault: nothing fails", 30, 0, 0.0),
    ("Failed = Attempted x percent / 100, rounded down per minute (lab)", 30, 30, 5 * 540.0),
    ("a share that does not divide evenly rounds down each minute", 7, 33, 5 * math.floor(
        7 * 60 * 33 / 100)),
]


@pytest.mark.parametrize(("why", "rate", "percent", "failed"), METRIC_CASES,
                         ids=[c[0] for c in METRIC_CASES])
def test_snat_connection_count_attempted_and_failed(why: str, rate: float, percent: float,
                                                    failed: float) -> None:
    change: dict[str, Any] = {
        "traffic": [{"from": "web-vm-01", "to": "203.0.113.50", "port": 443, "rate": rate}],
        "faults": ([{"kind": "snat_exhaustion", "at": "ngw-prod", "percent": percent}]
                   if percent else [])}
    e = _estate(change)
    series = _metric(e, "SNATConnectionCount", "--filter \"ConnectionState eq '*'\"")
    attempted = rate * 60 * 5
    assert series["Attempted"] == [attempted] * 3, why
    assert series.get("Failed", [0.0] * 3) == [failed] * 3, why
    # the data path stays available: the gateway works, it runs out of ports
    assert set(_metric(e, "DatapathAvailability")["all"]) == {100.0}


def test_the_nat_gateway_and_its_subnet_show_as_azure_does() -> None:
    e = _estate({"ngw": {"idle_timeout": 10}})
    run = LabRunner(e.scenario).run
    ngw = json.loads(run(shlex.split("az network nat gateway show -g rg-prod-net -n ngw-prod"))
                     .stdout)
    assert ngw["sku"] == {"name": "Standard"} and ngw["idleTimeoutInMinutes"] == 10
    assert [p["id"].rsplit("/", 1)[1] for p in ngw["publicIpAddresses"]] == ["pip-ngw"]
    assert [s["id"].rsplit("/", 1)[1] for s in ngw["subnets"]] == ["snet-web"]
    subnet = json.loads(run(shlex.split(
        "az network vnet subnet show -g rg-prod-net --vnet-name vnet-prod -n snet-web")).stdout)
    assert subnet["natGateway"]["id"] == ngw["id"]
    assert json.loads(LabRunner(_estate().scenario).run(shlex.split(
        "az network nat gateway show -g rg-prod-net -n ngw-prod")).stdout)[
        "idleTimeoutInMinutes"] == 4  # Azure's default


# (why, fault at, VM, destination, port, fqdn, delayed: crossings of ``at`` per round trip)
LATENCY_CASES: list[tuple[str, str, str, str, int, str | None, int]] = [
    ("a VM's latency delays every packet it sends and receives", "app-vm-01",
     "web-vm-01", "10.1.3.4", 8080, None, 2),
    ("a flow that does not touch the VM is not delayed", "app-vm-02",
     "web-vm-01", "10.1.3.4", 8080, None, 0),
    ("a firewall's latency delays what crosses it, both ways", "afw-hub",
     "batch-vm-01", "203.0.113.50", 443, "api.partner.example", 2),
    ("a flow that does not cross the firewall is not delayed", "afw-hub",
     "web-vm-01", "203.0.113.50", 443, None, 0),
    ("a NAT gateway's latency delays what it translates", "ngw-prod",
     "web-vm-01", "203.0.113.50", 443, None, 2),
]


@pytest.mark.parametrize(("why", "at", "vm", "dst", "port", "fqdn", "crossings"),
                         LATENCY_CASES, ids=[c[0] for c in LATENCY_CASES])
def test_latency_delays_each_packet_crossing_its_place(why: str, at: str, vm: str, dst: str,
                                                       port: int, fqdn: str | None,
                                                       crossings: int) -> None:
    ms, jitter = 60, 20
    base = _estate().connect(vm, dst, port, fqdn=fqdn)
    e = _estate({"faults": [{"kind": "latency", "at": at, "ms": ms, "jitter_ms": jitter}]})
    conn = e.connect(vm, dst, port, fqdn=fqdn)
    assert conn.outcome == base.outcome == "connected", why
    added = conn.rtt_ms - base.rtt_ms
    # each crossing adds ms plus a seeded 0..jitter (lab)
    assert crossings * ms - 0.5 <= added <= crossings * (ms + jitter) + 0.5, (why, added)
