"""Between the frame analysis and the findings: what happened to each connection.

Frame flags say "this SYN was sent again"; the diagnosis says "this connection attempt went
unanswered after 3 tries" and keeps that retry out of the loss figures. Each TCP connection
gets one outcome, retransmissions are attributed (handshake retries belong to the attempt,
only data segments speak of loss, per direction and per flow), and the patterns no single
frame shows are recognised: scans, MTU black holes, resets that do not come from the peer,
zero windows with the host that advertised them and how long they stayed shut.
"""

from __future__ import annotations

from typing import Any

from .analyzer import Analyzer
from .diagnosis_loss import explained_loss
from .diagnosis_model import EDGE_NS, Connection, Diagnosis, before
from .diagnosis_patterns import floods, mtu, scans
from .facts import FlowFacts
from .flows import (
    F_DIAG,
    F_FIRST_TS,
    F_MAXLEN0,
    F_MAXSEQ0,
    F_PKTS0,
    F_PROTO,
    F_SEEN0,
    F_SEEN1,
    S_ACK,
    S_DATA,
    S_FIN,
    S_RST,
    S_SYN,
    S_SYNACK,
    flow_brief,
    originator,
    split_addrs,
)
from .vantage import find_vantage

__all__ = ["Connection", "Diagnosis", "diagnose"]


def _convs(a: Analyzer) -> dict[int, list[Any]]:
    """id(flow record) -> its conversation's state lists [dir0, dir1, ...] (latest only)."""
    out: dict[int, list[Any]] = {}
    for conv, d, _fwd, _rev, flow in a.tcp_convs.values():
        if d == 0:
            out[id(flow)] = conv
    return out


def _outcome(rec: list[Any], fd: dict[str, Any], o: int, facts: FlowFacts | None,
             conv: list[Any] | None, icmp_hit: list[Any] | None, end_ts: int, edge: int,
             detail: dict[str, Any]) -> str:
    so, sr = (rec[F_SEEN0], rec[F_SEEN1]) if o == 0 else (rec[F_SEEN1], rec[F_SEEN0])
    if facts is not None and conv is not None and not (so | sr) & S_RST:
        for d in (0, 1):
            if facts.last_retx_repeats[d] < 2 or facts.data_retx[d] <= facts.spurious_retx[d]:
                continue
            peer_silent = not rec[F_PKTS0 + 2 * (1 - d)]
            if peer_silent or before(conv[1 - d][4], facts.last_retx_end[d]):
                detail.update(stalled_direction="orig" if d == o else "resp",
                              retransmissions=facts.last_retx_repeats[d],
                              segment_bytes=facts.last_retx_len[d], peer_silent=peer_silent,
                              # no segment that size got through before it: it may be the size
                              first_of_its_size=rec[F_MAXLEN0 + d] == facts.last_retx_len[d]
                              and rec[F_MAXSEQ0 + d] == facts.last_retx_seq[d])
                return "stalled"
    if not so & S_SYN:
        return "synack_only" if sr & S_SYNACK and not so else "midstream"
    if facts is not None and facts.syn_retx[o]:
        detail["syn_retries"] = facts.syn_retx[o]
    if not sr & S_SYNACK:
        if sr & S_RST:
            return "refused"
        if icmp_hit is not None:
            detail.update(icmp_from=icmp_hit[0], icmp=icmp_hit[1], icmp_frame=icmp_hit[2])
            return "unreachable"
        if so & S_RST:
            return "abandoned"
        if not sr and end_ts - rec[F_FIRST_TS] < edge:
            detail["sent_before_end_ms"] = round((end_ts - rec[F_FIRST_TS]) / 1e6, 3)
            return "at_capture_end"
        return "unanswered"
    if not so & (S_ACK | S_DATA | S_FIN | S_RST) and not fd.get("handshake_rtt_ms"):
        return "half_open"
    if (so | sr) & S_RST:
        detail["reset_by"] = ("both" if so & S_RST and sr & S_RST
                              else "originator" if so & S_RST else "responder")
        return "reset"
    if so & S_FIN and sr & S_FIN:
        return "closed"
    return "established"


