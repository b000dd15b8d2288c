"""Findings about traffic that flowed: one way, allowed without a reply, stopped.

A stop needs a steady flow: seen over at least 15 minutes, in at least 5 of them, and in at
least half of them or at a regular pace (a heartbeat: 10 active minutes or more, the longest
and shortest gaps no further apart than the median gap); then silence for at least 5 minutes
and for more than twice its longest earlier gap, while a NIC that logged the flow kept logging.
A flow that comes and goes at random is not "stopping". It matches an activity-log write from
2 minutes before its last active minute to 3 after.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from .flowlogs_findings_base import (
    ANSWER_EXPECTED_UDP,
    MAX_GROUPS,
    STOP_MIN_ACTIVE,
    STOP_MIN_LIFE,
    STOP_MIN_QUIET,
    Context,
    finding,
    flow_ref,
    sources_text,
    strength,
    top_acl,
    top_name,
    top_rule,
)
from .flowlogs_flows import (
    evidence,
    first_last,
    iso_minute,
    minutes,
    proto_name,
    rule_evidence,
    runs,
)
from .flowlogs_model import (
    ALLOWED,
    ANSWERED,
    DENIED,
    ENC_DROP,
    MIN,
    ONEWAY_I,
    ONEWAY_O,
    OWEV,
    POOLED,
    RULES,
    VI,
    VO,
    Key,
    is_internal,
    macs_of,
    vantage,
)
from .wording import plural

# ---- flow_one_way / flow_allowed_no_reply ----------------------------------------------------

def one_way(cx: Context, out: list[dict[str, Any]]) -> None:
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
        allow = top_rule(flows, "A")
        sev = _one_way_severity(proto, dport)
        wins = runs(mins, gap=2)
        span = ", ".join(c.span(a, b) for a, b in wins[:4]) + (", …" if len(wins) > 4 else "")
        parts = []
        if kind == "flow_one_way":
            title = (f"Nothing comes back from {target}: {plural(records, 'flow record')} one "
                     f"way from {sources_text(flows)}, {c.span(first, last)} UTC")
            parts.append(f"At the sender's NIC {plural(records, 'flow record')} (C/E) show "
                         f"{plural(packets, 'packet')} sent and none received, in "
                         f"{plural(len(mins), 'minute')} ({span} UTC); allowed out by "
                         f"{allow}.")
            parts.append(_scope(cx, dst, kind))
            action = _one_way_action(cx, dst)
        else:
            title = (f"{target} lets flows in and never answers: "
                     f"{plural(records, 'flow record')} from {sources_text(flows)}, "
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
        out.append(finding(
            kind, sev, title, " ".join(parts), ev, action, strength(records),
            window={"from": iso_minute(first), "until": iso_minute(last),
                    "minutes": len(mins),
                    "answered_until": iso_minute(before[-1]) if before else None,
                    "answered_again_from": iso_minute(after[0]) if after else None},
            rule={"name": top_name(flows, "A"), "acl_id": top_acl(flows, "A")},
            counts={"flow_records": records, "packets_sent": packets, "flows": len(flows)},
            flows=[flow_ref(k, p) for k, p in flows[:10]]))


def _one_way_severity(proto: str, dport: str) -> str:
    if proto == "6":
        return "high"
    if proto == "17" and dport not in ANSWER_EXPECTED_UDP:
        return "low"
    return "medium"


def _scope(cx: Context, dst: str, kind: str) -> str:
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


def _one_way_action(cx: Context, dst: str) -> str:
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


def _stop_of(cx: Context, key: Key, p: list[Any]) -> _Stop | None:
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


def stops(cx: Context, out: list[dict[str, Any]]) -> None:
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
        title = f"Flows from {sources_text(flows)} to {target} stopped after {when} UTC"
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
        out.append(finding(
            "flow_sudden_stop", sev, title, " ".join(parts), evid, action,
            strength(len(flows)) + 3 * matched,
            window={"last_active": iso_minute(m_last), "silent_from": iso_minute(m_last + 1),
                    "silent_minutes": end - m_last, "active_minutes": active},
            event=ev.to_json() if ev else None, events_given=cx.events_given,
            flows=[flow_ref(k, p) for k, p in flows[:10]]))


