"""DNS in a lab capture: a flow to port 53 is a stub resolver asking over UDP.

The client looks up names its estate resolves (``public_dns`` entries, private zone records,
the VM names of its VNet), one lookup per ``rate`` step, each an A query on its own socket. The
server answers as the format's DNS section says: 168.63.129.16 and a running VM listening on 53
(a forwarder) answer as Azure-provided DNS in their VNet (NOERROR with the A record, a CNAME
first for a privatelink alias, or NXDOMAIN); a running VM that does not listen on 53 answers
ICMP port unreachable (rate-limited as Linux does: a burst of 6, then one a second); anything
else stays silent. The resolver behaves like glibc's (``timeout:5 attempts:2``): an unanswered
query is sent again after 5 s on the same socket, a refused one at once on a new socket, and
after the second try the lookup fails without another packet.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import TYPE_CHECKING, Any

from lab.model import Vm
from lab.network.dns import azure_answer
from lab.network.results import DnsAnswer
from lab.network.tags import AZURE_PLATFORM_IP
from lab.packets import (
    DNS_A,
    DNS_CNAME,
    PROTO_ICMP,
    PROTO_UDP,
    checksummed,
    dns_name,
    dns_query,
    dns_response,
    icmp_message,
    ipv4_packet,
    udp_datagram,
    with_ttl,
)
from lab.wire import (
    INITIAL_TTL,
    Path,
    Seen,
    Wire,
    flow_wire,
    seed,
    server_answer,
    stopped_at,
    ttl_at_hop,
)

if TYPE_CHECKING:
    from lab.model import Scenario

DNS_PORT = 53
MAX_LOOKUPS_PER_FLOW = 60
MAX_NAMES = 6
#: glibc's resolver defaults: wait 5 s for an answer (10 s on the second try), two tries
RESOLVER_TIMEOUT_S = 5.0
RESOLVER_ATTEMPTS = 2
#: Linux's ICMP error rate limit per peer (icmp_ratelimit 1000 ms, a burst of 6)
ICMP_BURST = 6
ICMP_INTERVAL_S = 1.0
#: how long the server takes to answer (a forwarder's cache, or Azure DNS itself)
SERVER_TIME_S = 0.0006
#: where the platform's resolver stands on a path (no guest records anything there)
PLATFORM = ""


def dns_names(scenario: Scenario, client: Vm) -> list[str]:
    """The names the client asks about: what its estate resolves, public names first (what
    applications use), then private zone records, then the VMs of its own VNet."""
    names = [pe.target.fqdn for pe in scenario.private_endpoints]  # format 2: what apps ask
    names += list(scenario.public_dns)
    for zone in scenario.private_dns_zones:
        names += [zone.name if rel == "@" else f"{rel}.{zone.name}" for rel in zone.records]
    names += [vm.name for vm in scenario.vms if vm.vnet == client.vnet and vm is not client]
    unique = list(dict.fromkeys(n.lower().rstrip(".") for n in names))
    return unique[:MAX_NAMES] or [client.name]


@dataclass
class _Lookup:
    """One name being resolved: its socket's port, the query id, the try it is on."""

    name: str
    port: int
    txid: int
    attempt: int = 0


