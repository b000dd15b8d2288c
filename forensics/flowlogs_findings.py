"""Rank what the flow logs say into findings, as the pcap engine does.

Each finding has a stable ``id``, a severity and score, a title and detail that name the
flows, the deciding rule and the time window, one next step, and evidence: the blob, the
record's time, the minute and the tuple itself, so an RCA can cite the record. Findings that
concern a rule or a window also carry them as fields (``rule``, ``window``, ``flows``,
``events``) for a program to read.

Time tolerances (minutes, from the minute of the tuple to the minute of the activity-log
write): a denial window starts at a write from 3 minutes before its first denial to 1 after,
and ends at one from 1 before its last denial to 3 after. The findings about traffic that
flowed (one way, no reply, stopped) are in ``flowlogs_findings_traffic``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .flowlogs_agg import Aggregator
from .flowlogs_events import Event, near
from .flowlogs_findings_base import (
    MAX_EVIDENCE,
    Context,
    finding,
    flow_ref,
    only_denials_of,
    sources_text,
    strength,
    targets_text,
    union_minutes,
)
from .flowlogs_findings_traffic import one_way, stops
from .flowlogs_flows import (
    Clock,
    evidence,
    iso_minute,
    minutes,
    rule_evidence,
    timeline,
)
from .flowlogs_model import (
    ENC,
    ENC_DROP,
    MIN,
    PD,
    POOLED,
    R_FTS,
    R_FTUP,
    R_LREC,
    R_LTS,
    R_LTUP,
    R_N,
    RULES,
    Key,
    is_internal,
    macs_of,
    port_count,
)
from .wording import plural

# ---- flow_denied ---------------------------------------------------------------------------

def _denied(cx: Context, out: list[dict[str, Any]]) -> None:
    groups: dict[tuple[str, str, bool], list[tuple[Key, list[Any], list[Any]]]] = \
        defaultdict(list)
    for key, p in cx.agg.flows.items():
        for (acl, rule, d), rs in p[RULES].items():
            if d == "D":
                internet = key[0] == POOLED or not is_internal(key[0])
                groups[(acl, rule, internet)].append((key, p, rs))
    ranked = sorted(groups.items(), key=lambda kv: (kv[0][2], -sum(r[R_N] for _k, _p, r
                                                                   in kv[1])))
    for (acl, rule, internet), members in ranked:
        flows = [(k, p) for k, p, _rs in members]
        tuples = sum(rs[R_N] for _k, _p, rs in members)
        five = sum(port_count(p[PD]) for _k, p in flows)
        tl = timeline(union_minutes(flows))
        denied_runs = [(a, b) for s, a, b in tl if s == "denied"]
        if not denied_runs:
            continue
        first, last = denied_runs[0][0], denied_runs[-1][1]
        den_minutes = sum(b - a + 1 for a, b in denied_runs)
        before = [b for s, a, b in tl if s == "allowed" and b < first]
        after = [a for s, a, b in tl if s == "allowed" and a > last]
        end = cx.end_of(set().union(*(macs_of(p) for _k, p in flows)))
        ongoing = end is None or last >= end - 1
        start_ev = cx.closest(near(cx.events, first, 3, 1), first - 0.5)
        end_ev = None if ongoing else cx.closest(near(cx.events, last, 1, 3), last + 0.5)
        ftup = min(members, key=lambda m: m[2][R_FTS])[2]
        inbound = ftup[R_FTUP].split(",")[6:7] == ["I"]
        where = "inbound at the receiver's NIC" if inbound else "outbound at the sender's NIC"
        c = cx.clock
        window = f"{c.span(first, last)} UTC"
        title = (f"{rule} denied {sources_text(flows)} → {targets_text([k for k, _p in flows])}, "
                 f"{window} ({plural(tuples, 'flow record')})")
        parts = [f"NSG rule {rule} (aclID {acl}) denied {plural(tuples, 'flow record')} "
                 f"({plural(five, 'distinct 5-tuple')}) {where}, first at "
                 f"{c.minute(first)} and last at {c.minute(last)} UTC: "
                 f"{plural(den_minutes, 'minute')} with denials in "
                 f"{plural(len(denied_runs), 'window')} "
                 f"({', '.join(c.span(a, b) for a, b in denied_runs[:4])}"
                 f"{', …' if len(denied_runs) > 4 else ''})."]
        if before:
            parts.append(f"The same flows were allowed before (last at {c.minute(before[-1])}).")
        if ongoing:
            parts.append("Still denied when the logs end"
                         + (f" ({c.minute(end)})." if end is not None else "."))
        elif after:
            parts.append(f"Allowed again from {c.minute(after[0])}: the rule no longer denies, "
                         "so a point-in-time check (IP flow verify, effective rules) now says "
                         "Allow.")
        else:
            parts.append(f"No denial after {c.minute(last)}, while the NIC kept logging until "
                         f"{c.minute(end or last)}.")
        if start_ev:
            parts.append(f"The denials began after {start_ev.describe()}.")
        if end_ev:
            parts.append(f"They ended after {end_ev.describe()}.")
        if not cx.events_given:
            parts.append(cx.no_events_hint(first, last))
        elif not start_ev and not end_ev:
            parts.append("No activity-log write lines up with the start or the end.")
        if internet:
            sev = "high" if before else "medium"
            parts.append("The sources are Internet addresses: denying unsolicited inbound "
                         "traffic is normal unless these are clients that should get in.")
            action = ("If these sources are legitimate clients, allow them (or the service tag) "
                      f"above {rule}; otherwise this is the NSG doing its job.")
        else:
            sev = "critical" if ongoing else "high"
            if ongoing:
                action = (f"Fix or remove {rule} (az network nsg rule show/update on the NSG "
                          f"whose resourceGuid is {acl}), then confirm with IP flow verify.")
            else:
                action = (f"Cite {rule} and the window {window} as the cause; find who changed "
                          "it in the activity log and guard the NSG against it (policy, IaC "
                          "review).")
        ev = [rule_evidence(cx.agg, only_denials_of(p, acl, rule), "D") for _k, p in flows[:3]]
        ev.append(evidence(cx.agg, max(members, key=lambda m: m[2][R_LTS])[2][R_LREC],
                           max(members, key=lambda m: m[2][R_LTS])[2][R_LTUP], acl, rule))
        bonus = strength(tuples) + 2 * bool(start_ev or end_ev) + 1 * ongoing
        out.append(finding(
            "flow_denied", sev, title, " ".join(parts), ev, action, bonus,
            rule={"name": rule, "acl_id": acl},
            window={"from": iso_minute(first), "until": iso_minute(last),
                    "minutes_with_denials": den_minutes, "ongoing": ongoing,
                    "allowed_before_until": iso_minute(before[-1]) if before else None,
                    "allowed_again_from": iso_minute(after[0]) if after else None,
                    "windows": [{"from": iso_minute(a), "until": iso_minute(b)}
                                for a, b in denied_runs[:20]]},
            direction="inbound" if inbound else "outbound",
            counts={"flow_records": tuples, "five_tuples": five, "flows": len(flows)},
            flows=[flow_ref(k, p) for k, p in flows[:10]],
            events={"start": start_ev.to_json() if start_ev else None,
                    "end": end_ev.to_json() if end_ev else None}))



# ---- encryption, nothing seen, damaged blobs ---------------------------------------------

def _encryption(cx: Context, out: list[dict[str, Any]]) -> None:
    flows = [(k, p) for k, p in cx.agg.flows.items()
             if any(d == "X" for (_a, _r, d) in p[RULES])]
    if not flows:
        return
    n = sum(rs[R_N] for _k, p in flows for (_a, _r, d), rs in p[RULES].items() if d == "X")
    states: dict[str, int] = defaultdict(int)
    for _k, p in flows:
        for e, c in (p[ENC] or {}).items():
            states[e] += c
    mins = sorted({m for _k, p in flows for m in minutes(p[MIN], ENC_DROP)})
    c = cx.clock
    out.append(finding(
        "flow_encryption_dropped", "high",
        f"Virtual network encryption dropped {plural(n, 'flow record')}: "
        f"{sources_text(flows)} → {targets_text([k for k, _p in flows])}",
        f"Encryption states {', '.join(f'{k} ×{v}' for k, v in sorted(states.items()))} "
        f"(the platform drops these packets; aclID and rule are 'unspecified'), "
        f"{c.span(mins[0], mins[-1])} UTC. NX_NOT_ACCEPTED: both ends require encryption and "
        "it failed; NX_SW_NOT_READY: the host is starting or updating (temporary); "
        "NX_NOT_SUPPORTED: the host cannot discover encryption.",
        [rule_evidence(cx.agg, p, "X") for _k, p in flows[:4]],
        "Check the VNet's encryption enforcement (DropUnencrypted vs AllowUnencrypted) and "
        "that both VMs run on sizes that support encryption; report lasting NX_NOT_SUPPORTED "
        "to Microsoft.", strength(n),
        window={"from": iso_minute(mins[0]), "until": iso_minute(mins[-1])},
        counts={"flow_records": n, "flows": len(flows)}, encryption=dict(states),
        flows=[flow_ref(k, p) for k, p in flows[:10]]))


def _nothing(cx: Context, query: dict[str, Any], out: list[dict[str, Any]]) -> None:
    agg = cx.agg
    if agg.counts["tuples_matched"]:
        return
    near_ = agg.near
    src, dst, port = query.get("src"), query.get("dst"), query.get("port")
    asked = (f"{src or 'any source'} → {dst or 'any destination'}"
             + (f":{port}" if port is not None else ""))
    span = _span_text(cx)
    parts = []
    sev = "medium"
    if not (src or dst or port is not None):
        title = "No flow recorded in these blobs" + (" in the time window" if
                                                      query.get("since") or query.get("until")
                                                      else "")
        parts.append(f"{plural(agg.counts['records'], 'record')} from "
                     f"{plural(len(agg.coverage), 'NIC')} ({span}) hold no flow tuple"
                     + (" in the window asked" if query.get("since") or query.get("until")
                        else "") + ".")
        action = ("Check the flow log covers the NICs and hours that matter (az network watcher "
                  "flow-log show) and that the blobs downloaded are the right ones.")
    else:
        title = f"No flow recorded for {asked}"
        parts.append(f"None of the {plural(agg.counts['tuples'], 'flow record')} in "
                     f"{plural(len(agg.blobs), 'blob')} ({plural(len(agg.coverage), 'NIC')}, "
                     f"{span}) is {asked}: the traffic never reached the logged scope.")
        if src and near_.src_seen:
            sev = "high"
            parts.append(f"{src} appears in {plural(near_.src_seen, 'other record')}: its "
                         "traffic is logged, so it never sent this flow (a different address "
                         "from DNS, a different port, or the client never tried).")
        elif dst and near_.dst_seen:
            sev = "high"
            parts.append(f"{dst} appears in {plural(near_.dst_seen, 'other record')}: its NIC "
                         "is logged and saw none of it, so the packets were dropped or routed "
                         "elsewhere before they reached it (or were never sent).")
        elif src or dst:
            parts.append("Neither address appears at all: these blobs may not cover them "
                         "(another flow log, NIC or hour).")
        if near_.other_ports:
            top = sorted(near_.other_ports.items(), key=lambda kv: -kv[1])[:4]
            parts.append(("The same addresses on other ports: " if src or dst else
                          "Destination ports in these logs: ")
                         + ", ".join(f"{p} ({n})" for p, n in top) + ".")
        if near_.reverse:
            parts.append(f"{plural(near_.reverse, 'record')} in the other direction "
                         f"({dst or '*'} → {src or '*'}).")
        if near_.outside_window:
            parts.append(f"{plural(near_.outside_window, 'matching record')} lie outside "
                         "--since/--until.")
        action = ("Check the client resolves and sends to this address and port, the route "
                  "from it (az network watcher show-next-hop), and that the flow log's target "
                  "covers both NICs for these hours.")
    out.append(finding("no_flows_seen", sev, title, " ".join(parts), [], action,
                  2.0 if sev == "high" else 0.0,
                  query={"src": src, "dst": dst, "port": port},
                  near_misses={"src_seen": near_.src_seen, "dst_seen": near_.dst_seen,
                               "reverse": near_.reverse,
                               "other_ports": dict(sorted(near_.other_ports.items())[:20]),
                               "outside_window": near_.outside_window}))


def _span_text(cx: Context) -> str:
    agg = cx.agg
    ends = [(min(minutes(c, 1) or [0]), max(minutes(c, 1) or [0])) for c in agg.coverage.values()
            if c]
    if not ends:
        return "no readable record time"
    a, b = min(e[0] for e in ends), max(e[1] for e in ends)
    return f"{cx.clock.span(a, b)} UTC"


def _damaged(cx: Context, out: list[dict[str, Any]]) -> None:
    bad = [b for b in cx.agg.blobs if b.status in ("partial", "damaged", "unreadable")]
    if not bad:
        return
    skipped = [b for b in bad if b.status != "partial"]
    out.append(finding(
        "flowlog_damaged", "medium",
        f"{plural(len(bad), 'blob')} of {len(cx.agg.blobs)} could not be read whole",
        "; ".join(f"{b.name}: {b.warnings[-1] if b.warnings else b.status}" for b in bad[:3])
        + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
        + (f" ({len(skipped)} with nothing readable)" if skipped else ""),
        [{"blob": b.name, "path": b.path, "status": b.status} for b in bad[:MAX_EVIDENCE]],
        "The analysis covers only what could be read: download those blobs again "
        "(az storage blob download) and re-run."))


def build_findings(agg: Aggregator, events: list[Event] | None, query: dict[str, Any],
                   clock: Clock) -> list[dict[str, Any]]:
    """All findings, highest score first, ranked from 1."""
    cx = Context(agg, events, clock)
    out: list[dict[str, Any]] = []
    _denied(cx, out)
    _encryption(cx, out)
    one_way(cx, out)
    stops(cx, out)
    _nothing(cx, query, out)
    _damaged(cx, out)
    if agg.counts["tuples_matched"] and not [f for f in out if f["severity"] != "info"]:
        out.append(finding(
            "no_problem_seen", "info", "No denial, one-way flow or stop in these flow logs",
            f"{plural(agg.counts['tuples_matched'], 'flow record')} in "
            f"{plural(len(agg.flows), 'flow')} ({_span_text(cx)}) were allowed and "
            "answered.", [],
            "If the symptom persists, look at the hours or NICs these blobs do not cover, or "
            "capture during the failure.", 9.9))
    out.sort(key=lambda f: (-float(f["score"]), f["id"]))
    for i, f in enumerate(out, 1):
        f["rank"] = i
    return out

