"""The shapes the flow-log aggregate is made of, and the small helpers around them.

A *flow* is a list (indexes below, for speed in the per-tuple loop): tuple counts per state,
what each end's NIC saw (the sender's NIC logs a flow ``O``, the receiver's ``I``), the minutes
it was allowed, denied, one way or answered, the rules that decided it with their first and
last tuple, the denied 5-tuples, pooled sources, encryption states and the NICs that logged it.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from typing import Any

# a flow
NB, NC, NE, ND, NX, VO, VI, MIN, RULES, PD, SRCS, ENC, MACS, OWEV, CM, CF, CR = range(17)
# a vantage (VO: the sender's NIC, VI: the receiver's): packets and bytes each way, records
# with packets out and none back, records with packets back, packets sent in the former
V_PS, V_BS, V_PR, V_BR, V_ONEWAY, V_ANSWERED, V_ONEWAY_PS = range(7)
# a rule's stats in a flow: tuples, first (ts, record, tuple), last (ts, record, tuple)
R_N, R_FTS, R_FREC, R_FTUP, R_LTS, R_LREC, R_LTUP = range(7)
# minute flags
ALLOWED, DENIED, ONEWAY_O, ONEWAY_I, ANSWERED, ENC_DROP = 1, 2, 4, 8, 16, 32
# encryption states whose packets the platform drops (Microsoft Learn, "Virtual network
# flow logs": NX_SW_NOT_READY, NX_NOT_ACCEPTED, NX_NOT_SUPPORTED)
DROP_ENCRYPTION = frozenset({"NX_SW_NOT_READY", "NX_NOT_ACCEPTED", "NX_NOT_SUPPORTED"})
POOLED = "*"
MAX_FLOWS = 200_000
MAX_SOURCES = 1000          # pooled source addresses kept per flow (for the count and examples)
PORT_SET_MAX = 256          # distinct denied source ports kept as a set; above, a bitmap
BIG_SPAN = 1 << 20          # minutes (two years): a flow spanning more is bad data

Key = tuple[str, str, str, str]  # source (or POOLED), destination, destination port, protocol


ZERO_VANTAGE = (0, 0, 0, 0, 0, 0, 0)


def new_flow() -> list[Any]:
    """A flow; what most flows never need (a second vantage, denied ports, a second NIC,
    pooled sources, encryption states) stays None until it is (a flow costs ~1.5 KB)."""
    return [0, 0, 0, 0, 0, None, None, MinuteSet(), {}, None, None, None, None, None, -1, 0,
            None]


def vantage(p: list[Any], i: int) -> list[int] | tuple[int, ...]:
    """The flow's counts at the sender's NIC (VO) or the receiver's (VI), zeros if none."""
    v: list[int] | None = p[i]
    return v if v is not None else ZERO_VANTAGE


def macs_of(p: list[Any]) -> set[str]:
    """The NICs that logged the flow (None, one MAC as text, or a set of them)."""
    m = p[MACS]
    if m is None:
        return set()
    return {m} if isinstance(m, str) else set(m)


def add_mac(p: list[Any], mac: str) -> None:
    m = p[MACS]
    if m is None:
        p[MACS] = mac
    elif isinstance(m, str):
        if m != mac:
            p[MACS] = {m, mac}
    else:
        m.add(mac)


class MinuteSet:
    """Flags per minute (absolute minute numbers), as a byte per minute from the first seen."""

    __slots__ = ("origin", "flags")

    def __init__(self) -> None:
        self.origin = 0
        self.flags = bytearray()

    def mark(self, m: int, flag: int) -> None:
        flags = self.flags
        if not flags:
            self.origin = m
            self.flags = flags = bytearray(16)
        off = m - self.origin
        if off < 0:
            if len(flags) - off > BIG_SPAN:
                return
            flags[0:0] = bytes(-off)
            self.origin = m
            off = 0
        elif off >= len(flags):
            if off >= BIG_SPAN:
                return
            flags.extend(bytes(off + 1 - len(flags) + max(60, len(flags) >> 2)))
        flags[off] |= flag

    def merge(self, other: MinuteSet) -> None:
        """OR in another set's flags (whole byte strings at once, not minute by minute)."""
        theirs = other.flags
        if not theirs:
            return
        if not self.flags:
            self.origin, self.flags = other.origin, bytearray(theirs)
            return
        lo = min(self.origin, other.origin)
        hi = max(self.origin + len(self.flags), other.origin + len(theirs))
        if hi - lo > BIG_SPAN:
            return
        if lo != self.origin or hi - lo != len(self.flags):
            grown = bytearray(hi - lo)
            grown[self.origin - lo:self.origin - lo + len(self.flags)] = self.flags
            self.origin, self.flags = lo, grown
        at = other.origin - lo
        n = len(theirs)
        mine = int.from_bytes(self.flags[at:at + n], "little")
        self.flags[at:at + n] = (mine | int.from_bytes(theirs, "little")).to_bytes(n, "little")


