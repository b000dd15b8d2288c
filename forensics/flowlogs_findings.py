"""Rank what the flow logs say into findings, as the pcap engine does.

Each finding has a stable ``id``, a severity and score, a title and detail that name the
flows, the deciding rule and the time window, one next step, and evidence: the blob, the
record's time, the minute and the tuple itself, so an RCA can cite the record. Findings that
concern a rule or a window also carry them as fields (``rule``, ``window``, ``flows``,
``events``) for a program to read.

Time tolerances (minutes, from the minute of the tuple to the minute of the activity-log
write): a denial window starts at a write from 3 minutes before its first denial to 1 after,
and ends at one from 1 before its last denial to 3 after; a flow's stop matches a write from 2
minutes before its last active minute to 3 after. A stop needs a steady flow: seen over at
least 15 minutes, in at least 5 of them, and in at least half of them or at a regular pace (a
heartbeat: 10 active minutes or more, the longest and shortest gaps no further apart than the
median gap); then silence for at least 5
minutes and for more than twice its longest earlier gap, while a NIC that logged the flow
kept logging. A flow that comes and goes at random is not "stopping".
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .flowlogs_agg import Aggregator
from .flowlogs_events import Event, near
from .flowlogs_flows import (
    Clock,
    evidence,
    first_last,
    flow_label,
    iso_minute,
    minutes,
    proto_name,
    rule_evidence,
    runs,
    source_label,
    timeline,
)
from .flowlogs_model import (
    ALLOWED,
    ANSWERED,
    DENIED,
    ENC,
    ENC_DROP,
    MIN,
    ONEWAY_I,
    ONEWAY_O,
    OWEV,
    PD,
    POOLED,
    R_FTS,
    R_FTUP,
    R_LREC,
    R_LTS,
    R_LTUP,
    R_N,
    RULES,
    VI,
    VO,
    Key,
    MinuteSet,
    is_internal,
    macs_of,
    port_count,
    vantage,
)
from .wording import listing, plural

SEVERITY_SCORE = {"critical": 90, "high": 70, "medium": 50, "low": 30, "info": 10}  # as pcap
MAX_EVIDENCE = 10
MAX_GROUPS = 3                # findings of one id about different destinations, largest first
STOP_MIN_ACTIVE = 5
STOP_MIN_QUIET = 5
STOP_MIN_LIFE = 15
ANSWER_EXPECTED_UDP = {"53", "67", "88", "123", "161", "389", "500", "1812", "3478", "4500"}


def _f(fid: str, severity: str, title: str, detail: str,
       ev: Sequence[dict[str, Any] | None], action: str, bonus: float = 0.0,
       **facts: Any) -> dict[str, Any]:
    out = {"id": fid, "severity": severity,
           "score": round(SEVERITY_SCORE[severity] + min(max(bonus, 0.0), 9.9), 1),
           "title": title, "detail": detail, "next_step": action,
           "evidence": [e for e in ev if e][:MAX_EVIDENCE]}
    out.update(facts)
    return out


def _strength(n: int) -> float:
    return 2 * math.log10(1 + n)


class _Context:
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


def _union(flows: list[tuple[Key, list[Any]]]) -> MinuteSet:
    u = MinuteSet()
    for _key, p in flows:
        u.merge(p[MIN])
    return u


def _targets(keys: list[Key]) -> str:
    return listing(sorted({f"{k[1]}:{k[2]}/{proto_name(k[3])}" for k in keys}), 3)


def _sources(flows: list[tuple[Key, list[Any]]]) -> str:
    return listing(sorted({source_label(k, p) for k, p in flows}), 3)


# ---- flow_denied ---------------------------------------------------------------------------

def _denied(cx: _Context, out: list[dict[str, Any]]) -> None:
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
        tl = timeline(_union(flows))
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
        title = (f"{rule} denied {_sources(flows)} → {_targets([k for k, _p in flows])}, "
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
        ev = [rule_evidence(cx.agg, _only(p, acl, rule), "D") for _k, p in flows[:3]]
        ev.append(evidence(cx.agg, max(members, key=lambda m: m[2][R_LTS])[2][R_LREC],
                           max(members, key=lambda m: m[2][R_LTS])[2][R_LTUP], acl, rule))
        bonus = _strength(tuples) + 2 * bool(start_ev or end_ev) + 1 * ongoing
        out.append(_f(
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
            flows=[_flow_ref(k, p) for k, p in flows[:10]],
            events={"start": start_ev.to_json() if start_ev else None,
                    "end": end_ev.to_json() if end_ev else None}))


def _only(p: list[Any], acl: str, rule: str) -> list[Any]:
    """A view of a flow with only one rule's denials (for its evidence)."""
    q = list(p)
    q[RULES] = {k: v for k, v in p[RULES].items() if k == (acl, rule, "D")}
    return q


