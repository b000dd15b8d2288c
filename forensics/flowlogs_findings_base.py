"""What every flow-log finding is made of: the ranking, the context, the shared wording.

Scores follow the pcap engine (``findings.py``): a severity base plus a bonus under 10 for
strength, so the two kinds of findings rank alike.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .flowlogs_agg import Aggregator
from .flowlogs_events import Event
from .flowlogs_flows import (
    Clock,
    flow_label,
    iso_minute,
    minutes,
    proto_name,
    source_label,
)
from .flowlogs_model import MIN, R_N, RULES, Key, MinuteSet
from .wording import listing

SEVERITY_SCORE = {"critical": 90, "high": 70, "medium": 50, "low": 30, "info": 10}  # as pcap
MAX_EVIDENCE = 10
MAX_GROUPS = 3                # findings of one id about different destinations, largest first
STOP_MIN_ACTIVE = 5
STOP_MIN_QUIET = 5
STOP_MIN_LIFE = 15
ANSWER_EXPECTED_UDP = {"53", "67", "88", "123", "161", "389", "500", "1812", "3478", "4500"}


def finding(fid: str, severity: str, title: str, detail: str,
            ev: Sequence[dict[str, Any] | None], action: str, bonus: float = 0.0,
            **facts: Any) -> dict[str, Any]:
    """A finding; ``facts`` are the fields a program reads (rule, window, counts, flows)."""
    out = {"id": fid, "severity": severity,
           "score": round(SEVERITY_SCORE[severity] + min(max(bonus, 0.0), 9.9), 1),
           "title": title, "detail": detail, "next_step": action,
           "evidence": [e for e in ev if e][:MAX_EVIDENCE]}
    out.update(facts)
    return out


def strength(n: int) -> float:
    """The score bonus for how much evidence there is: 2 per power of ten."""
    return 2 * math.log10(1 + n)


class Context:
    """The aggregate plus what every finding looks up: when each NIC stopped logging, which
    NIC has which address, the activity log."""

    def __init__(self, agg: Aggregator, events: list[Event] | None, clock: Clock) -> None:
        self.agg = agg
        self.events = events or []
        self.events_given = events is not None
        self.clock = clock
        self.cov_end: dict[str, int] = {}
        for mac, cov in agg.coverage.items():
            logged = minutes(cov, 1)
            if logged:
                self.cov_end[mac] = logged[-1]
        self.ip_macs: dict[str, set[str]] = defaultdict(set)
        for mac, ips in agg.nic_ips.items():
            for ip in ips:
                self.ip_macs[ip].add(mac)

    def end_of(self, macs: set[str]) -> int | None:
        ends = [self.cov_end[m] for m in macs if m in self.cov_end]
        return max(ends) if ends else None

    def closest(self, evs: list[Event], minute: float) -> Event | None:
        return min(evs, key=lambda e: (abs(e.minute - minute), e.time)) if evs else None

    def no_events_hint(self, a: int, b: int) -> str:
        return ("No activity log was given (--events FILE): run `az monitor activity-log list "
                f"--start-time {iso_minute(a - 10)} --end-time {iso_minute(b + 10)}` and pass "
                "its JSON to line this up with a change.")


def union_minutes(flows: list[tuple[Key, list[Any]]]) -> MinuteSet:
    u = MinuteSet()
    for _key, p in flows:
        u.merge(p[MIN])
    return u


def targets_text(keys: list[Key]) -> str:
    return listing(sorted({f"{k[1]}:{k[2]}/{proto_name(k[3])}" for k in keys}), 3)


def sources_text(flows: list[tuple[Key, list[Any]]]) -> str:
    return listing(sorted({source_label(k, p) for k, p in flows}), 3)


def only_denials_of(p: list[Any], acl: str, rule: str) -> list[Any]:
    """A view of a flow with only one rule's denials (for its evidence)."""
    q = list(p)
    q[RULES] = {k: v for k, v in p[RULES].items() if k == (acl, rule, "D")}
    return q


def flow_ref(k: Key, p: list[Any]) -> dict[str, Any]:
    return {"src": k[0], "dst": k[1], "dport": int(k[2]) if k[2].isdigit() else k[2],
            "protocol": proto_name(k[3]), "label": flow_label(k, p)}


def top_rule(flows: list[tuple[Key, list[Any]]], dec: str) -> str:
    """The rule that decided most of these flows' records, in words."""
    top = top_pair(flows, dec)
    if top is None:
        return "no rule"
    acl, rule = top
    if acl == "unspecified" and rule == "unspecified":
        return "no NSG rule (aclID and rule 'unspecified')"
    return f"{rule} (aclID {acl})"


def top_pair(flows: list[tuple[Key, list[Any]]], dec: str) -> tuple[str, str] | None:
    n: dict[tuple[str, str], int] = defaultdict(int)
    for _k, p in flows:
        for (acl, rule, d), rs in p[RULES].items():
            if d == dec:
                n[(acl, rule)] += rs[R_N]
    return max(n.items(), key=lambda kv: (kv[1], kv[0]))[0] if n else None


def top_name(flows: list[tuple[Key, list[Any]]], dec: str) -> str | None:
    top = top_pair(flows, dec)
    return top[1] if top else None


def top_acl(flows: list[tuple[Key, list[Any]]], dec: str) -> str | None:
    top = top_pair(flows, dec)
    return top[0] if top else None


