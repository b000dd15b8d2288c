"""Azure Monitor metrics the lab computes, minute by minute, from the timeline (format 2).

Load balancers: ``DipAvailability`` ("Health Probe Status", per backend: 100 up, 0 down) and
``VipAvailability`` ("Data Path Availability": 100 while any pool VM is up *(lab)*). NAT
gateways: ``SNATConnectionCount`` (dimension ConnectionState: Attempted = the new connections it
SNATed in that minute, each ``traffic`` flow ``rate`` × 60; Failed = Attempted × percent / 100
rounded down while a ``snat_exhaustion`` fault is active *(lab)*), ``TotalConnectionCount``,
``PacketDropCount``, ``ByteCount``, ``PacketCount`` and ``DatapathAvailability`` (100).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lab.model import Scenario
from lab.model_v2 import LoadBalancer, NatGateway
from lab.network import lb
from lab.timeline import Timeline
from lab.traffic_dns import DNS_PORT

#: packets and bytes of one completed SNATed connection both ways *(lab)*
PACKETS_PER_CONNECTION = 20
BYTES_PER_CONNECTION = 8000
#: packets a failed connection loses: its SYN and four retransmissions (as captures show)
PACKETS_PER_FAILURE = 5


@dataclass(frozen=True)
class MetricInfo:
    name: str
    display: str
    unit: str
    primary: str  # Average | Total
    dimension: str | None  # the one dimension the lab splits by


LB_METRICS = {m.name: m for m in (
    MetricInfo("DipAvailability", "Health Probe Status", "Percent", "Average",
               "BackendIPAddress"),
    MetricInfo("VipAvailability", "Data Path Availability", "Percent", "Average",
               "FrontendIPAddress"),
)}
NAT_METRICS = {m.name: m for m in (
    MetricInfo("SNATConnectionCount", "SNAT Connection Count", "Count", "Total",
               "ConnectionState"),
    MetricInfo("TotalConnectionCount", "Total SNAT Connection Count", "Count", "Total", None),
    MetricInfo("PacketDropCount", "Dropped Packets", "Count", "Total", None),
    MetricInfo("ByteCount", "Bytes", "Bytes", "Total", None),
    MetricInfo("PacketCount", "Packets", "Count", "Total", None),
    MetricInfo("DatapathAvailability", "Datapath Availability", "Percent", "Average", None),
)}

#: one minute's values by dimension value ("" without a dimension)
Values = dict[str, float]


def lb_minute(tl: Timeline, name: str, metric: str, minute: datetime) -> Values:
    estate = tl.estate_at(minute)
    s = estate.scenario
    balancer = s.lb(name)
    if balancer is None:  # pragma: no cover - the caller found it
        return {}
    ups = _backend_states(s, balancer)
    if metric == "DipAvailability":
        return {ip: 100.0 if up else 0.0 for ip, up in ups.items()}
    return {str(balancer.frontend.ip): 100.0 if any(ups.values()) else 0.0}


def _backend_states(s: Scenario, balancer: LoadBalancer) -> dict[str, bool]:
    states: dict[str, bool] = {}
    for rule in balancer.rules:
        probe = balancer.probe(rule.probe) if rule.probe else None
        for vm in lb.pool_vms(s, balancer, rule.pool):
            if str(vm.ip) in states:
                continue
            states[str(vm.ip)] = (lb.probe_vm(s, probe, vm).up if probe is not None
                                  else vm.power_state == "running")
    return states


def nat_minute(tl: Timeline, ngw: NatGateway, metric: str, minute: datetime) -> Values:
    estate = tl.estate_at(minute)
    s = estate.scenario
    attempted = 0
    for index, flow in enumerate(s.traffic):
        if not tl.flowing(tl.scenario.traffic[index], minute) or flow.port == DNS_PORT:
            continue
        if s.vm(flow.source) is None:
            continue
        target = s.vm(flow.to)
        conn = estate.connect(flow.source, str(target.ip) if target else flow.to, flow.port,
                              fqdn=flow.fqdn)
        if conn.forward.snat == ngw.name:
            attempted += int(flow.rate * 60)
    percent = sum(float(f.percent or 0) for f in s.faults
                  if f.kind == "snat_exhaustion" and f.at == ngw.name)
    failed = int(attempted * min(percent, 100.0) // 100)
    done = attempted - failed
    if metric == "SNATConnectionCount":
        return {"Attempted": float(attempted), "Failed": float(failed)}
    return {"": float({"TotalConnectionCount": done,
                       "PacketDropCount": failed * PACKETS_PER_FAILURE,
                       "ByteCount": done * BYTES_PER_CONNECTION,
                       "PacketCount": done * PACKETS_PER_CONNECTION,
                       "DatapathAvailability": 100}[metric])}