#: first octets (as text) of IPv4 addresses that are certainly Internet ones: a fast test
#: before ``is_internal``
PUBLIC_FIRST_OCTET = frozenset(str(n) for n in range(1, 224)) - {
    "10", "100", "127", "168", "169", "172", "192"}
_NETS_6 = [ipaddress.ip_network(n) for n in ("fc00::/7", "fe80::/10", "::1/128")]


def is_internal(ip: str, cache: dict[str, bool] = {}) -> bool:  # noqa: B006 - a cache
    """Private, shared (CGNAT), link-local or loopback, or Azure's platform address: a source
    that is not pooled. (``ipaddress.is_private`` also counts the documentation ranges, which
    the lab uses for Internet hosts, so it is not used.)"""
    if ":" in ip:  # IPv6: rare enough for ipaddress, cached
        v = cache.get(ip)
        if v is None:
            try:
                addr = ipaddress.ip_address(ip)
                v = any(addr in n for n in _NETS_6)
            except ValueError:
                v = True
            if len(cache) > 50_000:
                cache.clear()
            cache[ip] = v
        return v
    # IPv4 by its first octets (this runs for every inbound record from the Internet)
    a, _, rest = ip.partition(".")
    if a == "10" or a == "127":
        return True
    b = rest.partition(".")[0]
    if a == "192":
        return b == "168"
    if a == "172" or a == "100":
        if not b.isdigit():
            return True
        n = int(b)
        return 16 <= n <= 31 if a == "172" else 64 <= n <= 127
    if a == "169":
        return b == "254"
    if a == "168":
        return ip == "168.63.129.16"
    return not a.isdigit()  # not an address: never pooled, it shows as it is


class AddrMatch:
    """``--src``/``--dst``: one address or a CIDR block, matched on the tuple's text."""

    def __init__(self, text: str) -> None:
        self.text = text
        net = ipaddress.ip_network(text, strict=False)
        self.exact = str(net.network_address) if net.num_addresses == 1 else None
        self.net = net
        self.cache: dict[str, bool] = {}

    def __call__(self, ip: str) -> bool:
        if ip == self.exact:
            return True
        v = self.cache.get(ip)
        if v is None:
            try:
                v = ipaddress.ip_address(ip) in self.net
            except ValueError:
                v = False
            if len(self.cache) > 50_000:
                self.cache.clear()
            self.cache[ip] = v
        return v


class Filter:
    """What the engineer asked about: a pair, a port and a time window."""

    def __init__(self, src: str | None = None, dst: str | None = None, port: int | None = None,
                 since_ms: int | None = None, until_ms: int | None = None) -> None:
        self.src = AddrMatch(src) if src else None
        self.dst = AddrMatch(dst) if dst else None
        self.port = str(port) if port is not None else None
        self.since_ms = since_ms
        self.until_ms = until_ms

    @property
    def pair(self) -> bool:
        return bool(self.src or self.dst or self.port)


class NearMiss:
    """For "nothing recorded": what the logs hold that is close to the question."""

    def __init__(self) -> None:
        self.src_seen = 0          # records from --src to anywhere
        self.dst_seen = 0          # records to --dst from anywhere
        self.reverse = 0           # records from --dst to --src
        self.other_ports: dict[str, int] = {}  # src and dst match, another port
        self.outside_window = 0    # records of the pair outside --since/--until

    def merge(self, o: NearMiss) -> None:
        self.src_seen += o.src_seen
        self.dst_seen += o.dst_seen
        self.reverse += o.reverse
        self.outside_window += o.outside_window
        for k, v in o.other_ports.items():
            if k in self.other_ports or len(self.other_ports) < 50:
                self.other_ports[k] = self.other_ports.get(k, 0) + v


