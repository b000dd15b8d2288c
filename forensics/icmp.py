"""ICMP and ICMPv6: type/code histogram, unreachables with the flow they quote, path-MTU hints.

An ICMP error quotes the IP header and first bytes of the packet that caused it; decoding
that quote tells the engineer *which* connection a router or host refused.
"""

from __future__ import annotations

import ipaddress
from typing import Any

MAX_EXAMPLES = 25
MAX_FLOWS = 100_000

UNREACH_CODES = {
    0: "network unreachable",
    1: "host unreachable",
    2: "protocol unreachable",
    3: "port unreachable",
    4: "fragmentation needed (DF set)",
    9: "network administratively prohibited",
    10: "host administratively prohibited",
    13: "communication administratively prohibited",
}
UNREACH6_CODES = {
    0: "no route to destination",
    1: "administratively prohibited",
    3: "address unreachable",
    4: "port unreachable",
}
PROTO = {6: "tcp", 17: "udp", 1: "icmp", 58: "icmpv6"}


def _ip(raw: bytes) -> str:
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return raw.hex()


def quoted_flow(buf: bytes, p: int, end: int) -> dict[str, Any] | None:
    """Decode the IP (v4 or v6) header quoted inside an ICMP error, with ports if present."""
    if p >= end:
        return None
    ver = buf[p] >> 4
    if ver == 4 and p + 20 <= end:
        ihl = (buf[p] & 0x0F) * 4
        proto = buf[p + 9]
        src, dst = buf[p + 12 : p + 16], buf[p + 16 : p + 20]
        l4 = p + ihl
    elif ver == 6 and p + 40 <= end:
        proto = buf[p + 6]
        src, dst = buf[p + 8 : p + 24], buf[p + 24 : p + 40]
        l4 = p + 40
    else:
        return None
    out: dict[str, Any] = {"proto": PROTO.get(proto, str(proto)), "src": _ip(src), "dst": _ip(dst)}
    if proto in (6, 17) and l4 + 4 <= end:
        out["sport"] = (buf[l4] << 8) | buf[l4 + 1]
        out["dport"] = (buf[l4 + 2] << 8) | buf[l4 + 3]
    return out


