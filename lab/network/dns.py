"""Name resolution: Azure-provided DNS (private zones by link), custom DNS servers, public DNS.

Azure-provided DNS answers a name inside a zone linked to the asking VNet from that zone alone
(longest zone name wins; NXDOMAIN without fallback). Other names go to public DNS. Where the
format is silent we follow Azure's private-endpoint aliasing: a public name ``host.rest`` for
which the scenario has a zone ``privatelink.rest`` is a CNAME to ``host.privatelink.rest``;
a VNet linked to that zone gets the private record, any other resolver the public address.
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import IPv4Address

from lab.model import PrivateDnsZone, Scenario
from lab.model_v2 import PeTarget
from lab.network.results import DnsAnswer
from lab.network.tags import AZURE_PLATFORM_IP

AZURE_DNS = str(AZURE_PLATFORM_IP)
LOCAL_RESOLVER = "127.0.0.53"  # the engineer's machine (systemd-resolved's stub)

# (asking VM, server address) -> does a UDP/53 exchange succeed (routes, NSGs, listener)?
Reachability = Callable[[str, IPv4Address], bool]


def normalise(name: str) -> str:
    return name.strip().rstrip(".").lower()


def _linked_zone(s: Scenario, vnet: str, q: str) -> PrivateDnsZone | None:
    best: PrivateDnsZone | None = None
    for z in s.private_dns_zones:
        zn = z.name.lower()
        if vnet in z.linked_vnets and (q == zn or q.endswith("." + zn)):
            if best is None or len(zn) > len(best.name):
                best = z
    return best


def _from_zone(z: PrivateDnsZone, q: str, server: str, cname: str | None) -> DnsAnswer:
    zn = z.name.lower()
    rel = "@" if q == zn else q[: -len(zn) - 1]
    addr = z.records.get(rel)
    if addr is None:
        return DnsAnswer("NXDOMAIN", (), server, cname, z.name)
    return DnsAnswer("NOERROR", (addr,), server, cname, z.name)


def _pe_target(s: Scenario, q: str) -> PeTarget | None:
    """Format 2: the private endpoint target whose FQDN or privatelink name ``q`` is."""
    return next((pe.target for pe in s.private_endpoints
                 if q in (pe.target.fqdn, pe.target.privatelink_fqdn)), None)


def _alias(s: Scenario, q: str) -> str | None:
    """``host.privatelink.rest`` when the scenario has a zone ``privatelink.rest``, or when
    ``q`` is a private endpoint target's FQDN (its public CNAME, format 2)."""
    target = _pe_target(s, q) if s.format >= 2 else None
    if target is not None:
        return target.privatelink_fqdn if q == target.fqdn else None
    host, _, rest = q.partition(".")
    if not rest or host == "privatelink" or rest.startswith("privatelink."):
        return None
    alias_zone = f"privatelink.{rest}"
    return f"{host}.{alias_zone}" if s.zone(alias_zone) is not None else None


def public_answer(s: Scenario, q: str, server: str) -> DnsAnswer:
    """What resolvers outside every VNet get."""
    alias = _alias(s, q)
    target = _pe_target(s, q) if s.format >= 2 else None
    if target is not None:  # CNAME to the privatelink name, which resolves to the public IP
        return DnsAnswer("NOERROR", (target.public_ip,), server, alias)
    addr = s.public_dns.get(q) or (s.public_dns.get(alias) if alias else None)
    if addr is None and ".privatelink." in q:  # publicly a privatelink name aliases the public one
        addr = s.public_dns.get(q.replace(".privatelink.", ".", 1))
    if addr is None:
        return DnsAnswer("NXDOMAIN", (), server, alias)
    return DnsAnswer("NOERROR", (addr,), server, alias)


def azure_answer(s: Scenario, vnet: str, q: str, server: str) -> DnsAnswer:
    """Azure-provided DNS as seen from ``vnet``."""
    if "." not in q:  # bare VM names: same VNet only, not across peerings
        vm = next((v for v in s.vms if v.name.lower() == q and v.vnet == vnet), None)
        if vm is None:
            return DnsAnswer("NXDOMAIN", (), server)
        return DnsAnswer("NOERROR", (vm.ip,), server)
    zone = _linked_zone(s, vnet, q)
    if zone is not None:
        return _from_zone(zone, q, server, None)
    alias = _alias(s, q)
    if alias is not None:
        zone = _linked_zone(s, vnet, alias)
        if zone is not None:
            return _from_zone(zone, alias, server, alias)
    return public_answer(s, q, server)


def _for_qtype(ans: DnsAnswer, qtype: str) -> DnsAnswer:
    if qtype.upper() == "A" or ans.rcode != "NOERROR":
        return ans
    return DnsAnswer("NOERROR", (), ans.server, ans.cname, ans.zone)  # the name exists, no data


def resolve(s: Scenario, name: str, from_vm: str | None, qtype: str,
            reachable: Reachability) -> DnsAnswer:
    q = normalise(name)
    if from_vm is None:
        return _for_qtype(public_answer(s, q, LOCAL_RESOLVER), qtype)
    vm = s.vm(from_vm)
    vnet = s.vnet(vm.vnet) if vm else None
    if vm is None or vnet is None:
        raise KeyError(f"no VM named {from_vm!r} in scenario {s.name}")
    if not vnet.dns_servers:
        return _for_qtype(azure_answer(s, vnet.name, q, AZURE_DNS), qtype)
    for server_ip in vnet.dns_servers:
        if server_ip == AZURE_PLATFORM_IP:
            return _for_qtype(azure_answer(s, vnet.name, q, AZURE_DNS), qtype)
        server_vm = s.vm_by_ip(server_ip)
        if server_vm is not None and reachable(vm.name, server_ip):
            # a forwarder to 168.63.129.16 in its own VNet
            return _for_qtype(azure_answer(s, server_vm.vnet, q, str(server_ip)), qtype)
    return DnsAnswer("TIMEOUT", (), str(vnet.dns_servers[0]))
