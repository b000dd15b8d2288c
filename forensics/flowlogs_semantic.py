"""The flow-log semantic JSON (``kind: vnet_flow_logs``, ``schema_version`` 1).

What an investigation reads and an RCA cites: the question asked (``query``), what was read
(``inputs``, ``nics``, ``blobs``), the deciding rules (``rules``), the flows with their
decisions and windows (``flows``, problem flows first, at most 200), the activity-log writes
given (``events``) and the ranked ``findings``.
"""

from __future__ import annotations

import heapq
from typing import Any

from .flowlogs_agg import Aggregator
from .flowlogs_events import Event
from .flowlogs_findings import build_findings
from .flowlogs_flows import DECISIONS, Clock, flow_dict, iso_minute, iso_ms, minutes
from .flowlogs_model import (
    ND,
    POOLED,
    R_FTS,
    R_LTS,
    R_N,
    RULES,
    VI,
    VO,
    Key,
    is_internal,
    vantage,
)

SCHEMA_VERSION = 1
MAX_FLOWS = 200
MAX_BLOBS = 500
MAX_RULES = 100
MAX_WARNINGS = 50


def _flow_rank(item: tuple[Key, list[Any]]) -> tuple[int, int]:
    """Denied or dropped flows between private addresses first, then one-way flows, then
    denials of Internet sources (mostly scanners), then the busiest."""
    key, p = item
    problem = 0
    if p[ND] or any(d == "X" for (_a, _r, d) in p[RULES]):
        problem = 2 if key[0] == POOLED or not is_internal(key[0]) else 4
    if vantage(p, VO)[4] or vantage(p, VI)[4]:
        problem = max(problem, 3)
    return problem, sum(rs[R_N] for rs in p[RULES].values())


def _nics(agg: Aggregator, clock: Clock) -> list[dict[str, Any]]:
    out = []
    blobs_per: dict[str, int] = {}
    for b in agg.blobs:
        for mac in b.macs:
            blobs_per[mac] = blobs_per.get(mac, 0) + 1
    for mac, cov in sorted(agg.coverage.items()):
        logged = minutes(cov, 1)
        empty = minutes(cov, 2)
        out.append({
            "mac": mac, "addresses": sorted(agg.nic_ips.get(mac, ())),
            "first_minute": iso_minute(logged[0]) if logged else None,
            "last_minute": iso_minute(logged[-1]) if logged else None,
            "minutes_with_records": len(logged), "empty_records": len(empty),
            "minutes_without_record": logged[-1] - logged[0] + 1 - len(logged) if logged else 0,
            "blobs": blobs_per.get(mac, 0),
        })
    return out


def _rules(agg: Aggregator) -> list[dict[str, Any]]:
    table: dict[tuple[str, str, str], list[Any]] = {}
    for p in agg.flows.values():
        for rk, rs in p[RULES].items():
            t = table.get(rk)
            if t is None:
                table[rk] = [rs[R_N], 1, rs[R_FTS], rs[R_LTS]]
            else:
                t[0] += rs[R_N]
                t[1] += 1
                t[2] = min(t[2], rs[R_FTS])
                t[3] = max(t[3], rs[R_LTS])
    ranked = sorted(table.items(), key=lambda kv: (-kv[1][0], kv[0]))[:MAX_RULES]
    return [{"acl_id": acl, "rule": rule, "decision": DECISIONS[d], "flow_records": n,
             "flows": nf, "first_seen": iso_ms(a), "last_seen": iso_ms(b)}
            for (acl, rule, d), (n, nf, a, b) in ranked]


def _warnings(agg: Aggregator) -> list[str]:
    out = [f"{b.name}: {w}" for b in agg.blobs for w in b.warnings]
    if agg.counts["duplicate_records"]:
        out.append(f"{agg.counts['duplicate_records']:,} duplicate records (the same NIC and "
                   "minute twice: a blob given twice?) were read once")
    if agg.counts["overflow_tuples"]:
        out.append(f"more than {len(agg.flows) - 1:,} flows: "
                   f"{agg.counts['overflow_tuples']:,} records of later new flows were pooled "
                   "by port (source and destination *)")
    return out[:MAX_WARNINGS] + ([f"… and {len(out) - MAX_WARNINGS} more"]
                                 if len(out) > MAX_WARNINGS else [])


def build_document(agg: Aggregator, query: dict[str, Any], paths: list[str],
                   events: list[Event] | None, events_file: str | None) -> dict[str, Any]:
    first_ms, last_ms = agg.time_span()
    clock = Clock(first_ms, last_ms)
    findings = build_findings(agg, events, query, clock)
    top = heapq.nlargest(MAX_FLOWS, agg.flows.items(), key=_flow_rank)
    counts = agg.counts
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "vnet_flow_logs",
        "query": query,
        "inputs": {
            "paths": paths,
            "blobs": len(agg.blobs),
            "blobs_read": sum(1 for b in agg.blobs if b.status == "ok"),
            "blobs_partial": sum(1 for b in agg.blobs if b.status == "partial"),
            "blobs_damaged": sum(1 for b in agg.blobs if b.status in ("damaged",
                                                                      "unreadable")),
            "files_skipped": sum(1 for b in agg.blobs if b.status == "skipped"),
            "bytes": sum(b.size for b in agg.blobs),
            **counts,
            "flows": len(agg.flows),
            "first_tuple": iso_ms(first_ms) if first_ms is not None else None,
            "last_tuple": iso_ms(last_ms) if last_ms is not None else None,
            "flow_logs": [{"id": fid, "guid": fl["guid"], "targets": sorted(fl["targets"])}
                          for fid, fl in sorted(agg.flow_logs.items())],
            "warnings": _warnings(agg),
        },
        "nics": _nics(agg, clock),
        "rules": _rules(agg),
        "flows": [flow_dict(agg, k, p, clock) for k, p in top],
        "flows_total": len(agg.flows),
        "events": {"given": events is not None, "file": events_file,
                   "count": len(events or []),
                   "items": [e.to_json() for e in (events or [])[:100]]},
        "blobs": [b.summary() for b in agg.blobs[:MAX_BLOBS]],
        "findings": findings,
    }