class IcmpStats:
    """Accumulates ICMP facts across the capture."""

    def __init__(self) -> None:
        self.type_code: dict[str, int] = {}
        self.type_code6: dict[str, int] = {}
        self.unreachables: list[dict[str, Any]] = []
        self.unreachable_count = 0
        self.frag_needed: list[dict[str, Any]] = []
        self.time_exceeded = 0
        self.time_exceeded_from: dict[str, int] = {}
        self.echo_requests = 0
        self.echo_replies = 0
        # (proto, src, sport, dst, dport) of each quoted flow -> [router, meaning, first frame,
        # messages, frag-needed next-hop MTU or -1]: lets the diagnosis pin an error on its flow
        self.by_flow: dict[tuple[str, str, int, str, int], list[Any]] = {}
        # UDP answered by an ICMP unreachable, by the destination host itself or by a router
        # on the way: (client, server, port) -> [messages, first frames, senders, meanings]
        self.refused_udp: dict[tuple[str, str, int], list[Any]] = {}

    def packet(self, buf: bytes, l4: int, end: int, proto: int, frame: int, addrs: bytes,
               alen: int) -> None:
        """One ICMP (proto 1) or ICMPv6 (proto 58) message at ``l4``."""
        itype, code = buf[l4], buf[l4 + 1]
        key = f"{itype}/{code}"
        src = addrs[:alen]
        if proto == 1:
            self.type_code[key] = self.type_code.get(key, 0) + 1
            unreach, too_big, exceeded, echo_q, echo_r = itype == 3, False, itype == 11, 8, 0
            names = UNREACH_CODES
        else:
            self.type_code6[key] = self.type_code6.get(key, 0) + 1
            unreach, too_big, exceeded = itype == 1, itype == 2, itype == 3
            echo_q, echo_r = 128, 129
            names = UNREACH6_CODES
        if itype == echo_q:
            self.echo_requests += 1
        elif itype == echo_r:
            self.echo_replies += 1
        if exceeded:
            self.time_exceeded += 1
            s = _ip(src)
            self.time_exceeded_from[s] = self.time_exceeded_from.get(s, 0) + 1
        if unreach or too_big:
            quote = quoted_flow(buf, l4 + 8, end)
            if unreach:
                self.unreachable_count += 1
            entry = {
                "frame": frame,
                "from": _ip(src),
                "type": itype,
                "code": code,
                "meaning": "packet too big" if too_big else names.get(code, f"code {code}"),
                "quoted_flow": quote,
            }
            if unreach and quote is not None and quote["proto"] == "udp" \
                    and not (proto == 1 and code == 4) and len(self.refused_udp) < MAX_FLOWS:
                rk = (quote["src"], quote["dst"], quote.get("dport", 0))
                row = self.refused_udp.setdefault(rk, [0, [], set(), set()])
                row[0] += 1
                if len(row[1]) < MAX_EXAMPLES:
                    row[1].append(frame)
                row[2].add(entry["from"])
                row[3].add(entry["meaning"])
            if quote is not None and len(self.by_flow) < MAX_FLOWS:
                fk = (quote["proto"], quote["src"], quote.get("sport", 0), quote["dst"],
                      quote.get("dport", 0))
                hit = self.by_flow.get(fk)
                if hit is None:
                    self.by_flow[fk] = [entry["from"], entry["meaning"], frame, 1, -1]
                else:
                    hit[3] += 1
            if (proto == 1 and itype == 3 and code == 4) or too_big:
                mtu = (buf[l4 + 6] << 8) | buf[l4 + 7] if proto == 1 and l4 + 8 <= end else 0
                if proto == 58 and l4 + 8 <= end:
                    mtu = int.from_bytes(buf[l4 + 4 : l4 + 8], "big")
                entry["next_hop_mtu"] = mtu
                if quote is not None:
                    hit = self.by_flow.get((quote["proto"], quote["src"], quote.get("sport", 0),
                                            quote["dst"], quote.get("dport", 0)))
                    if hit is not None:
                        hit[4] = mtu
                if len(self.frag_needed) < MAX_EXAMPLES:
                    self.frag_needed.append(entry)
            elif len(self.unreachables) < MAX_EXAMPLES:
                self.unreachables.append(entry)

    def refused(self, port: int) -> dict[tuple[str, str], dict[str, Any]]:
        """(client, server) -> what answered UDP to ``port`` with an ICMP unreachable:
        messages, first frames, who sent them and what they said; ``by_host`` when every one
        was the server's own port unreachable (its kernel is up; nothing listens there)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for (c, h, p), (n, frames, senders, meanings) in self.refused_udp.items():
            if p != port:
                continue
            row = out.setdefault((c, h), {"messages": 0, "frames": [], "from": set(),
                                          "meanings": set()})
            row["messages"] += n
            row["frames"] = (row["frames"] + frames)[:MAX_EXAMPLES]
            row["from"] |= senders
            row["meanings"] |= meanings
        for (_c, h), row in out.items():
            row["by_host"] = row["from"] == {h} and row["meanings"] == {"port unreachable"}
            row["from"], row["meanings"] = sorted(row["from"]), sorted(row["meanings"])
        return out

    def summary(self) -> dict[str, Any]:
        """The semantic-JSON section."""
        return {
            "type_code": dict(sorted(self.type_code.items())),
            "icmpv6_type_code": dict(sorted(self.type_code6.items())),
            "echo_requests": self.echo_requests,
            "echo_replies": self.echo_replies,
            "unreachable_count": self.unreachable_count,
            "unreachables": self.unreachables,
            "fragmentation_needed": self.frag_needed,
            "udp_unreachable": [
                {"client": c, "server": h, "port": port, "messages": n, "frames": frames,
                 "from": sorted(senders), "meanings": sorted(meanings)}
                for (c, h, port), (n, frames, senders, meanings) in sorted(
                    self.refused_udp.items(), key=lambda kv: -kv[1][0])[:MAX_EXAMPLES]
            ],
            "time_exceeded": self.time_exceeded,
            "time_exceeded_from": dict(
                sorted(self.time_exceeded_from.items(), key=lambda kv: -kv[1])[:MAX_EXAMPLES]
            ),
        }
