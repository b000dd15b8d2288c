"""Between the frame analysis and the findings: what happened to each connection.

Frame flags say "this SYN was sent again"; the diagnosis says "this connection attempt went
unanswered after 3 tries" and keeps that retry out of the loss figures. Each TCP connection
gets one outcome, retransmissions are attributed (handshake retries belong to the attempt,
only data segments speak of loss, per direction and per flow), and the patterns no single
frame shows are recognised: scans, MTU black holes, resets that do not come from the peer,
zero windows with the host that advertised them and how long they stayed shut.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .analyzer import Analyzer
from .facts import FlowFacts
from .flows import (
    F_DIAG,
    F_DSEG0,
    F_FIRST_TS,
    F_PAY0,
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
    scan_flows: set[int] = field(default_factory=set)  # ids of connections in a scan
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
            "scans": self.scans,
            "mtu_blackholes": self.mtu_blackholes,
            "injected_resets": self.injected_resets,
            "zero_windows": self.zero_windows,
        }


def _before(a: int, b: int) -> bool:
    """Sequence number a is before b (mod 2**32)."""
    return a != b and ((b - a) & M32) < HALF


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
            if peer_silent or _before(conv[1 - d][4], facts.last_retx_end[d]):
                detail.update(stalled_direction="orig" if d == o else "resp",
                              retransmissions=facts.last_retx_repeats[d],
                              segment_bytes=facts.last_retx_len[d], peer_silent=peer_silent)
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
    _scans(diag)
    _mtu(diag, tcp, convs, by_flow)
    _explained_loss(diag, tcp)
    _resets(diag)
    _zero_windows(diag, tcp, convs, end_ts)
    return diag


def _loss(tcp: list[list[Any]], conns: list[Connection],
          skip: dict[int, str] | None = None) -> dict[str, Any]:
    """Data retransmissions over data segments, per direction (host to host) and per flow;
    connections whose id is in ``skip`` are left out."""
    dirs: dict[tuple[str, str], list[int]] = {}
    flows = []
    total = [0, 0, 0]
    counted = hit = 0
    for rec, c in zip(tcp, conns, strict=True):
        if skip and id(c) in skip:
            continue
        counted += 1
        f = c.facts
        if f is None:  # most connections: data segments, nothing resent
            for d in (0, 1):
                seg = rec[F_DSEG0 + d]
                if seg:
                    key = c.ends if d == 0 else (c.ends[1], c.ends[0])
                    row = dirs.get(key)
                    if row is None:
                        row = dirs[key] = [0, 0, 0]
                    row[0] += seg
                    total[0] += seg
            continue
        hit += any(f.data_retx)
        for d in (0, 1):
            seg = rec[F_DSEG0 + d]
            if not seg:
                continue
            retx = f.data_retx[d]
            spur = f.spurious_retx[d]
            src, dst = c.ends[d], c.ends[1 - d]
            row = dirs.setdefault((src, dst), [0, 0, 0])
            row[0] += seg
            row[1] += retx
            row[2] += spur
            total[0] += seg
            total[1] += retx
            total[2] += spur
            if retx:
                sp, dp = (rec[2], rec[3]) if d == 0 else (rec[3], rec[2])
                flows.append({"flow": f"{src}:{sp} -> {dst}:{dp}", "data_segments": seg,
                              "retransmitted": retx, "spurious": spur,
                              "rate": round(retx / seg, 4),
                              "frames": list(f.retx_frames[d])})
    flows.sort(key=lambda x: (-x["retransmitted"], x["flow"]))
    return {
        "connections": counted, "connections_with_retransmissions": hit,
        "data_segments": total[0], "retransmitted": total[1], "spurious": total[2],
        "rate": round(total[1] / total[0], 4) if total[0] else 0.0,
        "by_direction": [
            {"from": s, "to": d, "data_segments": v[0], "retransmitted": v[1], "spurious": v[2],
             "rate": round(v[1] / v[0], 4)}
            for (s, d), v in sorted(dirs.items(), key=lambda kv: -kv[1][1]) if v[0]
        ][:20],
        "by_flow": flows[:20],
    }


def explanation(c: Connection) -> str | None:
    """The diagnosis that accounts for a connection's retransmissions, if one does."""
    if c.detail.get("mtu_blackhole"):
        return "mtu_blackhole"
    return "stalled" if c.outcome == "stalled" else None


