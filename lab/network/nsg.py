"""NSG evaluation as Azure does it: default rules, priorities, service tags, subnet/NIC order."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from lab.model import Nsg, NsgRule, Scenario, Vm
from lab.network.results import EffectiveNsg, EffectiveNsgRule, FlowVerdict
from lab.network.tags import is_internet, port_matches, port_ranges_text
from lab.network.topology import subnet_of, tag_prefixes, virtual_network_tag

DEFAULT_RULES: tuple[NsgRule, ...] = (
    NsgRule("AllowVnetInBound", 65000, "Inbound", "Allow", "*", "VirtualNetwork", "*",
            "VirtualNetwork", "*"),
    NsgRule("AllowAzureLoadBalancerInBound", 65001, "Inbound", "Allow", "*", "AzureLoadBalancer",
            "*", "*", "*"),
    NsgRule("DenyAllInBound", 65500, "Inbound", "Deny", "*", "*", "*", "*", "*"),
    NsgRule("AllowVnetOutBound", 65000, "Outbound", "Allow", "*", "VirtualNetwork", "*",
            "VirtualNetwork", "*"),
    NsgRule("AllowInternetOutBound", 65001, "Outbound", "Allow", "*", "*", "*", "Internet", "*"),
    NsgRule("DenyAllOutBound", 65500, "Outbound", "Deny", "*", "*", "*", "*", "*"),
)
DEFAULT_NAMES = frozenset(r.name for r in DEFAULT_RULES)


@dataclass(frozen=True)
class Packet:
    """What an NSG looks at; ports are None for ICMP."""

    protocol: str  # tcp | udp | icmp
    src: IPv4Address
    src_port: int | None
    dst: IPv4Address
    dst_port: int | None


@dataclass(frozen=True)
class Decision:
    nsg: Nsg
    rule: NsgRule
    default: bool

    @property
    def allowed(self) -> bool:
        return self.rule.access == "Allow"

    @property
    def rule_name(self) -> str:
        kind = "defaultSecurityRules" if self.default else "securityRules"
        return f"{kind}/{self.rule.name}"


def _address_matches(s: Scenario, vm: Vm, text: str, ip: IPv4Address,
                     vnet_tag: tuple[IPv4Network, ...]) -> bool:
    if text == "*":
        return True
    if text == "Internet":
        return is_internet(ip)
    if text == "VirtualNetwork":
        return any(ip in n for n in vnet_tag)
    return any(ip in n for n in tag_prefixes(s, vm, text))


def rule_matches(s: Scenario, vm: Vm, rule: NsgRule, pkt: Packet,
                 vnet_tag: tuple[IPv4Network, ...] | None = None) -> bool:
    if rule.protocol != "*" and rule.protocol.lower() != pkt.protocol:
        return False
    tag = vnet_tag if vnet_tag is not None else virtual_network_tag(s, vm)
    if not _address_matches(s, vm, rule.source, pkt.src, tag):
        return False
    if not _address_matches(s, vm, rule.destination, pkt.dst, tag):
        return False
    if pkt.protocol == "icmp":
        return True  # ports do not apply to ICMP
    return port_matches(rule.source_ports, pkt.src_port) and port_matches(
        rule.destination_ports, pkt.dst_port
    )


def ordered_rules(nsg: Nsg, direction: str) -> list[tuple[NsgRule, bool]]:
    """(rule, is_default) of one direction, lowest priority number first."""
    rules = [(r, False) for r in nsg.rules if r.direction == direction]
    rules += [(r, True) for r in DEFAULT_RULES if r.direction == direction]
    return sorted(rules, key=lambda rd: rd[0].priority)


def evaluate(s: Scenario, vm: Vm, nsg: Nsg, direction: str, pkt: Packet) -> Decision:
    """The rule that decides in one NSG (DenyAll* at the latest)."""
    tag = virtual_network_tag(s, vm)
    for rule, default in ordered_rules(nsg, direction):
        if rule_matches(s, vm, rule, pkt, tag):
            return Decision(nsg, rule, default)
    raise AssertionError("the default DenyAll rules match everything")  # pragma: no cover


def nsgs_in_order(s: Scenario, vm: Vm, direction: str) -> list[tuple[str, Nsg]]:
    """(association, nsg) met by a flow: inbound subnet then NIC, outbound NIC then subnet."""
    sub = subnet_of(s, vm)
    subnet_nsg = s.nsg(sub.nsg) if sub.nsg else None
    nic_nsg = s.nsg(vm.nic_nsg) if vm.nic_nsg else None
    order = [("subnet", subnet_nsg), ("nic", nic_nsg)]
    if direction == "Outbound":
        order.reverse()
    return [(assoc, nsg) for assoc, nsg in order if nsg is not None]


def flow_decisions(s: Scenario, vm: Vm, direction: str, pkt: Packet) -> list[Decision]:
    """Each NSG's decision in order, stopping at the first Deny."""
    out: list[Decision] = []
    for _, nsg in nsgs_in_order(s, vm, direction):
        d = evaluate(s, vm, nsg, direction, pkt)
        out.append(d)
        if not d.allowed:
            break
    return out


