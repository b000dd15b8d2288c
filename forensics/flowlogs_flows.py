"""Read the aggregate back: a flow's minutes, runs, rules and evidence, in words and JSON.

Minutes are absolute (minutes since the epoch, UTC); JSON shows them as ISO minutes
(``2026-03-02T09:20Z``) and the report as ``09:20`` (with the date when the logs span days).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from .flowlogs_agg import Aggregator
from .flowlogs_model import (
    ALLOWED,
    DENIED,
    ENC,
    ENC_DROP,
    MIN,
    NB,
    NC,
    ND,
    NE,
    NX,
    OWEV,
    PD,
    POOLED,
    R_FREC,
    R_FTS,
    R_FTUP,
    R_LREC,
    R_LTS,
    R_LTUP,
    R_N,
    RULES,
    SRCS,
    VI,
    VO,
    Key,
    MinuteSet,
    macs_of,
    port_count,
    vantage,
)
from .flowlogs_read import Blob

PROTOCOLS = {"6": "TCP", "17": "UDP", "1": "ICMP", "58": "ICMPv6", "47": "GRE", "50": "ESP"}
DECISIONS = {"A": "allowed", "D": "denied", "X": "dropped (encryption)"}
_TABLES: dict[tuple[int, int], bytes] = {}
_ONE = re.compile(b"\x01")


def iso_minute(m: int) -> str:
    return datetime.fromtimestamp(m * 60, UTC).strftime("%Y-%m-%dT%H:%MZ")


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Clock:
    """Minutes for a person: ``09:20``, or ``03-02 09:20`` when the logs span more than a day."""

    def __init__(self, first_ms: int | None, last_ms: int | None) -> None:
        self.dated = bool(first_ms is not None and last_ms is not None and
                          datetime.fromtimestamp(first_ms / 1000, UTC).date()
                          != datetime.fromtimestamp(last_ms / 1000, UTC).date())

    def minute(self, m: int) -> str:
        t = datetime.fromtimestamp(m * 60, UTC)
        return t.strftime("%m-%d %H:%M") if self.dated else t.strftime("%H:%M")

    def span(self, a: int, b: int) -> str:
        return self.minute(a) if a == b else f"{self.minute(a)}–{self.minute(b)}"


def minutes(ms: MinuteSet, want: int, exclude: int = 0) -> list[int]:
    """The minutes whose flags have any bit of ``want`` and none of ``exclude``."""
    table = _TABLES.get((want, exclude))
    if table is None:
        table = _TABLES[(want, exclude)] = bytes(
            1 if (i & want) and not (i & exclude) else 0 for i in range(256))
    o = ms.origin
    return [o + m.start() for m in _ONE.finditer(ms.flags.translate(table))]


def runs(mins: Iterable[int], gap: int = 0) -> list[tuple[int, int]]:
    """Sorted minutes as ``(first, last)`` runs; up to ``gap`` missing minutes join a run."""
    out: list[tuple[int, int]] = []
    for m in mins:
        if out and m <= out[-1][1] + 1 + gap:
            out[-1] = (out[-1][0], m)
        else:
            out.append((m, m))
    return out


def timeline(ms: MinuteSet) -> list[tuple[str, int, int]]:
    """Runs of ``denied`` (any denial in the minute) and ``allowed`` minutes, in order;
    minutes with neither do not break a run."""
    out: list[tuple[str, int, int]] = []
    for i, f in enumerate(ms.flags):
        if not f & (ALLOWED | DENIED | ENC_DROP):
            continue
        state = "denied" if f & (DENIED | ENC_DROP) else "allowed"
        m = ms.origin + i
        if out and out[-1][0] == state:
            out[-1] = (state, out[-1][1], m)
        else:
            out.append((state, m, m))
    return out


def proto_name(p: str) -> str:
    return PROTOCOLS.get(p, f"proto {p}")


def source_label(key: Key, p: list[Any]) -> str:
    if key[0] != POOLED:
        return key[0]
    n = len(p[SRCS] or ())
    more = "+" if n >= 1000 else ""
    return f"Internet ({n:,}{more} address{'es' if n != 1 else ''})"


def flow_label(key: Key, p: list[Any]) -> str:
    dst = "*" if key[1] == POOLED else key[1]
    return f"{source_label(key, p)} → {dst}:{key[2]}/{proto_name(key[3])}"


def evidence(agg: Aggregator, ctx: tuple[Any, ...], tup: str, acl: str | None = None,
             rule: str | None = None) -> dict[str, Any]:
    """Where a tuple is: the blob, the record (its time) and the tuple itself."""
    blob: Blob = agg.blobs[ctx[0]]
    out: dict[str, Any] = {"blob": blob.name, "path": blob.path, "record_time": ctx[1],
                           "mac": ctx[2]}
    try:
        ts = int(tup.split(",", 1)[0])
        out["minute"] = iso_minute((ts if ts >= 100_000_000_000 else ts * 1000) // 60000)
    except ValueError:
        out["minute"] = None
    if acl is not None:
        out["acl_id"] = acl
        out["rule"] = rule
    out["tuple"] = tup
    return out


def rule_stats(p: list[Any]) -> list[dict[str, Any]]:
    """One entry per (ACL, rule, decision): denials first, then most tuples first; with the
    first and last tuple it decided (real 5-tuples of the flow)."""
    out = []
    for (acl, rule, dec), rs in p[RULES].items():
        out.append({"acl_id": acl, "rule": rule, "decision": DECISIONS[dec],
                    "tuples": rs[R_N], "first_seen": iso_ms(rs[R_FTS]),
                    "last_seen": iso_ms(rs[R_LTS]), "first_tuple": rs[R_FTUP],
                    "last_tuple": rs[R_LTUP]})
    order = {"denied": 0, "dropped (encryption)": 1, "allowed": 2}
    out.sort(key=lambda r: (order[r["decision"]], -r["tuples"], r["acl_id"], r["rule"]))
    return out


def first_last(p: list[Any]) -> tuple[int, int]:
    rules = p[RULES].values()
    return min(rs[R_FTS] for rs in rules), max(rs[R_LTS] for rs in rules)


def rule_evidence(agg: Aggregator, p: list[Any], dec: str, last: bool = False
                  ) -> dict[str, Any] | None:
    """The first (or last) tuple with this decision, over every rule that made it."""
    best = None
    for (acl, rule, d), rs in p[RULES].items():
        if d != dec:
            continue
        ts = rs[R_LTS] if last else rs[R_FTS]
        if best is None or (ts > best[0] if last else ts < best[0]):
            best = (ts, acl, rule, rs[R_LREC] if last else rs[R_FREC],
                    rs[R_LTUP] if last else rs[R_FTUP])
    if best is None:
        return None
    return evidence(agg, best[3], best[4], best[1], best[2])


def decision(p: list[Any]) -> str:
    kinds = {d for (_a, _r, d) in p[RULES]}
    if not kinds:
        return "unknown"
    if len(kinds) == 1:
        return DECISIONS[kinds.pop()]
    return "mixed"


def flow_dict(agg: Aggregator, key: Key, p: list[Any], clock: Clock) -> dict[str, Any]:
    """A flow as the semantic JSON shows it."""
    first, last = first_last(p) if p[RULES] else (0, 0)
    vo, vi = vantage(p, VO), vantage(p, VI)
    # the sender's NIC sees what left, the receiver's what arrived: each way the larger view
    sent = (max(vo[0], vi[0]), max(vo[1], vi[1]))
    recv = (max(vo[2], vi[2]), max(vo[3], vi[3]))
    d: dict[str, Any] = {
        "src": key[0], "dst": key[1], "dport": _int(key[2]), "protocol": proto_name(key[3]),
        "decision": decision(p),
        "rules": rule_stats(p),
        "first_seen": iso_ms(first) if p[RULES] else None,
        "last_seen": iso_ms(last) if p[RULES] else None,
        "packets_sent": sent[0], "bytes_sent": sent[1],
        "packets_received": recv[0], "bytes_received": recv[1],
        "states": {"B": p[NB], "C": p[NC], "E": p[NE], "D": p[ND], "other": p[NX]},
        "connections_begun": p[NB], "denied_five_tuples": port_count(p[PD]),
        "one_way_records": {"at_sender": vo[4], "at_receiver": vi[4]},
        "answered_records": {"at_sender": vo[5], "at_receiver": vi[5]},
        "seen_at": {"sender_nic": _vantage(vo), "receiver_nic": _vantage(vi)},
        "nics": sorted(macs_of(p)),
        "timeline": [{"decision": s, "from": iso_minute(a), "until": iso_minute(b),
                      "minutes": b - a + 1} for s, a, b in timeline(p[MIN])][:20],
    }
    if key[0] == POOLED:
        d["src"] = "*"
        d["sources"] = {"count": len(p[SRCS] or ()), "capped": len(p[SRCS] or ()) >= 1000,
                        "examples": sorted(p[SRCS] or ())[:5]}
    if p[ENC]:
        d["encryption"] = dict(sorted(p[ENC].items()))
    if p[OWEV] is not None:
        d["first_one_way"] = evidence(agg, p[OWEV][1], p[OWEV][2])
    d["label"] = flow_label(key, p)
    return d


def _vantage(v: list[int] | tuple[int, ...]) -> dict[str, int]:
    return {"packets_sent": v[0], "bytes_sent": v[1], "packets_received": v[2],
            "bytes_received": v[3], "one_way_records": v[4], "answered_records": v[5],
            "packets_sent_one_way": v[6]}


def _int(s: str) -> int | str:
    try:
        return int(s)
    except ValueError:
        return s