def _explained_loss(diag: Diagnosis, tcp: list[list[Any]]) -> None:
    """Split the loss figures: retransmissions that a diagnosis (MTU black hole, stall)
    explains, and the rest, which alone may be reported as loss. One definition throughout:
    data segments retransmitted over data segments sent (handshake retries excluded)."""
    skip = {id(c): k for c in diag.connections if (k := explanation(c)) is not None}
    by: dict[str, dict[str, int]] = {}
    for rec, c in zip(tcp, diag.connections, strict=True):
        kind = skip.get(id(c))
        if kind is None:
            continue
        row = by.setdefault(kind, {"connections": 0, "data_segments": 0, "retransmitted": 0,
                                   "capture_gaps": 0})
        ta = c.flow.get("tcp_analysis") or {}
        row["connections"] += 1
        row["data_segments"] += rec[F_DSEG0] + rec[F_DSEG0 + 1]
        row["retransmitted"] += sum(c.facts.data_retx) if c.facts else 0
        row["capture_gaps"] += ta.get("lost_segment", 0) + ta.get("ack_lost_segment", 0)
    diag.loss = _loss(tcp, diag.connections)
    diag.loss["explained_by"] = by
    diag.loss["unexplained"] = _loss(tcp, diag.connections, skip) if skip else {
        k: v for k, v in diag.loss.items() if k != "explained_by"}


def _scans(diag: Diagnosis) -> None:
    """One source trying many ports of a host (or one port on many hosts), mostly failing."""
    by_src: dict[str, list[Connection]] = {}
    for c in diag.connections:
        if c.outcome != "midstream":
            by_src.setdefault(c.flow["src"], []).append(c)
    for src, cs in by_src.items():
        if sum(c.outcome in FAILED for c in cs) < SCAN_FAILED_SHARE * len(cs):
            continue  # checked first: it is the cheap test
        ports: dict[str, set[int]] = {}
        hosts: dict[int, set[str]] = {}
        for c in cs:
            ports.setdefault(c.flow["dst"], set()).add(c.flow["dport"])
            hosts.setdefault(c.flow["dport"], set()).add(c.flow["dst"])
        wide = max(len(p) for p in ports.values())
        sweep = max(len(h) for h in hosts.values())
        if wide < SCAN_MIN_PORTS and sweep < SCAN_MIN_HOSTS:
            continue
        retried = sum(1 for c in cs if c.detail.get("syn_retries"))
        if wide < SCAN_MIN_PORTS and retried > SCAN_RETRIED_SHARE * len(cs):
            continue  # a client's kernel retrying many blocked servers, not a sweep
        answered = sorted({(c.flow["dst"], c.flow["dport"]) for c in cs
                           if c.outcome not in ("unanswered", "refused", "unreachable",
                                                "abandoned", "at_capture_end")})
        kinds: dict[str, int] = {}
        for c in cs:
            kinds[c.outcome] = kinds.get(c.outcome, 0) + 1
        targets = sorted(ports, key=lambda h: -len(ports[h]))
        diag.scans.append({
            "source": src, "attempts": len(cs), "hosts": len(ports),
            "ports": len({c.flow["dport"] for c in cs}), "targets": targets[:10],
            "kind": "port scan" if wide >= SCAN_MIN_PORTS else "host sweep",
            "outcomes": dict(sorted(kinds.items())),
            "answered": [f"{h}:{p}" for h, p in answered][:20],
            "first_frame": min(c.flow["first_frame"] for c in cs),
            "duration_s": round((max(c.flow["start_ns"] for c in cs)
                                 - min(c.flow["start_ns"] for c in cs)) / 1e9, 3),
        })
        diag.scan_flows.update(id(c) for c in cs)


