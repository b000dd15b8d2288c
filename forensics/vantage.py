"""Where a capture was taken: at one of the hosts whose traffic it holds, or somewhere between.

It matters for loss. At the sender every range sent twice is a retransmission, whatever
tshark calls it, and what the sender re-sent bounds what the path dropped from above; at the
receiver only what arrived can be counted. Two signs, each read per TCP connection from
figures the analysis keeps anyway, and independent of each other:

- TTL: a host's own packets leave with an initial TTL (32, 64, 128 or 255) and are captured
  before any router lowers it, while the other end's packets arrive lowered by every router
  on the way. One end at an initial value and the other below one says which end is here.
- Handshake timing: at the client the SYN-ACK comes a round trip after the SYN and the ACK
  follows it at once; at the server the SYN-ACK follows the SYN at once and the ACK comes a
  round trip later. One gap at least RATIO times the other says which end is here.

An address is the capture point when at least half of its connections say so and (almost)
none says otherwise. A capture on a router or an NVA, or between hosts in one subnet with
no timing to go by, names no host: nothing is claimed then.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .flows import F_ACK_TS, F_SYN_TS, F_SYNACK_TS, F_TTL0

INITIAL_TTLS = frozenset((32, 64, 128, 255))
RATIO = 4  # one handshake gap this many times the other: the short one is the host's own
CONTRARY_SHARE = 0.1  # votes the other way tolerated, as a share of the votes for


@dataclass
class Vantage:
    """The capture hosts (addresses the capture was taken at) and how each was recognised."""

    hosts: list[str] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)

    def side(self, src: str, dst: str) -> str:
        """Where the capture sat for data from ``src`` to ``dst``: at the "sender", at the
        "receiver", or "unknown"."""
        if src in self.hosts:
            return "sender"
        if dst in self.hosts:
            return "receiver"
        return "unknown"

    def summary(self) -> dict[str, Any]:
        return {"hosts": list(self.hosts), "evidence": dict(self.evidence)}


def _votes(rec: list[Any], o: int) -> tuple[int, int]:
    """(+1 originator here / -1 responder here / 0 no sign) by TTL, then by timing."""
    t_o, t_r = rec[F_TTL0 + o] - 1, rec[F_TTL0 + 1 - o] - 1
    by_ttl = 0
    if t_o > 0 and t_r > 0:
        if t_o in INITIAL_TTLS and t_r not in INITIAL_TTLS:
            by_ttl = 1
        elif t_r in INITIAL_TTLS and t_o not in INITIAL_TTLS:
            by_ttl = -1
    syn, synack, ack = rec[F_SYN_TS], rec[F_SYNACK_TS], rec[F_ACK_TS]
    by_time = 0
    if syn and synack and ack and syn <= synack <= ack:
        there, back = synack - syn, ack - synack
        if there >= RATIO * back and there > 0:
            by_time = 1
        elif back >= RATIO * there and back > 0:
            by_time = -1
    return by_ttl, by_time


def _on(k: int, n: int) -> str:
    if n == 1:
        return "on its only connection"
    return f"on all {n} of its connections" if k == n else f"on {k} of its {n} connections"


def find_vantage(conns: list[tuple[list[Any], int, tuple[str, str]]]) -> Vantage:
    """``conns``: (flow record, raw direction of its originator, its two addresses in raw
    order) for each TCP connection."""
    tally: dict[str, list[int]] = {}  # address -> [connections, here by TTL, here by timing,
    #                                    elsewhere by TTL, elsewhere by timing]
    for rec, o, ends in conns:
        orig, resp = ends[o], ends[1 - o]
        a = tally.setdefault(orig, [0, 0, 0, 0, 0])
        b = tally.setdefault(resp, [0, 0, 0, 0, 0])
        a[0] += 1
        b[0] += 1
        for i, vote in enumerate(_votes(rec, o)):
            if vote:
                here, there = (a, b) if vote > 0 else (b, a)
                here[1 + i] += 1
                there[3 + i] += 1
    v = Vantage()
    for addr, (n, ttl, timing, ttl_no, timing_no) in sorted(tally.items(),
                                                            key=lambda kv: -kv[1][0]):
        yes, no = ttl + timing, ttl_no + timing_no
        if max(ttl, timing) * 2 < n or no > CONTRARY_SHARE * yes:
            continue
        v.hosts.append(addr)
        signs = []
        if ttl:
            signs.append(f"TTL: its packets keep their initial TTL, its peers' arrive lowered, "
                         f"{_on(ttl, n)}")
        if timing:
            signs.append(f"handshake timing: the round trip falls on its peers' side, "
                         f"{_on(timing, n)}")
        v.evidence[addr] = "; ".join(signs)
    return v
