"""TCP findings, read from the diagnosis (connection outcomes), not from raw frame flags.

A SYN sent again is part of a connection attempt, not loss; a scan's hundreds of refused
ports are one scan, not hundreds of refusals; every finding names the hosts it is about.
"""

from __future__ import annotations

from typing import Any

from . import tcp_analysis as T
from .diagnosis import Connection, Diagnosis
from .findings_paths import (
    handshake_findings,
    injected_findings,
    mtu_findings,
    spread,
    stalled_findings,
)
from .findings_retx import EXPLAINED, retransmission_findings
from .wording import duration_ms, listing, plural, span_ms

Finding = dict[str, Any]


def _targets(cs: list[Connection]) -> str:
    counts: dict[str, int] = {}
    for c in cs:
        k = f"{c.flow['dst']}:{c.flow['dport']}"
        counts[k] = counts.get(k, 0) + 1
    ranked = sorted(counts, key=lambda k: -counts[k])
    if len(ranked) == 1:
        return ranked[0]
    return listing([f"{k} ({counts[k]}×)" if counts[k] > 1 else k for k in ranked], 4)


def _sources(cs: list[Connection]) -> str:
    return listing(sorted({c.flow["src"] for c in cs}), 3)


def _retries(cs: list[Connection]) -> str:
    n = sum(c.detail.get("syn_retries", 0) for c in cs)
    return f" ({plural(n, 'SYN retry')} in all)" if n else ""


def tcp_findings(doc: dict[str, Any], diag: Diagnosis, a_flag_frames: dict[int, list[int]],
                 f: Any) -> list[Finding]:
    """``f`` builds one finding (findings._f); returns the TCP findings, unranked."""
    out: list[Finding] = []
    for s in diag.scans:
        answered = s["answered"]
        out.append(f(
            "port_scan", "high",
            f"{s['kind'].capitalize()} from {s['source']}: "
            f"{plural(s['attempts'], 'connection attempt')} to {plural(s['ports'], 'port')} "
            f"on {plural(s['hosts'], 'host')}",
            f"{s['source']} tried {listing(s['targets'], 3)} within "
            f"{duration_ms(s['duration_s'] * 1000)}; outcomes: "
            + ", ".join(f"{k} {v}" for k, v in s["outcomes"].items())
            + ". Answered: " + (listing(answered, 8) if answered else "no port") + ".",
            [s["first_frame"]],
            f"Find out whether {s['source']} is an authorised scanner; if not, isolate it and "
            "review what the answered ports expose. Failures of these attempts are the scan, "
            "not an outage.", 9.9))
    _flood_findings(diag, f, out)
    unanswered = diag.by_outcome("unanswered")
    if unanswered:
        out.append(f(
            "tcp_syn_unanswered", "critical" if len(unanswered) >= 3 else "high",
            f"{plural(len(unanswered), 'TCP connection attempt')} to {_targets(unanswered)} "
            "got no answer",
            f"{_sources(unanswered)} sent SYNs{_retries(unanswered)}; neither a SYN-ACK, a RST "
            "nor an ICMP error came back (Zeek state S0).",
            [c.flow["first_frame"] for c in unanswered],
            "Something silently drops the SYN or the host is down: check NSG/firewall rules, "
            "UDR next hops and the host's state on the path to the destination port.",
            len(unanswered) / 2))
    edge = diag.by_outcome("at_capture_end")
    if edge:
        out.append(f(
            "tcp_syn_at_capture_end", "info",
            f"{plural(len(edge), 'connection attempt')} still waiting when the capture ended",
            f"SYN to {_targets(edge)} sent "
            f"{duration_ms(min(c.detail['sent_before_end_ms'] for c in edge))} before the end of "
            f"the capture (less than {duration_ms(diag.edge_ns / 1e6)}): too early to call it "
            "unanswered.", [c.flow["first_frame"] for c in edge],
            "Capture longer if this connection matters."))
    refused = diag.by_outcome("refused")
    if refused:
        out.append(f(
            "tcp_connection_refused", "high",
            f"{plural(len(refused), 'TCP connection attempt')} to {_targets(refused)} refused "
            "with RST",
            f"{_sources(refused)} got a reset in answer to the SYN{_retries(refused)}: nothing "
            "listens on that port, or a firewall rejects actively.",
            [c.flow["first_frame"] for c in refused],
            "Check that the service listens on the port (ss -ltn) and that no firewall sends "
            "resets.", len(refused) / 2))
    injected_frames = {r["frame"] for r in diag.injected_resets}
    injected_findings(diag, f, out)
    handshake_findings(diag, f, out)
    resets = [c for c in diag.by_outcome("reset")
              if not injected_frames & set(c.flow.get("evidence_frames", []))]
    if resets:
        out.append(f(
            "tcp_resets", "high" if len(resets) > 2 else "medium",
            f"{plural(len(resets), 'established TCP connection')} to {_targets(resets)} ended "
            f"by RST ({plural(doc['tcp_resets'], 'RST packet')} in all)",
            _reset_by(resets) + ": an application abort, an idle timeout on a load "
            "balancer/NAT/firewall, or a middlebox reset.",
            _reset_frames(resets, doc["tcp_reset_frames"]),
            "Look at what preceded the RST in the evidence frames; compare with idle timeouts "
            "(Azure LB/NAT default 4 min).", len(resets) / 3))
    mtu_findings(diag, f, out)
    stalled_findings(diag, f, out)
    retransmission_findings(diag, a_flag_frames, doc, f, out)
    _zero_window_findings(diag, f, out)
    _other_tcp(doc, diag, a_flag_frames, f, out)
    return out