def diagnose(a: Analyzer) -> Diagnosis:
    """Outcomes, attributed retransmissions and cross-flow patterns for one capture."""
    convs = _convs(a)
    end_ts = a.last_ts
    tcp = [r for r in a.flows if r[F_PROTO] == 6]
    rtts = [r[19] - r[17] for r in tcp if r[17] and r[19] and r[19] > r[17]]
    edge = max(EDGE_NS, max(rtts) if rtts else 0)
    by_flow = a.icmp.by_flow
    conns: list[Connection] = []
    retries = {"syn": 0, "syn_ack": 0, "fin": 0}
    names: dict[bytes, tuple[str, str]] = {}  # address rendering is the costly part
    for rec in tcp:
        ends = names.get(rec[1])
        if ends is None:
            ends = names[rec[1]] = split_addrs(rec[1])
        o = originator(rec[F_SEEN0], rec[F_SEEN1])
        fd = flow_brief(rec, ends, o)
        facts = rec[F_DIAG]
        if facts is not None:
            retries["syn"] += sum(facts.syn_retx)
            retries["syn_ack"] += sum(facts.synack_retx)
            retries["fin"] += sum(facts.fin_retx)
        icmp_hit = by_flow.get(("tcp", fd["src"], fd["sport"], fd["dst"], fd["dport"])) \
            if by_flow else None
        detail: dict[str, Any] = {}
        outcome = _outcome(rec, fd, o, facts, convs.get(id(rec)), icmp_hit, end_ts, edge, detail)
        conns.append(Connection(fd, outcome, o, facts, ends, detail))
    diag = Diagnosis(conns, edge, [], {}, [], [], [], retries)
    diag.vantage = find_vantage([(rec, c.o, c.ends) for rec, c in zip(tcp, conns, strict=True)])
    scans(diag)
    floods(diag, end_ts)
    mtu(diag, tcp, convs, by_flow)
    explained_loss(diag, tcp)
    _resets(diag)
    _zero_windows(diag, tcp, convs, end_ts)
    return diag


def _resets(diag: Diagnosis) -> None:
    """RSTs whose TTL (or IP ID) does not fit the side they claim to come from."""
    for c in diag.connections:
        f = c.facts
        if f is None:
            continue
        for frame, d, ttl, ipid, _ts, ref_ttl, ref_id, since in f.resets:
            if ref_ttl < 0:
                continue  # nothing else came from that side: nothing to compare with
            if ttl == ref_ttl:
                continue  # an IP ID out of sequence alone is normal for a kernel's RST
            why = [f"TTL {ttl} where that side's packets arrive with {ref_ttl}"]
            if ipid >= 0 and ref_id > 0 and since >= 0:
                ahead = (ipid - ref_id) & 0xFFFF
                if ahead == 0 or ahead > 64 * since + 64:
                    why.append(f"IP ID {ipid} out of that side's sequence (it was at {ref_id})")
            claimed = c.flow["src"] if d == c.o else c.flow["dst"]
            diag.injected_resets.append({
                "frame": frame, "flow": c.label, "claims_to_be_from": claimed,
                "other_end": c.flow["dst"] if claimed == c.flow["src"] else c.flow["src"],
                "server_port": c.flow["dport"],
                "why": "; ".join(why), "ttl": ttl, "expected_ttl": ref_ttl,
            })


def _zero_windows(diag: Diagnosis, tcp: list[list[Any]], convs: dict[int, list[Any]],
                  end_ts: int) -> None:
    for rec, c in zip(tcp, diag.connections, strict=True):
        f = c.facts
        if f is None:
            continue
        for d in (0, 1):
            if not f.zw_count[d]:
                continue
            conv = convs.get(id(rec))
            still = conv is not None and conv[d][6] == 0
            until = f.zw_reopen_ts[d] or (end_ts if still else f.zw_last_ts[d])
            sp = rec[2] if d == 0 else rec[3]
            diag.zero_windows.append({
                "host": c.ends[d], "port": sp, "flow": c.label,
                "advertisements": f.zw_count[d], "frames": list(f.zw_frames[d]),
                "shut_ms": round((until - f.zw_first_ts[d]) / 1e6, 3),
                "reopened": bool(f.zw_reopen_ts[d]) or not still,
                "still_shut_at_end": still,
            })
    diag.zero_windows.sort(key=lambda z: -z["shut_ms"])