def first_deny(s: Scenario, vm: Vm, direction: str, pkt: Packet) -> Decision | None:
    decisions = flow_decisions(s, vm, direction, pkt)
    return decisions[-1] if decisions and not decisions[-1].allowed else None


def verdict(s: Scenario, vm: Vm, direction: str, pkt: Packet) -> FlowVerdict:
    """test-ip-flow: a Deny names the first denying rule; an Allow the last NSG's rule."""
    decisions = flow_decisions(s, vm, direction, pkt)
    if not decisions:
        return FlowVerdict("Allow", "", "", None)
    d = decisions[-1]
    rule_id = (s.default_rule_id(d.nsg, d.rule.name) if d.default
               else s.rule_id(d.nsg, d.rule.name))
    return FlowVerdict(d.rule.access, d.rule_name, rule_id, d.nsg.name)


def _shown(text: str) -> str:
    return "0.0.0.0/0" if text == "*" else text


def _expanded(s: Scenario, vm: Vm, text: str) -> tuple[str, ...]:
    if text in ("VirtualNetwork", "Internet", "AzureLoadBalancer"):
        return tuple(str(n) for n in tag_prefixes(s, vm, text))
    return ()


def effective_nsgs(s: Scenario, vm: Vm) -> list[EffectiveNsg]:
    """list-effective-nsg: subnet's NSG then NIC's, each rule with service tags expanded."""
    out: list[EffectiveNsg] = []
    sub = subnet_of(s, vm)
    tag_map = {t: tuple(str(n) for n in tag_prefixes(s, vm, t))
               for t in ("VirtualNetwork", "Internet", "AzureLoadBalancer")}
    for assoc, nsg in nsgs_in_order(s, vm, "Inbound"):
        rules = []
        for direction in ("Inbound", "Outbound"):
            for rule, default in ordered_rules(nsg, direction):
                kind = "defaultSecurityRules" if default else "securityRules"
                rules.append(EffectiveNsgRule(
                    name=f"{kind}/{rule.name}", priority=rule.priority, direction=direction,
                    access=rule.access,
                    protocol="All" if rule.protocol == "*" else rule.protocol,
                    source=_shown(rule.source), source_ports=port_ranges_text(rule.source_ports),
                    destination=_shown(rule.destination),
                    destination_ports=port_ranges_text(rule.destination_ports),
                    expanded_source=_expanded(s, vm, rule.source),
                    expanded_destination=_expanded(s, vm, rule.destination),
                ))
        assoc_id = s.subnet_id(vm.vnet, sub.name) if assoc == "subnet" else s.nic_id(vm)
        out.append(EffectiveNsg(assoc, assoc_id, nsg.name, s.nsg_id(nsg), tuple(rules), tag_map))
    return out