def record_minute(text: Any, cache: dict[str, int] = {}) -> int | None:  # noqa: B006
    """The minute (since the epoch) of a record's ``time``, or None when it is not a time."""
    if not isinstance(text, str):
        return None
    key = text[:16]
    m = cache.get(key)
    if m is None:
        try:
            t = datetime.strptime(key, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)
        except ValueError:
            return None
        m = int(t.timestamp()) // 60
        if len(cache) > 100_000:
            cache.clear()
        cache[key] = m
    return m


def counts_of(fields: list[str]) -> tuple[int, int, int, int]:
    """Counts of a tuple where some are empty (``B,NX,,,,`` in Microsoft's example)."""
    out = []
    for x in fields:
        out.append(int(x) if x.isdigit() else 0)
    return out[0], out[1], out[2], out[3]


def port_bitmap(ports: set[str]) -> bytearray:
    bm = bytearray(8192)
    for s in ports:
        if s.isdigit():
            i = int(s)
            bm[(i >> 3) & 8191] |= 1 << (i & 7)
    return bm


def add_port(p: list[Any], sport: str) -> None:
    ports = p[PD]
    if ports is None:
        p[PD] = {sport}
    elif type(ports) is set:
        ports.add(sport)
        if len(ports) > PORT_SET_MAX:
            p[PD] = port_bitmap(ports)
    elif sport.isdigit():
        i = int(sport)
        ports[(i >> 3) & 8191] |= 1 << (i & 7)


def port_count(ports: set[str] | bytearray | None) -> int:
    if ports is None:
        return 0
    if isinstance(ports, set):
        return len(ports)
    return int.from_bytes(ports, "little").bit_count()


def _ports_union(a: set[str] | bytearray | None,
                 b: set[str] | bytearray | None) -> set[str] | bytearray | None:
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, set) and isinstance(b, set):
        u = a | b
        return u if len(u) <= PORT_SET_MAX else port_bitmap(u)
    bm_a = a if isinstance(a, bytearray) else port_bitmap(a)
    bm_b = b if isinstance(b, bytearray) else port_bitmap(b)
    return bytearray((int.from_bytes(bm_a, "little") | int.from_bytes(bm_b, "little"))
                     .to_bytes(8192, "little"))


def shift_flow(q: list[Any], shift: int) -> None:
    """Renumber the blob indexes of a flow's evidence after two blob lists were joined."""
    def mv(ctx: tuple[Any, ...]) -> tuple[Any, ...]:
        return (ctx[0] + shift, *ctx[1:])
    if shift:
        for rs in q[RULES].values():
            rs[R_FREC] = mv(rs[R_FREC])
            rs[R_LREC] = mv(rs[R_LREC])
        if q[OWEV] is not None:
            q[OWEV] = (q[OWEV][0], mv(q[OWEV][1]), q[OWEV][2])
    q[CR] = None


def merge_flow(p: list[Any], q: list[Any]) -> None:
    """Fold flow ``q`` (from later blobs) into ``p``: what one pass over both would hold."""
    for i in (NB, NC, NE, ND, NX):
        p[i] += q[i]
    for i in (VO, VI):
        if q[i] is not None:
            if p[i] is None:
                p[i] = q[i]
            else:
                for j in range(7):
                    p[i][j] += q[i][j]
    p[MIN].merge(q[MIN])
    for rk, rq in q[RULES].items():
        rp = p[RULES].get(rk)
        if rp is None:
            p[RULES][rk] = rq
            continue
        rp[R_N] += rq[R_N]
        if rq[R_FTS] < rp[R_FTS]:
            rp[R_FTS:R_FTUP + 1] = rq[R_FTS:R_FTUP + 1]
        if rq[R_LTS] >= rp[R_LTS]:
            rp[R_LTS:R_LTUP + 1] = rq[R_LTS:R_LTUP + 1]
    p[PD] = _ports_union(p[PD], q[PD])
    if q[SRCS]:  # a dict, so that the first MAX_SOURCES kept are those one pass would keep
        s = p[SRCS] if p[SRCS] is not None else {}
        for ip in q[SRCS]:
            if len(s) >= MAX_SOURCES:
                break
            s[ip] = None
        p[SRCS] = s
    if q[ENC]:
        e = p[ENC] if p[ENC] is not None else {}
        for k, v in q[ENC].items():
            e[k] = e.get(k, 0) + v
        p[ENC] = e
    for mac in sorted(macs_of(q)):
        add_mac(p, mac)
    if q[OWEV] is not None and (p[OWEV] is None or q[OWEV][0] < p[OWEV][0]):
        p[OWEV] = q[OWEV]
    p[CM] = -1
    p[CR] = None