def _flow_ref(k: Key, p: list[Any]) -> dict[str, Any]:
    return {"src": k[0], "dst": k[1], "dport": int(k[2]) if k[2].isdigit() else k[2],
            "protocol": proto_name(k[3]), "label": flow_label(k, p)}


# ---- flow_one_way / flow_allowed_no_reply ----------------------------------------------------

def _one_way(cx: _Context, out: list[dict[str, Any]]) -> None:
    quiet = ANSWERED | DENIED | ENC_DROP
    groups: dict[tuple[str, str, str, str], list[tuple[Key, list[Any], list[int]]]] = \
        defaultdict(list)
    for key, p in cx.agg.flows.items():
        vo, vi = vantage(p, VO), vantage(p, VI)
        if not vo[4] and not vi[4]:
            continue
        never = not vo[5] and not vi[5]
        kind, mins = None, []
        if vi[4]:
            mins = minutes(p[MIN], ONEWAY_I, quiet)
            if len(mins) >= 2 or (mins and never):
                kind = "flow_allowed_no_reply"
        if kind is None and vo[4]:
            mins = minutes(p[MIN], ONEWAY_O, quiet)
            if len(mins) >= 2 or (mins and never):
                kind = "flow_one_way"
        if kind:
            groups[(kind, key[1], key[2], key[3])].append((key, p, mins))
    per_kind: dict[str, int] = defaultdict(int)
    for (kind, dst, dport, proto), members in sorted(
            groups.items(), key=lambda kv: -sum(len(m[2]) for m in kv[1])):
        per_kind[kind] += 1
        if per_kind[kind] > MAX_GROUPS:
            continue
        at = VI if kind == "flow_allowed_no_reply" else VO
        records = sum(vantage(p, at)[4] for _k, p, _m in members)
        packets = sum(vantage(p, at)[6] for _k, p, _m in members)
        mins = sorted({m for _k, _p, ms in members for m in ms})
        first, last = mins[0], mins[-1]
        answered = sorted({m for _k, p, _ms in members for m in minutes(p[MIN], ANSWERED)})
        before = [m for m in answered if m < first]
        after = [m for m in answered if m > last]
        flows = [(k, p) for k, p, _m in members]
        c = cx.clock
        target = f"{dst}:{dport}/{proto_name(proto)}"
        allow = _top_rule(flows, "A")
        sev = _one_way_severity(proto, dport)
        wins = runs(mins, gap=2)
        span = ", ".join(c.span(a, b) for a, b in wins[:4]) + (", …" if len(wins) > 4 else "")
        parts = []
        if kind == "flow_one_way":
            title = (f"Nothing comes back from {target}: {plural(records, 'flow record')} one "
                     f"way from {_sources(flows)}, {c.span(first, last)} UTC")
            parts.append(f"At the sender's NIC {plural(records, 'flow record')} (C/E) show "
                         f"{plural(packets, 'packet')} sent and none received, in "
                         f"{plural(len(mins), 'minute')} ({span} UTC); allowed out by "
                         f"{allow}.")
            parts.append(_scope(cx, dst, kind))
            action = _one_way_action(cx, dst)
        else:
            title = (f"{target} lets flows in and never answers: "
                     f"{plural(records, 'flow record')} from {_sources(flows)}, "
                     f"{c.span(first, last)} UTC")
            parts.append(f"At the receiver's NIC {plural(records, 'flow record')} (C/E) show "
                         f"{plural(packets, 'packet')} arriving, allowed by {allow}, and none "
                         f"sent back, in {plural(len(mins), 'minute')} ({span} UTC).")
            parts.append("The NSG let the packets in and the VM did not answer: nothing "
                         "listens (a TCP port without a listener would answer with a reset), "
                         "its own firewall drops them, or it is hung.")
            action = (f"On {dst}: check that the service listens on {dport} (ss -ltnp), the "
                      "OS firewall (iptables/nftables, Windows Firewall) and the VM's health; "
                      "a capture on it shows what arrives.")
        if before:
            parts.append(f"Answered until {c.minute(before[-1])}.")
        if after:
            parts.append(f"Answered again from {c.minute(after[0])}.")
        if proto == "17" and dport not in ANSWER_EXPECTED_UDP:
            parts.append("UDP to this port may be one way by design (syslog, telemetry).")
        ev = [evidence(cx.agg, p[OWEV][1], p[OWEV][2]) for _k, p in flows[:4]
              if p[OWEV] is not None]
        out.append(_f(
            kind, sev, title, " ".join(parts), ev, action, _strength(records),
            window={"from": iso_minute(first), "until": iso_minute(last),
                    "minutes": len(mins),
                    "answered_until": iso_minute(before[-1]) if before else None,
                    "answered_again_from": iso_minute(after[0]) if after else None},
            rule={"name": _top_name(flows, "A"), "acl_id": _top_acl(flows, "A")},
            counts={"flow_records": records, "packets_sent": packets, "flows": len(flows)},
            flows=[_flow_ref(k, p) for k, p in flows[:10]]))


