"""Patterns no single connection shows: scans and floods of connection attempts, and MTU black
holes (full-size segments that never get through while smaller ones do)."""

from __future__ import annotations

from typing import Any

from .diagnosis_loss import connection_resent
from .diagnosis_model import (
    FAILED,
    HALF,
    M32,
    MTU_MIN_SEGMENT,
    SCAN_FAILED_SHARE,
    SCAN_MIN_HOSTS,
    SCAN_MIN_PORTS,
    SCAN_RETRIED_SHARE,
    Connection,
    Diagnosis,
    before,
)
from .flows import F_DSEG0, F_MAXLEN0, F_MAXSEQ0, F_PAY0

FLOOD_OUTCOMES = ("half_open", "unanswered")
FLOOD_MIN_ATTEMPTS = 20
FLOOD_NEW_PORTS_SHARE = 0.9  # of the attempts each from a source port not used before
FLOOD_RETRY_WAIT_NS = 1_500_000_000  # a client's kernel has sent its SYN again by then
FLOOD_RETRIED_SHARE = 0.1
FLOOD_MIN_RATE = 10.0  # attempts per second: a burst


def scans(diag: Diagnosis) -> None:
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


def floods(diag: Diagnosis, end_ts: int) -> None:
    """Many half-open or unanswered attempts at one port, each from a new source port, none
    retried: a client whose SYN-ACK (or SYN) is lost sends its SYN again after a second; a
    SYN flood, or a half-open scan of the port, never does."""
    by_target: dict[tuple[str, int], list[Connection]] = {}
    for c in diag.connections:
        if c.outcome in FLOOD_OUTCOMES and id(c) not in diag.scan_flows:
            by_target.setdefault((c.flow["dst"], c.flow["dport"]), []).append(c)
    for (dst, port), cs in by_target.items():
        if len(cs) < FLOOD_MIN_ATTEMPTS:
            continue
        ports = {(c.flow["src"], c.flow["sport"]) for c in cs}
        if len(ports) < FLOOD_NEW_PORTS_SHARE * len(cs):
            continue  # the same ports again and again: a client's retries, not a flood
        old = [c for c in cs if end_ts - c.flow["start_ns"] >= FLOOD_RETRY_WAIT_NS]
        retried = sum(1 for c in old if c.detail.get("syn_retries"))
        if len(old) < FLOOD_MIN_ATTEMPTS // 2 or retried > FLOOD_RETRIED_SHARE * len(old):
            continue  # too young to tell, or retried as a real client does
        starts = sorted(c.flow["start_ns"] for c in cs)
        span = (starts[-1] - starts[0]) / 1e9
        rate = len(cs) / max(span, 0.001)
        if rate < FLOOD_MIN_RATE:
            continue
        sources: dict[str, int] = {}
        for c in cs:
            sources[c.flow["src"]] = sources.get(c.flow["src"], 0) + 1
        outcomes: dict[str, int] = {}
        for c in cs:
            outcomes[c.outcome] = outcomes.get(c.outcome, 0) + 1
        diag.floods.append({
            "target": f"{dst}:{port}", "host": dst, "port": port, "attempts": len(cs),
            "source_ports": len(ports), "sources": sorted(sources, key=lambda k: -sources[k])[:5],
            "source_count": len(sources), "duration_s": round(span, 3),
            "per_second": round(rate, 1), "retried": retried, "judged": len(old),
            "synack_retries": sum(c.facts.synack_retx[1 - c.o] for c in cs if c.facts),
            "outcomes": dict(sorted(outcomes.items())),
            "first_frame": min(c.flow["first_frame"] for c in cs),
            "frames": sorted(c.flow["first_frame"] for c in cs)[:10],
        })
        diag.scan_flows.update(id(c) for c in cs)


def mtu(diag: Diagnosis, tcp: list[list[Any]], convs: dict[int, list[Any]],
        by_flow: dict[tuple[str, str, int, str, int], list[Any]]) -> None:
    """Full-size segments resent and never acknowledged while smaller ones got through: the
    other side's segments, or this side's own before it (the stalled segment is the first
    of the largest size the connection sent, and everything before it was acknowledged)."""
    for rec, c in zip(tcp, diag.connections, strict=True):
        f, conv = c.facts, convs.get(id(rec))
        if f is None or conv is None or c.outcome in FAILED:
            continue
        for d in (0, 1):
            size = f.last_retx_len[d]
            if f.last_retx_repeats[d] < 2 or size < MTU_MIN_SEGMENT:
                continue
            if not before(conv[1 - d][4], f.last_retx_end[d]):
                continue  # acknowledged in the end: loss, not a black hole
            peer_segs = rec[F_DSEG0 + 1 - d]
            peer_avg = rec[F_PAY0 + 1 - d] // peer_segs if peer_segs else 0
            stalled_at = f.last_retx_seq[d]
            passed = (stalled_at - conv[d][10] - 1) & M32  # bytes before it, all acknowledged
            own_first = (rec[F_MAXLEN0 + d] == size and rec[F_MAXSEQ0 + d] == stalled_at
                         and conv[1 - d][4] == stalled_at and 0 < passed < HALF)
            if not 0 < peer_avg < size and not own_first:
                continue  # nothing smaller was seen getting through
            big_at, big_len = rec[F_MAXSEQ0 + d], rec[F_MAXLEN0 + d]
            if big_at != stalled_at and big_len >= size \
                    and not before(conv[1 - d][4], (big_at + big_len) & M32):
                continue  # a segment this size got through earlier: the path carries it
            src, dst = c.ends[d], c.ends[1 - d]
            sp, dp = (rec[2], rec[3]) if d == 0 else (rec[3], rec[2])
            icmp = [v for k, v in by_flow.items() if v[4] >= 0 and {k[1], k[3]} == {src, dst}]
            if icmp:
                continue  # the router said so: path_mtu covers it
            diag.mtu_blackholes.append({
                "view": "sender", "flow": f"{src}:{sp} -> {dst}:{dp}", "sender": src,
                "receiver": dst, "segment_bytes": size, "passed_average_bytes": peer_avg,
                "passed_before_bytes": passed if own_first else 0,
                "retransmissions": f.last_retx_repeats[d], "frames": list(f.retx_frames[d]),
                "server_port": c.flow["dport"],
                "data_retransmitted": connection_resent(c, diag.vantage),
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
            if not own or before(conv[d][4], conv[1 - d][1]):
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


