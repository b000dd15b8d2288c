"""Load balancers: health probes from 168.63.129.16, rule matching, backend choice.

A probe is an inbound flow from 168.63.129.16 to the pool VM's ``ip``:``port``, judged by the
subnet NSG then the NIC NSG like any other; 168.63.129.16 is in ``AzureLoadBalancer`` and in
``VirtualNetwork``, so AllowVnetInBound (65000) or AllowAzureLoadBalancerInBound (65001) admit it
unless a custom rule denies it first. A VM is up when it runs, the probe passes and the port
answers (an Http/Https probe gets 200 from a listening port *(lab)*); stopped VMs are not probed.
A rule without a probe treats every running pool VM as up (Azure sends to all instances when no
probe is set). Flows spread over the up VMs in pool order *(lab)*.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.model import Scenario, Vm
from lab.model_v2 import LbProbe, LbRule, LoadBalancer
from lab.network.nsg import Decision, Packet, flow_decisions
from lab.network.tags import AZURE_PLATFORM_IP

#: the source port the lab's probes use in IP flow verify terms ("any" in Azure)
PROBE_SOURCE_PORT = 54321


@dataclass(frozen=True)
class ProbeVerdict:
    """What one probe finds on one pool VM."""

    vm: str
    up: bool
    why: str  # "up" | "vm stopped" | "nsg <nsg>/<rule>" | "nothing listens on <port>"
    decisions: tuple[Decision, ...] = ()  # the NSG decisions the probe met (flow logs)

    @property
    def denied_by(self) -> Decision | None:
        return self.decisions[-1] if self.decisions and not self.decisions[-1].allowed else None


def listening(s: Scenario, vm: Vm, port: int) -> bool:
    closed = any(f.kind == "no_listener" and f.port == port for f in s.faults_at(vm))
    return port in vm.listens and not closed


def probe_packet(vm: Vm, probe: LbProbe) -> Packet:
    return Packet("tcp", AZURE_PLATFORM_IP, PROBE_SOURCE_PORT, vm.ip, probe.port)


def probe_vm(s: Scenario, probe: LbProbe, vm: Vm) -> ProbeVerdict:
    """One probe's verdict on one VM, as the load balancer sees it."""
    if vm.power_state != "running":
        return ProbeVerdict(vm.name, False, f"vm {vm.power_state}")
    decisions = tuple(flow_decisions(s, vm, "Inbound", probe_packet(vm, probe)))
    if decisions and not decisions[-1].allowed:
        d = decisions[-1]
        return ProbeVerdict(vm.name, False, f"nsg {d.nsg.name}/{d.rule_name}", decisions)
    if not listening(s, vm, probe.port):
        return ProbeVerdict(vm.name, False, f"nothing listens on {probe.port}", decisions)
    return ProbeVerdict(vm.name, True, "up", decisions)


def pool_vms(s: Scenario, lb: LoadBalancer, pool: str) -> list[Vm]:
    found = lb.pool(pool)
    return [vm for name in (found.vms if found else ()) if (vm := s.vm(name)) is not None]


def rule_up_vms(s: Scenario, lb: LoadBalancer, rule: LbRule) -> list[Vm]:
    """The pool VMs that receive new flows of ``rule``, in pool order."""
    probe = lb.probe(rule.probe) if rule.probe else None
    vms = pool_vms(s, lb, rule.pool)
    if probe is None:
        return [vm for vm in vms if vm.power_state == "running"]
    return [vm for vm in vms if probe_vm(s, probe, vm).up]


def match_rule(lb: LoadBalancer, protocol: str, port: int | None) -> LbRule | None:
    """The load-balancing rule for a flow to the frontend (HA ports take every TCP/UDP flow)."""
    for rule in lb.rules:
        if rule.ha_ports and protocol in ("tcp", "udp"):
            return rule
        if rule.protocol.lower() == protocol and rule.frontend_port == port:
            return rule
    return None


def backend(s: Scenario, lb: LoadBalancer, rule: LbRule, choose: int) -> Vm | None:
    """The up VM that gets flow number ``choose`` (0: a one-off probe gets the first)."""
    up = rule_up_vms(s, lb, rule)
    return up[choose % len(up)] if up else None


def backend_port(rule: LbRule, port: int | None) -> int | None:
    return port if rule.ha_ports else rule.backend_port
