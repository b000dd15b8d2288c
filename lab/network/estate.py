"""Estate: one scenario's network, answering the questions Network Watcher and probes ask.

Methods take VM names as the scenario spells them (KeyError for a name it does not have: the
runner checks names first and gives Azure's own error). The engineer's machine (``None`` as the
source) is outside every VNet: it resolves through public DNS only, every probe it sends to an
address of the scenario times out, and an address the scenario never mentions is NotModelled.
"""

from __future__ import annotations

from ipaddress import IPv4Address, ip_address

from lab.model import Scenario, Vm
from lab.network import dns, nsg, paths, routes
from lab.network.results import (
    Connection,
    Delivery,
    DnsAnswer,
    EffectiveNsg,
    EffectiveRoute,
    FlowVerdict,
    NextHop,
    NotModelled,
)
from lab.network.tags import AZURE_PLATFORM_IP
from lab.network.topology import subnet_of

IpLike = str | IPv4Address


def _ip(value: IpLike) -> IPv4Address:
    try:
        addr = ip_address(str(value))
    except ValueError:
        raise NotModelled(f"{value!r} is not an IP address") from None
    if not isinstance(addr, IPv4Address):
        raise NotModelled(f"{value} is not an IPv4 address (the lab models IPv4 only)")
    return addr


class Estate:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def _vm(self, name: str) -> Vm:
        vm = self.scenario.vm(name)
        if vm is None:
            raise KeyError(f"no VM named {name!r} in scenario {self.scenario.name}")
        return vm

    # -- VMs --------------------------------------------------------------------------------

    def power_state(self, vm: str) -> str:
        return self._vm(vm).power_state

    def is_running(self, vm: str) -> bool:
        return self._vm(vm).power_state == "running"

    def is_scenario_address(self, ip: IpLike) -> bool:
        """An address the scenario speaks of: a VM's, inside a VNet, in DNS, traffic or routes."""
        s, addr = self.scenario, _ip(ip)
        if addr == AZURE_PLATFORM_IP or s.vm_by_ip(addr) or s.vnet_of_ip(addr):
            return True
        if addr in s.public_dns.values() or any(addr in v.dns_servers for v in s.vnets):
            return True
        if any(addr in z.records.values() for z in s.private_dns_zones):
            return True
        if any(t.to == str(addr) for t in s.traffic):
            return True
        return any(r.next_hop_ip == addr for t in s.route_tables for r in t.routes)

    # -- NSGs -------------------------------------------------------------------------------

    def ip_flow_verify(self, vm: str, direction: str, protocol: str, local_ip: IpLike,
                       local_port: int, remote_ip: IpLike, remote_port: int) -> FlowVerdict:
        """test-ip-flow: the VM's subnet and NIC NSGs in Azure's order (TCP or UDP)."""
        v, local, remote = self._vm(vm), _ip(local_ip), _ip(remote_ip)
        proto = protocol.lower()
        if direction.lower() == "inbound":
            pkt = nsg.Packet(proto, remote, remote_port, local, local_port)
            return nsg.verdict(self.scenario, v, "Inbound", pkt)
        pkt = nsg.Packet(proto, local, local_port, remote, remote_port)
        return nsg.verdict(self.scenario, v, "Outbound", pkt)

    def effective_nsgs(self, vm: str) -> list[EffectiveNsg]:
        return nsg.effective_nsgs(self.scenario, self._vm(vm))

    # -- routes -----------------------------------------------------------------------------

    def effective_routes(self, vm: str) -> list[EffectiveRoute]:
        return routes.effective_routes(self.scenario, subnet_of(self.scenario, self._vm(vm)))

    def next_hop(self, vm: str, source_ip: IpLike, dest_ip: IpLike) -> NextHop:
        """show-next-hop reads the source VM's effective routes only (source_ip is its own)."""
        _ip(source_ip)
        sub = subnet_of(self.scenario, self._vm(vm))
        return routes.next_hop(self.scenario, sub, _ip(dest_ip))

    # -- DNS --------------------------------------------------------------------------------

    def _dns_reachable(self, from_vm: str, server: IPv4Address) -> bool:
        return self.connect(from_vm, server, 53, "udp").outcome == "connected"

    def resolve(self, name: str, from_vm: str | None, qtype: str = "A") -> DnsAnswer:
        if from_vm is not None:
            self._vm(from_vm)
        return dns.resolve(self.scenario, name, from_vm, qtype, self._dns_reachable)

    # -- packets ----------------------------------------------------------------------------

    def _outside(self, dst: IPv4Address) -> Delivery:
        if not self.is_scenario_address(dst):
            raise NotModelled(f"{dst} is not an address of scenario {self.scenario.name}")
        return Delivery(False, (), None, "the engineer's machine is outside every VNet and "
                        "the estate has no public IPs", "outside")

    def deliver(self, src_vm: str | None, dst_ip: IpLike, protocol: str, dst_port: int | None,
                src_port: int = 49152) -> Delivery:
        dst = _ip(dst_ip)
        if src_vm is None:
            return self._outside(dst)
        return paths.deliver(self.scenario, self._vm(src_vm), dst, protocol.lower(), dst_port,
                             src_port)

    def connect(self, src_vm: str | None, dst_ip: IpLike, port: int,
                protocol: str = "tcp") -> Connection:
        dst = _ip(dst_ip)
        if src_vm is None:
            return Connection("timeout", self._outside(dst), None, (), 0.0)
        proto = protocol.lower()
        return paths.connect(self.scenario, self._vm(src_vm), dst,
                             None if proto == "icmp" else port, proto)

    def ping(self, src_vm: str | None, dst_ip: IpLike) -> Connection:
        dst = _ip(dst_ip)
        if src_vm is None:
            return Connection("timeout", self._outside(dst), None, (), 0.0)
        return paths.connect(self.scenario, self._vm(src_vm), dst, None, "icmp")
