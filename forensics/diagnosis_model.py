"""The diagnosis' shapes: one TCP connection as it sees it, and the whole capture's verdicts.

Kept apart from the code that fills them (diagnosis.py and its helpers) so that the helpers
and the findings can import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .facts import FlowFacts
from .vantage import Vantage

EDGE_NS = 1_000_000_000  # an attempt younger than this (or the slowest handshake) at the end
SCAN_MIN_PORTS = 15  # distinct ports of one host, or
SCAN_MIN_HOSTS = 20  # distinct hosts on one port, tried by one source ...
SCAN_FAILED_SHARE = 0.7  # ... mostly without an established connection
SCAN_RETRIED_SHARE = 0.2  # a sweeper rarely retries a SYN; a blocked client's kernel does
MTU_MIN_SEGMENT = 1000  # a black hole eats full-size segments, not small ones
M32, HALF = 0xFFFFFFFF, 0x80000000
FAILED = ("unanswered", "refused", "unreachable", "abandoned", "at_capture_end", "half_open",
          "synack_only")

OUTCOME_TEXT = {  # what each outcome means, without repeating its name
    "established": "handshake completed, not closed in the capture",
    "closed": "handshake completed, closed with FIN both ways",
    "refused": "SYN answered by RST", "unanswered": "SYN (and its retries) never answered",
    "unreachable": "SYN answered by ICMP destination unreachable",
    "abandoned": "SYN sent, then given up with a RST before any answer",
    "at_capture_end": "SYN sent just before the capture ended",
    "half_open": "SYN answered by SYN-ACK, handshake never completed",
    "synack_only": "only the responder's SYN-ACK seen, nothing from the originator: this "
    "point is on the return path only",
    "reset": "ended by RST after the handshake",
    "stalled": "data retransmitted and never acknowledged",
    "midstream": "started before the capture (no SYN seen)",
}


@dataclass(slots=True)
class Connection:
    """One TCP connection as the diagnosis sees it (originator first, as Zeek)."""

    flow: dict[str, Any]  # flows.flow_brief()
    outcome: str
    o: int  # raw direction of the originator in the flow record
    facts: FlowFacts | None
    ends: tuple[str, str]  # the record's addresses in raw direction order
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        f = self.flow
        return f"{f['src']}:{f['sport']} -> {f['dst']}:{f['dport']}"


@dataclass
class Diagnosis:
    connections: list[Connection]
    edge_ns: int
    scans: list[dict[str, Any]]
    loss: dict[str, Any]
    mtu_blackholes: list[dict[str, Any]]
    injected_resets: list[dict[str, Any]]
    zero_windows: list[dict[str, Any]]
    handshake_retries: dict[str, int]
    scan_flows: set[int] = field(default_factory=set)  # ids of connections in a scan (or flood)
    floods: list[dict[str, Any]] = field(default_factory=list)
    vantage: Vantage = field(default_factory=Vantage)
    _paths: dict[tuple[frozenset[str], int], int] = field(default_factory=dict)

    def path_count(self, a: str, b: str, port: int) -> int:
        """Connections between hosts a and b (either way) to server port ``port``."""
        if not self._paths:
            for c in self.connections:
                k = (frozenset((c.flow["src"], c.flow["dst"])), c.flow["dport"])
                self._paths[k] = self._paths.get(k, 0) + 1
        return self._paths.get((frozenset((a, b)), port), 0)

    def by_outcome(self, *outcomes: str, include_scans: bool = False) -> list[Connection]:
        return [c for c in self.connections if c.outcome in outcomes
                and (include_scans or id(c) not in self.scan_flows)]

    def summary(self) -> dict[str, Any]:
        """The ``diagnosis`` section of the semantic JSON."""
        counts: dict[str, int] = {}
        for c in self.connections:
            counts[c.outcome] = counts.get(c.outcome, 0) + 1
        examples: list[dict[str, Any]] = []
        for c in self.connections:
            if c.outcome not in ("established", "closed", "midstream") and len(examples) < 25:
                examples.append({"flow": c.label, "outcome": c.outcome,
                                 "first_frame": c.flow["first_frame"], **c.detail})
        return {
            "tcp_connections": {"total": len(self.connections),
                                "by_outcome": dict(sorted(counts.items())),
                                "outcome_meanings": {k: OUTCOME_TEXT[k] for k in sorted(counts)},
                                "problem_examples": examples},
            "capture_edge_ms": round(self.edge_ns / 1e6, 3),
            "handshake_retries": self.handshake_retries,
            "data_loss": self.loss,
            "capture_point": self.vantage.summary(),
            "scans": self.scans,
            "syn_floods": self.floods,
            "mtu_blackholes": self.mtu_blackholes,
            "injected_resets": self.injected_resets,
            "zero_windows": self.zero_windows,
        }


def before(a: int, b: int) -> bool:
    """Sequence number a is before b (mod 2**32)."""
    return a != b and ((b - a) & M32) < HALF