def _one_way_severity(proto: str, dport: str) -> str:
    if proto == "6":
        return "high"
    if proto == "17" and dport not in ANSWER_EXPECTED_UDP:
        return "low"
    return "medium"


def _top_rule(flows: list[tuple[Key, list[Any]]], dec: str) -> str:
    """The rule that decided most of these flows' records, in words."""
    top = _top(flows, dec)
    if top is None:
        return "no rule"
    acl, rule = top
    if acl == "unspecified" and rule == "unspecified":
        return "no NSG rule (aclID and rule 'unspecified')"
    return f"{rule} (aclID {acl})"


def _top(flows: list[tuple[Key, list[Any]]], dec: str) -> tuple[str, str] | None:
    n: dict[tuple[str, str], int] = defaultdict(int)
    for _k, p in flows:
        for (acl, rule, d), rs in p[RULES].items():
            if d == dec:
                n[(acl, rule)] += rs[R_N]
    return max(n.items(), key=lambda kv: (kv[1], kv[0]))[0] if n else None


def _top_name(flows: list[tuple[Key, list[Any]]], dec: str) -> str | None:
    top = _top(flows, dec)
    return top[1] if top else None


def _top_acl(flows: list[tuple[Key, list[Any]]], dec: str) -> str | None:
    top = _top(flows, dec)
    return top[0] if top else None


def _scope(cx: _Context, dst: str, kind: str) -> str:
    if dst in cx.ip_macs:
        return (f"{dst}'s NIC is in these logs and recorded none of these flows arriving: "
                "they were lost between the two NICs (a route to an appliance or firewall, a "
                "peering, a gateway).")
    if dst == POOLED or not is_internal(dst):
        return (f"{dst} is outside the VNet: the packets left the logged scope and the fault "
                "is beyond it (the remote host, a firewall or NAT on the way, the route out).")
    return (f"{dst} has no NIC in these logs: the packets left the logged scope, so the fault "
            f"is beyond it or at {dst}; these logs cannot tell whether they arrived (enable flow "
            "logs on its subnet or VNet, or capture at it).")


def _one_way_action(cx: _Context, dst: str) -> str:
    if dst in cx.ip_macs:
        return ("Compare the effective routes of both NICs (az network nic "
                "show-effective-route-table) and check any appliance or firewall between them.")
    if not is_internal(dst):
        return ("Check what lies beyond the VNet: the remote host and its allow-list of your "
                "public IP, the firewall or NAT gateway on the way out (az network nic "
                "show-effective-route-table); a capture at the sender shows whether anything "
                "(ICMP, RST) comes back.")
    return ("Get flow logs or a capture at the destination to see whether the packets arrive; "
            "check the route to it (az network watcher show-next-hop).")


