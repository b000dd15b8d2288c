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
    """Answers for the estate as it stands at the scenario's ``now`` (format 2's time windows
    resolved); ``timeline`` is the whole scenario, for flow logs and metrics."""

    def __init__(self, scenario: Scenario) -> None:
        self.timeline = scenario
        self.scenario = scenario.at(scenario.now)

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
        if any(t.to == str(addr) or t.source == str(addr) for t in s.traffic):
            return True
        if any(r.next_hop_ip == addr for t in s.route_tables for r in t.routes):
            return True
        return s.format >= 2 and addr in self._format2_addresses()

    def _format2_addresses(self) -> set[IPv4Address]:
        s = self.scenario
        found = {b.frontend.ip for b in s.load_balancers}
        found |= {p.ip for p in s.private_endpoints} | {p.target.public_ip
                                                        for p in s.private_endpoints}
        found |= {f.private_ip for f in s.firewalls} | {p.ip for p, _, _ in s.public_ips()}
        found |= set(s.internet_hosts)
        if s.engineer_ip is not None:
            found.add(s.engineer_ip)
        return found

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
        public = " outside its public endpoints" if self.scenario.format >= 2 else (
            " and the estate has no public IPs")
        return Delivery(False, (), None, "the engineer's machine is outside every VNet"
                        + public, "outside")

    def _from_engineer(self, dst: IPv4Address, port: int | None,
                       protocol: str) -> Connection:
        """Format 2: the engineer reaches public endpoints from ``engineer_ip``."""
        s = self.scenario
        if s.format >= 2 and s.engineer_ip is not None:
            conn = paths.connect_inbound(s, s.engineer_ip, dst, port, protocol)
            if conn is not None:
                return conn
        return Connection("timeout", self._outside(dst), None, (), 0.0)

    def deliver(self, src_vm: str | None, dst_ip: IpLike, protocol: str, dst_port: int | None,
                src_port: int = 49152) -> Delivery:
        dst = _ip(dst_ip)
        if src_vm is None:
            return self._from_engineer(dst, dst_port, protocol.lower()).forward
        return paths.deliver(self.scenario, self._vm(src_vm), dst, protocol.lower(), dst_port,
                             src_port)

    def connect(self, src_vm: str | None, dst_ip: IpLike, port: int,
                protocol: str = "tcp", *, fqdn: str | None = None,
                choose: int = 0, src_port: int = 49152) -> Connection:
        """A connection from a VM (None: the engineer's machine); ``fqdn`` is the name the
        client asked for (an Azure Firewall's application rules match it), ``choose`` picks
        a load balancer's backend among the up ones (0: the first)."""
        dst = _ip(dst_ip)
        proto = protocol.lower()
        port_or_none = None if proto == "icmp" else port
        if src_vm is None:
            return self._from_engineer(dst, port_or_none, proto)
        return paths.connect(self.scenario, self._vm(src_vm), dst, port_or_none, proto,
                             src_port, fqdn=fqdn if fqdn is not None else self.default_fqdn(dst),
                             choose=choose)

    def connect_from(self, client: IpLike, dst_ip: IpLike, port: int, protocol: str = "tcp",
                     *, src_port: int = 49152, choose: int = 0) -> Connection:
        """An Internet client's connection (format 2's ``traffic`` from a public address)."""
        dst, proto = _ip(dst_ip), protocol.lower()
        conn = paths.connect_inbound(self.scenario, _ip(client), dst,
                                     None if proto == "icmp" else port, proto, src_port, choose)
        if conn is None:
            return Connection("timeout", Delivery(False, (str(client),), None, f"no host "
                              f"answers at {dst} from the Internet", "no_host"), None, (), 0.0)
        return conn

    def default_fqdn(self, dst: IPv4Address) -> str | None:
        """The name a client asked for when none is given: the only public DNS name of the
        destination *(lab)*."""
        names = [n for n, a in self.scenario.public_dns.items() if a == dst]
        return names[0] if len(names) == 1 else None

    def ping(self, src_vm: str | None, dst_ip: IpLike) -> Connection:
        dst = _ip(dst_ip)
        if src_vm is None:
            return self._from_engineer(dst, None, "icmp")
        return paths.connect(self.scenario, self._vm(src_vm), dst, None, "icmp")
