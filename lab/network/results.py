"""What the network model answers, in Azure's terms (the runner and captures format these)."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address

from lab.model import Fault


class NotModelled(Exception):
    """A question the lab cannot answer honestly (the runner exits 2 "not modelled by the lab")."""


@dataclass(frozen=True)
class FlowVerdict:
    """`az network watcher test-ip-flow`: access and the deciding rule."""

    access: str  # Allow | Deny
    rule_name: str  # "securityRules/x" | "defaultSecurityRules/x" | ""
    rule_id: str  # the rule's resource id, "" when no NSG decided
    nsg: str | None  # the NSG whose rule is named


@dataclass(frozen=True)
class EffectiveNsgRule:
    """One rule as `az network nic list-effective-nsg` lists it (tags expanded)."""

    name: str  # "securityRules/x" | "defaultSecurityRules/x"
    priority: int
    direction: str
    access: str
    protocol: str  # Tcp | Udp | Icmp | All
    source: str  # as written ("*" shown as "0.0.0.0/0")
    source_ports: tuple[str, ...]  # ranges "N-M" ("*" -> "0-65535")
    destination: str
    destination_ports: tuple[str, ...]
    expanded_source: tuple[str, ...]  # CIDRs; () when the prefix is not a service tag
    expanded_destination: tuple[str, ...]


@dataclass(frozen=True)
class EffectiveNsg:
    association: str  # "subnet" | "nic"
    association_id: str  # the subnet's or the NIC's id
    nsg: str
    nsg_id: str
    rules: tuple[EffectiveNsgRule, ...]
    tag_map: dict[str, tuple[str, ...]]  # service tag -> CIDRs, as evaluated for this NIC


@dataclass(frozen=True)
class EffectiveRoute:
    source: str  # Default | User
    state: str  # Active | Invalid
    prefixes: tuple[str, ...]
    next_hop_type: str  # VnetLocal | VNetPeering | Internet | None | VirtualAppliance
    next_hop_ips: tuple[str, ...]
    name: str | None  # the user route's name
    route_table: str | None  # the user route's table


@dataclass(frozen=True)
class NextHop:
    next_hop_type: str
    next_hop_ip: str | None
    route_table_id: str  # the table's id for a user route, "System Route" otherwise


@dataclass(frozen=True)
class DnsAnswer:
    rcode: str  # NOERROR | NXDOMAIN | TIMEOUT
    addresses: tuple[IPv4Address, ...]
    server: str  # the resolver asked: "168.63.129.16", a custom server, "127.0.0.53" locally
    cname: str | None = None  # privatelink alias followed, if any
    zone: str | None = None  # the private zone that answered, if any


@dataclass(frozen=True)
class HopView:
    """A packet's addresses as one hop sees them (after a load balancer's DNAT or an SNAT)."""

    src: IPv4Address
    src_port: int | None
    dst: IPv4Address
    dst_port: int | None


@dataclass(frozen=True)
class Delivery:
    """One packet's fate from a VM (or an Internet client) towards an address."""

    delivered: bool
    hops: tuple[str, ...]  # VM guests that saw the packet: src first, NVAs, dst last if delivered
    dropped_at: str | None  # the VM whose NSG/route/state dropped it (None: nowhere to go)
    reason: str | None  # e.g. "nsg-data/securityRules/deny-web-to-redis", "route None (rt-a/r)"
    drop_kind: str | None  # nsg|route_none|no_forwarding|vm_down|no_host|loop|peering|outside
    # format 2: firewall | lb_down | lb_no_rule | pe_refused | no_outbound
    # format 2 (empty/None in format 1): hops also name firewalls, NAT gateways, private
    # endpoints and Internet addresses; ``views`` the addresses each hop saw when a load
    # balancer or an SNAT changed them (None: as sent)
    views: tuple[HopView | None, ...] = ()
    target: str | None = None  # vm | pe | internet | pe_public | platform
    snat: str | None = None  # the NAT gateway or firewall that translated the source
    firewall: str | None = None  # "afw-hub: network rule rcg/coll/rule" (the deciding rule)
    proxy: str | None = None  # the firewall whose proxy answered the handshake (80/443)
    lb: str | None = None  # the load balancer that chose the backend
    sent: HopView | None = None  # the addresses as the sender wrote them (with ``views``)
    last: HopView | None = None  # the addresses where it was delivered or dropped

    def view_at(self, i: int) -> HopView | None:
        return self.views[i] if i < len(self.views) else None


@dataclass(frozen=True)
class Connection:
    outcome: str  # connected | refused | timeout
    forward: Delivery
    reverse: Delivery | None  # the answer's path (None when nothing answers)
    faults: tuple[Fault, ...]  # loss/reset/mtu/latency faults on VMs of either path
    rtt_ms: float
    asymmetric_at: str | None = None  # a forwarding NVA that saw only one direction
    refused_by_proxy: str | None = None  # format 2: the firewall denied it after the handshake