# ---- flow_sudden_stop ------------------------------------------------------------------------

@dataclass
class _Stop:
    key: Key
    flow: list[Any]
    last: int        # the last active minute
    end: int         # the last minute its NICs logged
    active: int      # active minutes
    gap: int         # the longest gap before the stop


def _stop_of(cx: _Context, key: Key, p: list[Any]) -> _Stop | None:
    if not p[RULES] or not any(d == "A" for (_a, _r, d) in p[RULES]):
        return None
    first, last = first_last(p)
    if last - first < (STOP_MIN_ACTIVE - 1) * 60000:
        return None
    active = minutes(p[MIN], ALLOWED, DENIED | ENC_DROP)
    if len(active) < STOP_MIN_ACTIVE:
        return None
    m = active[-1]
    if any(x > m for x in minutes(p[MIN], DENIED | ENC_DROP)):
        return None  # it was denied afterwards: flow_denied tells that story
    end = cx.end_of(macs_of(p))
    if end is None:
        return None
    gaps = sorted(b - a for a, b in zip(active, active[1:], strict=False))
    gap = gaps[-1]
    life = m - active[0] + 1
    steady = life >= STOP_MIN_LIFE and (
        2 * len(active) >= life
        or (len(active) >= 2 * STOP_MIN_ACTIVE and gap - gaps[0] <= gaps[len(gaps) // 2]))
    if not steady or end - m < max(STOP_MIN_QUIET, 2 * gap + 1):
        return None
    return _Stop(key, p, m, end, len(active), gap)


def _stops(cx: _Context, out: list[dict[str, Any]]) -> None:
    groups: dict[tuple[str, str, str], list[_Stop]] = defaultdict(list)
    for key, p in cx.agg.flows.items():
        stop = _stop_of(cx, key, p)
        if stop is not None:
            groups[(key[1], key[2], key[3])].append(stop)
    clusters: list[tuple[tuple[str, str, str], list[_Stop]]] = []
    for gkey, members in groups.items():
        members.sort(key=lambda s: s.last)
        cur = [members[0]]
        for s in members[1:]:
            if s.last - cur[-1].last > STOP_MIN_QUIET:
                clusters.append((gkey, cur))
                cur = [s]
            else:
                cur.append(s)
        clusters.append((gkey, cur))
    ranked = []
    for gkey, members in clusters:
        m_first, m_last = members[0].last, members[-1].last
        evs = [e for e in cx.events if m_first - 2 <= e.minute <= m_last + 3]
        ranked.append((bool(evs), len(members), m_last, gkey, members, evs))
    ranked.sort(key=lambda r: (not r[0], -r[1], -r[2], r[3]))
    for matched, _n, m_last, (dst, dport, proto), members, evs in ranked[:5]:
        m_first = members[0].last
        end = max(s.end for s in members)
        flows = [(s.key, s.flow) for s in members]
        c = cx.clock
        target = f"{dst}:{dport}/{proto_name(proto)}"
        ev = cx.closest(evs, m_first + 1)
        when = c.minute(m_last) if m_first == m_last else f"{c.minute(m_first)}–{c.minute(m_last)}"
        title = f"Flows from {_sources(flows)} to {target} stopped after {when} UTC"
        active = max(s.active for s in members)
        parts = [f"{plural(len(flows), 'flow')} to {target} "
                 f"{'was' if len(flows) == 1 else 'were'} allowed in "
                 f"{plural(active, 'minute')} (at most {max(s.gap for s in members)} apart), "
                 f"the last at {when} UTC, then never again while the NIC kept logging until "
                 f"{c.minute(end)} ({plural(end - m_last, 'quiet minute')})."]
        dst_ends = [cx.cov_end[mac] for mac in cx.ip_macs.get(dst, ()) if mac in cx.cov_end]
        if dst_ends and max(dst_ends) <= m_last + 1:
            parts.append(f"{dst}'s own NIC logged nothing after {c.minute(max(dst_ends))}: the "
                         "VM stopped, restarted or lost its network.")
        if ev:
            parts.append(f"It lines up with {ev.describe()}.")
            sev = "high"
            action = ("Review that change first (az monitor activity-log list --correlation-id, "
                      "or the resource's current settings): it is the likeliest cause.")
        elif cx.events_given:
            parts.append("No activity-log write in the file lies within 2 minutes before to 3 "
                         "after: look for a change outside the file's window, the VM's state, "
                         "or the client simply stopping (a finished batch job).")
            sev = "medium"
            action = (f"Check {dst}'s state (az vm get-instance-view) and the client's "
                      "configuration; widen the activity-log window.")
        else:
            parts.append(cx.no_events_hint(m_first, m_last))
            sev = "medium"
            action = ("Fetch the activity log around the stop and run again with --events, "
                      f"and check {dst}'s state (az vm get-instance-view).")
        evid = [rule_evidence(cx.agg, p, "A", last=True) for _k, p in flows[:4]]
        out.append(_f(
            "flow_sudden_stop", sev, title, " ".join(parts), evid, action,
            _strength(len(flows)) + 3 * matched,
            window={"last_active": iso_minute(m_last), "silent_from": iso_minute(m_last + 1),
                    "silent_minutes": end - m_last, "active_minutes": active},
            event=ev.to_json() if ev else None, events_given=cx.events_given,
            flows=[_flow_ref(k, p) for k, p in flows[:10]]))


# ---- encryption, nothing seen, damaged blobs ---------------------------------------------

def _encryption(cx: _Context, out: list[dict[str, Any]]) -> None:
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
    out.append(_f(
        "flow_encryption_dropped", "high",
        f"Virtual network encryption dropped {plural(n, 'flow record')}: "
        f"{_sources(flows)} → {_targets([k for k, _p in flows])}",
        f"Encryption states {', '.join(f'{k} ×{v}' for k, v in sorted(states.items()))} "
        f"(the platform drops these packets; aclID and rule are 'unspecified'), "
        f"{c.span(mins[0], mins[-1])} UTC. NX_NOT_ACCEPTED: both ends require encryption and "
        "it failed; NX_SW_NOT_READY: the host is starting or updating (temporary); "
        "NX_NOT_SUPPORTED: the host cannot discover encryption.",
        [rule_evidence(cx.agg, p, "X") for _k, p in flows[:4]],
        "Check the VNet's encryption enforcement (DropUnencrypted vs AllowUnencrypted) and "
        "that both VMs run on sizes that support encryption; report lasting NX_NOT_SUPPORTED "
        "to Microsoft.", _strength(n),
        window={"from": iso_minute(mins[0]), "until": iso_minute(mins[-1])},
        counts={"flow_records": n, "flows": len(flows)}, encryption=dict(states),
        flows=[_flow_ref(k, p) for k, p in flows[:10]]))


def _nothing(cx: _Context, query: dict[str, Any], out: list[dict[str, Any]]) -> None:
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
    out.append(_f("no_flows_seen", sev, title, " ".join(parts), [], action,
                  2.0 if sev == "high" else 0.0,
                  query={"src": src, "dst": dst, "port": port},
                  near_misses={"src_seen": near_.src_seen, "dst_seen": near_.dst_seen,
                               "reverse": near_.reverse,
                               "other_ports": dict(sorted(near_.other_ports.items())[:20]),
                               "outside_window": near_.outside_window}))


def _span_text(cx: _Context) -> str:
    agg = cx.agg
    ends = [(min(minutes(c, 1) or [0]), max(minutes(c, 1) or [0])) for c in agg.coverage.values()
            if c]
    if not ends:
        return "no readable record time"
    a, b = min(e[0] for e in ends), max(e[1] for e in ends)
    return f"{cx.clock.span(a, b)} UTC"


def _damaged(cx: _Context, out: list[dict[str, Any]]) -> None:
    bad = [b for b in cx.agg.blobs if b.status in ("partial", "damaged", "unreadable")]
    if not bad:
        return
    skipped = [b for b in bad if b.status != "partial"]
    out.append(_f(
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
    cx = _Context(agg, events, clock)
    out: list[dict[str, Any]] = []
    _denied(cx, out)
    _encryption(cx, out)
    _one_way(cx, out)
    _stops(cx, out)
    _nothing(cx, query, out)
    _damaged(cx, out)
    if agg.counts["tuples_matched"] and not [f for f in out if f["severity"] != "info"]:
        out.append(_f(
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