@dataclass
class _Resolver(Wire):
    """The client's resolver and the server it asks, on one flow's paths."""

    client: IPv4Address
    server: IPv4Address
    answers: Callable[[str], DnsAnswer] | None  # None: no DNS service answers
    refuses: bool  # a running host without a listener: ICMP port unreachable
    tokens: float = ICMP_BURST
    last_icmp: float = float("-inf")

    def query(self, t: float, lookup: _Lookup) -> float | None:
        """Send the lookup's query at ``t``; when to try again (None: answered or given up)."""
        msg = dns_query(lookup.txid, lookup.name)
        ip = checksummed(ipv4_packet(self.client.packed, self.server.packed, PROTO_UDP,
                                     udp_datagram(lookup.port, DNS_PORT, msg),
                                     ident=self.next_id(f"{self.client}:{lookup.port}"),
                                     ttl=INITIAL_TTL))
        retry = t + RESOLVER_TIMEOUT_S * (2 ** lookup.attempt)
        arrived, at = self.carry(t, True, ip, len(msg))
        if arrived:
            if self.answers is not None:
                if self._answer(at + SERVER_TIME_S, lookup, self.answers(lookup.name)):
                    return None
            elif self.refuses and self._icmp_allowed(at):
                got, back = self._port_unreachable(at, ip)
                if got:  # glibc closes the socket and tries again at once on a new one
                    lookup.port = 32768 + (lookup.port - 32768 + 7919) % 28232
                    retry = back + 0.0001
        lookup.attempt += 1
        return retry if lookup.attempt < RESOLVER_ATTEMPTS else None

    def _answer(self, t: float, lookup: _Lookup, ans: DnsAnswer) -> bool:
        records: list[tuple[str, int, bytes]] = []
        owner = lookup.name
        if ans.cname:
            records.append((owner, DNS_CNAME, dns_name(ans.cname)))
            owner = ans.cname
        records += [(owner, DNS_A, addr.packed) for addr in ans.addresses]
        rcode = ans.rcode if ans.rcode in ("NOERROR", "NXDOMAIN") else "SERVFAIL"
        msg = dns_response(lookup.txid, lookup.name, DNS_A, rcode, records)
        ip = checksummed(ipv4_packet(self.server.packed, self.client.packed, PROTO_UDP,
                                     udp_datagram(DNS_PORT, lookup.port, msg),
                                     ident=self.next_id(str(self.server)), ttl=INITIAL_TTL))
        arrived, _ = self.carry(t, False, ip, len(msg))
        return arrived

    def _icmp_allowed(self, t: float) -> bool:
        """Linux's token bucket for ICMP errors to one peer."""
        self.tokens = min(float(ICMP_BURST), self.tokens + (t - self.last_icmp) / ICMP_INTERVAL_S)
        self.last_icmp = t
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def _port_unreachable(self, t: float, query: bytes) -> tuple[bool, float]:
        """ICMP 3/3 quoting the query as it arrived (the whole datagram: it is small)."""
        arrived = with_ttl(query, ttl_at_hop(query[8], len(self.forward.hops) - 1))
        icmp = icmp_message(3, 3, b"\x00\x00\x00\x00", arrived)
        ip = checksummed(ipv4_packet(self.server.packed, self.client.packed, PROTO_ICMP, icmp,
                                     ident=self.next_id(str(self.server)), ttl=INITIAL_TTL))
        return self.carry(t + 0.00005, False, ip)


def _estate_answer(scenario: Scenario, dst_vm: Any, dst_ip: IPv4Address,
                   client: Vm) -> Callable[[str], DnsAnswer]:
    vnet = dst_vm.vnet if dst_vm is not None else client.vnet
    return lambda name: azure_answer(scenario, vnet, name, str(dst_ip))


def dns_flow_packets(scenario: Scenario, estate: Any, index: int, window_s: float,
                     start_s: float) -> list[Seen]:
    """Every packet of DNS flow ``index`` during the window, as each VM on its path saw it."""
    fw = flow_wire(scenario, estate, index, "udp")
    if fw is None or not isinstance(fw.src, Vm):  # an Internet client asks no VNet resolver
        return []
    flow, src, dst_vm, dst_ip, conn = fw.flow, fw.src, fw.dst_vm, fw.dst_ip, fw.conn
    forward, reverse = fw.forward, fw.reverse
    platform = dst_ip == AZURE_PLATFORM_IP and forward.delivered
    if platform:
        reverse = Path((PLATFORM, src.name), True, forward.one_way_s)
    elif conn.outcome == "timeout" and reverse is not None and reverse.delivered:
        reverse = stopped_at(reverse, conn.asymmetric_at)
    behaviour = server_answer(scenario, dst_vm, DNS_PORT) if forward.delivered else "none"
    answers = (_estate_answer(scenario, dst_vm, dst_ip, src)
               if platform or behaviour == "synack" else None)
    rng = random.Random(seed(scenario.name, index, "dns"))
    wire = _Resolver(scenario, rng, forward, reverse, src.ip, dst_ip, answers,
                     behaviour == "rst", ids=random.Random(seed(scenario.name, index, "id")))
    names = dns_names(scenario, src)
    count = max(1, min(int(float(flow.rate) * window_s), MAX_LOOKUPS_PER_FLOW))
    gap = window_s / count
    queue: list[tuple[float, int]] = []
    lookups: list[_Lookup] = []
    for k in range(count):
        lookups.append(_Lookup(names[k % len(names)], 32768 + rng.randrange(28232),
                               rng.randrange(1 << 16)))
        heapq.heappush(queue, (start_s + k * gap + rng.random() * gap * 0.5, k))
    while queue:  # in time order, so that the ICMP rate limit sees the queries as they come
        t, k = heapq.heappop(queue)
        again = wire.query(t, lookups[k])
        if again is not None:
            heapq.heappush(queue, (again, k))
    return wire.seen
