"""Address prefixes, port ranges and service tags as NSGs read them.

`Internet` is the fixed set of the format (every IPv4 address outside a few special ranges),
deliberately not Python's is_private/is_global, which disagree about documentation ranges.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from ipaddress import IPv4Address, IPv4Network, collapse_addresses, ip_network

AZURE_PLATFORM_IP = IPv4Address("168.63.129.16")
ALL = IPv4Network("0.0.0.0/0")
SERVICE_TAGS = ("VirtualNetwork", "Internet", "AzureLoadBalancer")

NOT_INTERNET: tuple[IPv4Network, ...] = tuple(
    IPv4Network(p)
    for p in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "224.0.0.0/3",
        "168.63.129.16/32",
    )
)

# the four private ranges whose system routes have next hop None
NONE_ROUTE_PREFIXES: tuple[IPv4Network, ...] = tuple(
    IPv4Network(p) for p in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)


def is_internet(ip: IPv4Address) -> bool:
    return not any(ip in net for net in NOT_INTERNET)


@cache
def internet_prefixes() -> tuple[IPv4Network, ...]:
    """The Internet tag as CIDRs (what list-effective-nsg shows expanded)."""
    remaining: list[IPv4Network] = [ALL]
    for hole in NOT_INTERNET:
        nxt: list[IPv4Network] = []
        for net in remaining:
            if net.overlaps(hole):
                if hole.supernet_of(net):
                    continue
                nxt.extend(net.address_exclude(hole))
            else:
                nxt.append(net)
        remaining = nxt
    return tuple(collapse_addresses(remaining))


def parse_prefix(text: str) -> IPv4Network | None:
    """An IPv4 address or a CIDR with no host bits set; None when it is neither."""
    if not text or any(c not in "0123456789./" for c in text):
        return None
    try:
        net = ip_network(text, strict=True)
    except ValueError:
        return None
    return net if isinstance(net, IPv4Network) else None


def prefix_problem(text: str) -> str | None:
    """Why an NSG source/destination is unusable, or None if it is valid."""
    if text == "*" or text in SERVICE_TAGS:
        return None
    if parse_prefix(text) is not None:
        return None
    try:
        ip_network(text, strict=False)
    except ValueError:
        return (
            f"{text!r} is not an IPv4 address, a CIDR, '*', VirtualNetwork, Internet "
            "or AzureLoadBalancer"
        )
    return f"{text} has host bits set (the network is {ip_network(text, strict=False)})"


def parse_ports(text: str) -> list[tuple[int, int]] | None:
    """'*', 'N', 'N-M' or a comma-separated list of those, as inclusive ranges; None if bad."""
    if text.strip() == "*":
        return [(0, 65535)]
    out: list[tuple[int, int]] = []
    for part in text.split(","):
        part = part.strip()
        lo_s, dash, hi_s = part.partition("-")
        if not lo_s.isdigit() or (dash and not hi_s.isdigit()):
            return None
        lo = int(lo_s)
        hi = int(hi_s) if dash else lo
        if not 0 <= lo <= hi <= 65535:
            return None
        out.append((lo, hi))
    return out


def port_ranges_text(text: str) -> tuple[str, ...]:
    """Ports as list-effective-nsg shows them: every range as 'N-M'."""
    return tuple(f"{lo}-{hi}" for lo, hi in parse_ports(text) or [])


def port_matches(text: str, port: int | None) -> bool:
    if port is None:
        return True
    return any(lo <= port <= hi for lo, hi in parse_ports(text) or [])


def collapse(nets: Iterable[IPv4Network]) -> tuple[IPv4Network, ...]:
    return tuple(collapse_addresses(nets))