def _mtu(diag: Diagnosis, tcp: list[list[Any]], convs: dict[int, list[Any]],
         by_flow: dict[tuple[str, str, int, str, int], list[Any]]) -> None:
    """Full-size segments resent and never acknowledged while smaller ones got through."""
    for rec, c in zip(tcp, diag.connections, strict=True):
        f, conv = c.facts, convs.get(id(rec))
        if f is None or conv is None or c.outcome in FAILED:
            continue
        for d in (0, 1):
            size = f.last_retx_len[d]
            if f.last_retx_repeats[d] < 2 or size < MTU_MIN_SEGMENT:
                continue
            if not _before(conv[1 - d][4], f.last_retx_end[d]):
                continue  # acknowledged in the end: loss, not a black hole
            peer_segs = rec[F_DSEG0 + 1 - d]
            peer_avg = rec[F_PAY0 + 1 - d] // peer_segs if peer_segs else 0
            if not 0 < peer_avg < size:
                continue  # nothing smaller was seen getting through
            src, dst = c.ends[d], c.ends[1 - d]
            sp, dp = (rec[2], rec[3]) if d == 0 else (rec[3], rec[2])
            icmp = [v for k, v in by_flow.items() if v[4] >= 0 and {k[1], k[3]} == {src, dst}]
            if icmp:
                continue  # the router said so: path_mtu covers it
            diag.mtu_blackholes.append({
                "view": "sender", "flow": f"{src}:{sp} -> {dst}:{dp}", "sender": src,
                "receiver": dst, "segment_bytes": size, "passed_average_bytes": peer_avg,
                "retransmissions": f.last_retx_repeats[d], "frames": list(f.retx_frames[d]),
                "server_port": c.flow["dport"], "data_retransmitted": sum(f.data_retx),
            })
            c.detail["mtu_blackhole"] = True
    _mtu_receiver(diag, tcp, convs, by_flow)


def _mtu_receiver(diag: Diagnosis, tcp: list[list[Any]], convs: dict[int, list[Any]],
                  by_flow: dict[tuple[str, str, int, str, int], list[Any]]) -> None:
    """The receiver's view: the sender's later packets show data that never arrived, no
    full-size segment ever arrived, and the receiver's own small segments were acknowledged.

    A connection whose only arrived segments were large but still under the hole's size
    (a 1339-byte tail where 1460-byte segments vanish) is taken too, when at least two other
    connections on the same path (sender, receiver, server port) already show the hole."""
    held: list[tuple[Connection, dict[str, Any]]] = []
    for rec, c in zip(tcp, diag.connections, strict=True):
        conv = convs.get(id(rec))
        if conv is None or not (MTU_MIN_SEGMENT <= (conv[0][1] - conv[1][4]) & M32 < HALF
                                or MTU_MIN_SEGMENT <= (conv[1][1] - conv[0][4]) & M32 < HALF):
            continue  # the common case: neither side is missing a segment's worth
        if c.outcome in FAILED or c.outcome == "midstream" or c.detail.get("mtu_blackhole"):
            continue
        for d in (0, 1):
            sent, acked = conv[d][1], conv[1 - d][4]
            missing = (sent - acked) & M32
            if not sent or not acked or not MTU_MIN_SEGMENT <= missing < HALF:
                continue
            segs, own = rec[F_DSEG0 + d], rec[F_DSEG0 + 1 - d]
            large = bool(segs) and rec[F_PAY0 + d] // segs >= MTU_MIN_SEGMENT
            if not own or _before(conv[d][4], conv[1 - d][1]):
                continue  # the receiver's own (small) data must have got through
            src, dst = c.ends[d], c.ends[1 - d]
            if any(v[4] >= 0 and {k[1], k[3]} == {src, dst} for k, v in by_flow.items()):
                continue
            sp, dp = (rec[2], rec[3]) if d == 0 else (rec[3], rec[2])
            hole = {
                "view": "receiver", "flow": f"{src}:{sp} -> {dst}:{dp}", "sender": src,
                "receiver": dst, "missing_bytes": missing,
                "passed_average_bytes": rec[F_PAY0 + 1 - d] // own,
                "frames": list(c.flow.get("evidence_frames", [])),
                "server_port": c.flow["dport"],
            }
            if large:
                held.append((c, hole))  # full-size segments arrived: loss, unless the path
                continue                # shows the hole on other connections (below)
            diag.mtu_blackholes.append(hole)
            c.detail["mtu_blackhole"] = True
            break
    paths: dict[tuple[str, str, int], int] = {}
    for m in diag.mtu_blackholes:
        if m["view"] == "receiver":
            key = (m["sender"], m["receiver"], m["server_port"])
            paths[key] = paths.get(key, 0) + 1
    for c, hole in held:
        if paths.get((hole["sender"], hole["receiver"], hole["server_port"]), 0) >= 2 and \
                not c.detail.get("mtu_blackhole"):
            diag.mtu_blackholes.append(hole)
            c.detail["mtu_blackhole"] = True


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