def _flood_findings(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    for fl in diag.floods:
        n, src = fl["attempts"], fl["sources"]
        who = src[0] if fl["source_count"] == 1 else (
            f"{fl['source_count']} addresses (e.g. {' and '.join(src[:2])})")
        again = ("none sent again" if not fl["retried"] else
                 f"only {fl['retried']} of {fl['judged']} sent again")
        answered = fl["outcomes"].get("half_open", 0)
        synacks = (f" ({plural(fl['synack_retries'], 'SYN-ACK retry')})"
                   if fl["synack_retries"] else "")
        reply = (f"{fl['host']} answered {plural(answered, 'of them', 'of them')} with a "
                 f"SYN-ACK{synacks} that was never acknowledged" if answered else
                 f"{fl['host']} answered none of them")
        out.append(f(
            "tcp_syn_flood", "high",
            f"SYN flood from {who} to {fl['target']}: {plural(n, 'SYN')} from "
            f"{plural(fl['source_ports'], 'source port')} in "
            f"{duration_ms(fl['duration_s'] * 1000)}, {again}",
            f"{plural(n, 'connection attempt')} at about {fl['per_second']:,.0f} per second, "
            f"each from a new source port; a client whose SYN or SYN-ACK is lost sends its "
            f"SYN again after a second, and {again.replace('sent again', 'did')}. {reply}: "
            "half-open connections aimed at the host (a SYN flood, or a half-open scan of "
            "this port), not a SYN-ACK lost on the way back.",
            fl["frames"],
            f"Find out what {who} is (floods often forge their source: check where the "
            "packets enter); rate-limit or block it upstream (NSG, Azure DDoS Protection), and "
            f"check {fl['host']}'s SYN backlog and SYN cookies (nstat -az | grep -i -e "
            "ListenOverflows -e Syncookies).", 9.9))


def _reset_by(resets: list[Connection]) -> str:
    """'Reset by the responder (10.2.1.4) on 60 connections', and so on for each side."""
    parts = []
    for who in ("responder", "originator", "both"):
        cs = [c for c in resets if c.detail.get("reset_by") == who]
        if not cs:
            continue
        hosts = sorted({c.flow["dst"] if who == "responder" else c.flow["src"] for c in cs})
        side = ("both ends" if who == "both"
                else f"the {who} ({listing(hosts, 3)})")
        parts.append(f"{side} on {cs[0].label}" if len(resets) == 1 else
                     f"{side} on {plural(len(cs), 'connection')}")
    tail = f", e.g. {listing([c.label for c in resets], 2)}" if len(resets) > 1 else ""
    return "Reset by " + listing(parts) + tail


def _reset_frames(resets: list[Connection], frames: list[int]) -> list[int]:
    """The RSTs of several of these connections (else the capture's first RST frames)."""
    own = spread([[r[0] for r in c.facts.resets] for c in resets if c.facts])
    return own or frames


def _zero_window_findings(diag: Diagnosis, f: Any, out: list[Finding]) -> None:
    zws = diag.zero_windows
    if not zws:
        return
    hosts: dict[str, list[dict[str, Any]]] = {}
    for z in zws:
        hosts.setdefault(z["host"], []).append(z)
    n = sum(z["advertisements"] for z in zws)
    worst = zws[0]
    state = ("still shut when the capture ended" if worst["still_shut_at_end"] else "then "
             "reopened")
    out.append(f(
        "tcp_zero_window", "high" if n >= 3 else "medium",
        f"{listing(sorted(hosts), 3)} stopped reading: {plural(n, 'zero-window advertisement')}",
        (f"On {plural(len(zws), 'connection')} (e.g. {listing([z['flow'] for z in zws], 2)})"
         "; the longest: " if len(zws) > 1 else "")
        + f"{worst['host']} (port {worst['port']}) kept its receive window shut for "
        f"{duration_ms(worst['shut_ms'])} on {worst['flow']} ({state}); the sender had to "
        "wait.", spread([z["frames"] for z in zws]),
        f"Look at the receiving application on {listing(sorted(hosts), 3)} (CPU, GC pauses, "
        "blocked threads, slow disk): it does not read its socket fast enough.", n / 3))


def _other_tcp(doc: dict[str, Any], diag: Diagnosis, frames: dict[int, list[int]], f: Any,
               out: list[Finding]) -> None:
    ta = doc["tcp_analysis"]
    lost = ta["lost_segment"] + ta["ack_lost_segment"]
    if lost:
        by = diag.loss.get("explained_by") or {}
        known = {k: v["capture_gaps"] for k, v in by.items() if v["capture_gaps"]}
        why = listing([EXPLAINED[k] for k in known])
        n_known = sum(known.values())
        all_known = n_known >= lost
        note = ("" if not known else f" All of them are on the connections of {why}." if
                all_known else f" {n_known} of them are on the connections of {why}.")
        resent = diag.loss.get("unexplained", diag.loss)["retransmitted"]
        if not all_known and resent and not ta["ack_lost_segment"] and \
                ta["lost_segment"] <= resent + n_known:
            all_known, why = True, "the packet loss above"
            note += (f" There are no more gaps than retransmitted data segments ({resent}): "
                     "these are the segments lost on the path, seen from this side, not a "
                     "capture problem.")
        out.append(f(
            "capture_gaps", "info" if all_known else "low",
            f"{plural(lost, 'sign')} of segments missing from the capture"
            + (f", explained by {why}" if all_known else ""),
            f"Previous segment not captured {ta['lost_segment']}, ACKed unseen "
            f"{ta['ack_lost_segment']}"
            + ("." if all_known else ": either real loss before the capture point, the "
               "capture started mid-connection, or the capture itself dropped packets.")
            + note,
            frames.get(T.LOST_SEGMENT, []) + frames.get(T.ACK_LOST_SEGMENT, []),
            "Nothing more to do here: follow the finding that explains it." if all_known else
            "If ACKed-unseen dominates, suspect the capture (snaplen/buffer limits) rather than "
            "the network.", 0.0 if all_known else lost / 10))
    ka = ta["keep_alive"]
    if ka > 5:
        out.append(f(
            "tcp_keepalives", "info", f"{plural(ka, 'TCP keep-alive')}",
            "Idle connections kept open with keep-alives.",
            frames.get(T.KEEP_ALIVE, []), "Normal unless connections later die on idle "
            "timeouts."))
    rtts = sorted(c.flow["handshake_rtt_ms"] for c in diag.connections
                  if c.flow.get("handshake_rtt_ms"))
    if rtts:
        med = rtts[len(rtts) // 2]
        if med > 150:
            out.append(f(
                "tcp_slow_handshake", "medium",
                f"Slow TCP handshakes: median {duration_ms(med)} over "
                f"{plural(len(rtts), 'connection')}",
                f"SYN to handshake ACK took {span_ms(rtts[0], rtts[-1])}.", [],
                "Check the region pairing / route for the destinations; a handshake above "
                "150 ms is unusual inside one Azure region.", med / 100))
