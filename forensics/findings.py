"""Rank what the capture says into findings: the Executive Summary is built from these.

Each finding names the symptom, how strong the evidence is, the frames to look at, and
what an on-call engineer should check next. Rules are deliberately simple and explainable.
"""

from __future__ import annotations

from typing import Any

from . import tcp_analysis as T
from .analyzer import Analyzer
from .flows import F_EVIDENCE, F_PROTO, F_SEEN0, F_SEEN1, S_DATA, S_SYN, S_SYNACK

SEVERITY_SCORE = {"critical": 90, "high": 70, "medium": 50, "low": 30, "info": 10}
MAX_EVIDENCE = 10


# engine.py's warning for a capture it could mostly not decode (a finding of its own below)
UNDECODABLE_MARK = "packets could not be decoded"


def mostly_undecodable(packets: int, undecodable: int) -> bool:
    """Half or more of the packets could not be decoded: "no problem seen" would be a lie."""
    return bool(packets) and undecodable * 2 >= packets


def _f(fid: str, severity: str, title: str, detail: str, frames: list[int],
       action: str, bonus: float = 0.0) -> dict[str, Any]:
    return {
        "id": fid,
        "severity": severity,
        "score": round(SEVERITY_SCORE[severity] + min(bonus, 9.9), 1),
        "title": title,
        "detail": detail,
        "evidence_frames": sorted(set(frames))[:MAX_EVIDENCE],
        "next_step": action,
    }


def _flow_label(d: dict[str, Any]) -> str:
    if "sport" in d and d.get("sport") is not None:
        return f"{d['src']}:{d['sport']} -> {d['dst']}:{d['dport']}"
    return f"{d['src']} -> {d['dst']}"


def _tcp_findings(doc: dict[str, Any], a: Analyzer, out: list[dict[str, Any]]) -> None:
    ta = doc["tcp_analysis"]
    states = doc["tcp_conn_states"]
    frames = a.flag_frames
    data_pkts = sum(
        (r[4] + r[6]) for r in a.flows if r[F_PROTO] == 6 and (r[F_SEEN0] | r[F_SEEN1]) & S_DATA
    )
    unanswered = [r for r in a.flows if r[F_PROTO] == 6 and r[F_SEEN0] & S_SYN
                  and not r[F_SEEN1] & (S_SYNACK | 32)]
    if unanswered:
        ev = [r[12] for r in unanswered]
        dests = sorted({_flow_label(_mini(r)).split(" -> ")[1] for r in unanswered})
        out.append(_f(
            "tcp_syn_unanswered", "critical" if len(unanswered) >= 3 else "high",
            f"{len(unanswered)} TCP connection attempt(s) got no answer",
            "SYNs were sent but neither a SYN-ACK nor a RST came back (Zeek state S0) to "
            + ", ".join(dests[:5]) + ("…" if len(dests) > 5 else ""),
            ev, "Something silently drops the SYN: check NSG/firewall rules, UDR next hops and "
            "whether the service listens, on the path to the destination port.",
            len(unanswered) / 2))
    rej = states.get("REJ", 0)
    if rej:
        ev = [r[12] for r in a.flows if r[F_PROTO] == 6 and _state(r) == "REJ"]
        out.append(_f(
            "tcp_connection_refused", "high", f"{rej} TCP connection(s) refused with RST",
            "The destination (or a device in between) answered the SYN with a reset: nothing "
            "listens on that port, or a firewall rejects actively.",
            ev, "Check that the service listens on the port (ss -ltn) and that no firewall "
            "sends resets.", rej / 2))
    mid_resets = sum(states.get(s, 0) for s in ("RSTO", "RSTR", "RSTOS0", "RSTRH"))
    if mid_resets:
        out.append(_f(
            "tcp_resets", "high" if mid_resets > 2 else "medium",
            f"{mid_resets} established TCP connection(s) ended by RST ({doc['tcp_resets']} "
            "RST packets in all)",
            "Connections were torn down abruptly instead of closing with FIN: an application "
            "abort, an idle timeout on a load balancer/NAT/firewall, or a middlebox reset.",
            doc["tcp_reset_frames"], "Look at what preceded the RST in the evidence frames; "
            "compare with idle timeouts (Azure LB/NAT default 4 min).", mid_resets / 3))
    retr = ta["retransmission"]
    if retr:
        rate = retr / data_pkts if data_pkts else 1.0
        sev = "high" if rate > 0.05 else "medium" if rate > 0.01 else "low"
        ev = frames.get(T.RETRANSMISSION, []) + frames.get(T.FAST_RETRANSMISSION, [])
        out.append(_f(
            "tcp_retransmissions", sev,
            f"{retr} TCP retransmission(s) ({rate:.1%} of data segments)" if data_pkts
            else f"{retr} TCP retransmission(s) of SYN/FIN (no data exchanged)",
            f"fast {ta['fast_retransmission']}, spurious {ta['spurious_retransmission']}, "
            f"duplicate ACKs {ta['duplicate_ack']}, out-of-order {ta['out_of_order']}: "
            "segments were lost or delayed on the path.",
            ev, "Packet loss on the path: check VM/NIC drops, throttling at the VM size's "
            "bandwidth limit, and capture both ends (--compare) to see where loss happens.",
            rate * 100))
    zw = ta["zero_window"]
    if zw:
        out.append(_f(
            "tcp_zero_window", "high" if zw >= 3 else "medium",
            f"{zw} TCP zero-window advertisement(s)",
            f"A receiver stopped reading (window full {ta['window_full']}, probes "
            f"{ta['zero_window_probe']}): the application on that host is not keeping up.",
            frames.get(T.ZERO_WINDOW, []), "Look at the receiving application (CPU, GC pauses, "
            "blocked threads, slow disk) on the host that advertised the zero window.", zw / 3))
    lost = ta["lost_segment"] + ta["ack_lost_segment"]
    if lost:
        out.append(_f(
            "capture_gaps", "low",
            f"{lost} sign(s) of segments missing from the capture",
            f"previous segment not captured {ta['lost_segment']}, ACKed unseen "
            f"{ta['ack_lost_segment']}: either real loss before the capture point, the capture "
            "started mid-connection, or the capture itself dropped packets.",
            frames.get(T.LOST_SEGMENT, []) + frames.get(T.ACK_LOST_SEGMENT, []),
            "If ACKed-unseen dominates, suspect the capture (snaplen/buffer limits) rather than "
            "the network.", lost / 10))
    ka = ta["keep_alive"]
    if ka > 5:
        out.append(_f(
            "tcp_keepalives", "info", f"{ka} TCP keep-alive(s)",
            "Idle connections kept open with keep-alives.",
            frames.get(T.KEEP_ALIVE, []), "Normal unless connections later die on idle timeouts."))
    rtts = sorted(r for r in (_rtt(x) for x in a.flows if x[F_PROTO] == 6) if r is not None)
    if rtts:
        med = rtts[len(rtts) // 2]
        if med > 150:
            out.append(_f(
                "tcp_slow_handshake", "medium",
                f"Slow TCP handshakes: median {med:.0f} ms over {len(rtts)} connection(s)",
                f"SYN to handshake ACK took {rtts[0]:.1f}–{rtts[-1]:.1f} ms.", [],
                "Check the region pairing / route for the destinations; RTT above 150 ms is "
                "unusual inside one Azure region.", med / 100))


def _state(r: list[Any]) -> str:
    from .flows import flow_to_dict

    return str(flow_to_dict(r).get("conn_state", ""))


def _mini(r: list[Any]) -> dict[str, Any]:
    from .flows import flow_to_dict

    return flow_to_dict(r)


def _rtt(r: list[Any]) -> float | None:
    syn, ack = r[17], r[19]
    return (ack - syn) / 1e6 if syn and ack else None


def _dns_findings(doc: dict[str, Any], out: list[dict[str, Any]]) -> None:
    dns = doc["dns"]
    rc = dns["rcodes"]
    fails = dns["failures"]
    for name, sev, why, act in (
        ("NXDOMAIN", "medium", "names that do not exist", "Check the name for typos, the private "
         "DNS zone links of the VNet and conditional forwarders."),
        ("SERVFAIL", "high", "the resolver failed", "Check the DNS server/forwarder health and "
         "upstream reachability (Azure DNS 168.63.129.16)."),
        ("REFUSED", "high", "the server refused to answer", "Check the DNS server's ACLs and "
         "recursion settings for this client."),
    ):
        n = rc.get(name, 0)
        if n:
            ex = [f for f in fails if f["rcode"] == name]
            names = sorted({f["name"] for f in ex})[:3]
            out.append(_f(
                f"dns_{name.lower()}", sev, f"{n} DNS answer(s) {name}",
                f"DNS said {why}: " + ", ".join(names), [f["frame"] for f in ex], act, n))
    if dns["unanswered_queries"]:
        n = dns["unanswered_queries"]
        out.append(_f(
            "dns_unanswered", "high" if n > 2 else "medium", f"{n} DNS quer(ies) never answered",
            "Queries left without a response: " + ", ".join(
                sorted({u["name"] for u in dns["unanswered"]})[:3]),
            [u["frame"] for u in dns["unanswered"]],
            "Check reachability of the DNS server (UDP/TCP 53 through NSGs/firewalls).", n))
    slow = [s for s in dns["slowest_answers"] if s["ms"] > 500]
    if slow:
        out.append(_f(
            "dns_slow", "medium", f"Slow DNS answers (slowest {slow[0]['ms']:.0f} ms)",
            f"{len(slow)} answer(s) took over 500 ms, e.g. {slow[0]['name']}",
            [s["answer_frame"] for s in slow], "Check the resolver chain and its upstreams.",
            slow[0]["ms"] / 1000))


def _other_findings(doc: dict[str, Any], out: list[dict[str, Any]]) -> None:
    icmp = doc["icmp"]
    if icmp["fragmentation_needed"]:
        fn = icmp["fragmentation_needed"]
        mtus = sorted({e.get("next_hop_mtu", 0) for e in fn})
        out.append(_f(
            "path_mtu", "high", "Path MTU problem: fragmentation needed / packet too big",
            f"A router asked for smaller packets (next-hop MTU {mtus}); if these ICMP messages "
            "are blocked elsewhere, large transfers stall (PMTU black hole).",
            [e["frame"] for e in fn], "Lower the MTU/MSS on the path (VPN/ExpressRoute "
            "overhead), and allow ICMP type 3 code 4 through NSGs/firewalls.", len(fn)))
    if icmp["unreachables"]:
        un = icmp["unreachables"]
        kinds = sorted({e["meaning"] for e in un})
        q = un[0].get("quoted_flow") or {}
        out.append(_f(
            "icmp_unreachable", "high" if icmp["unreachable_count"] > 2 else "medium",
            f"{icmp['unreachable_count']} ICMP destination-unreachable message(s)",
            f"{', '.join(kinds)}; e.g. from {un[0]['from']} about "
            f"{q.get('proto', '?')} {q.get('src', '?')} -> {q.get('dst', '?')}:"
            f"{q.get('dport', '')}", [e["frame"] for e in un],
            "The quoted flow shows which connection failed; check routes and whether the "
            "target port is open.", icmp["unreachable_count"] / 2))
    if icmp["time_exceeded"] >= 5 and icmp["echo_requests"] + icmp["time_exceeded"] > 0:
        out.append(_f(
            "icmp_time_exceeded", "info", f"{icmp['time_exceeded']} ICMP time-exceeded messages",
            "TTL expired in transit: a traceroute, or a routing loop if it is not one.", [],
            "If no traceroute ran, look for a routing loop between the listed routers."))
    tls = doc["tls_alerts"]["counts"]
    fatal = {k: v for k, v in tls.items() if k.startswith("fatal")}
    if fatal:
        ex = doc["tls_alerts"]["examples"]
        out.append(_f(
            "tls_alerts", "high", f"TLS fatal alert(s): {', '.join(sorted(fatal))}",
            "The TLS handshake failed (certificate, protocol version or cipher mismatch).",
            [e["frame"] for e in ex if e["alert"].startswith("fatal")],
            "Check certificates (expiry, chain, SNI name) and TLS versions on both sides.",
            sum(fatal.values())))
    http = doc["http"]["status_codes"]
    errors5 = sum(v for k, v in http.items() if k.startswith("5"))
    errors4 = sum(v for k, v in http.items() if k.startswith("4"))
    if errors5 or errors4:
        ex = doc["http"]["error_examples"]
        out.append(_f(
            "http_errors", "high" if errors5 else "low",
            f"HTTP errors: {errors5} 5xx, {errors4} 4xx",
            "Status codes: " + ", ".join(f"{k}×{v}" for k, v in sorted(http.items())
                                          if k[0] in "45"),
            [e["frame"] for e in ex], "5xx: look at the server/backend health and logs; 4xx: "
            "the request (path, auth).", errors5 + errors4 / 10))
    cap = doc["capture"]
    damaged = [w for w in cap["warnings"] if UNDECODABLE_MARK not in w]
    if damaged:
        out.append(_f("capture_damaged", "medium", "The capture file is damaged or cut short",
                      "; ".join(damaged)[:400], [],
                      "The analysis covers only the readable part; re-download the capture."))
    if cap["offload"]["likely"]:
        out.append(_f("offload", "info", "Segmentation/receive offload visible in the capture",
                      cap["offload"]["explanation"], [],
                      "Read packet counts and sizes as host-side, not wire-side."))
    if cap["truncated_packets"]:
        out.append(_f("snaplen_truncation", "info",
                      f"{cap['truncated_packets']} packet(s) truncated by the snap length",
                      "Headers were analysed with the original lengths; payload-based details "
                      "(DNS names, HTTP/TLS) may be missing.", [],
                      "Capture full packets if application details matter."))


def build_findings(doc: dict[str, Any], a: Analyzer) -> list[dict[str, Any]]:
    """All findings, highest score first; an empty capture yields one 'nothing seen' finding."""
    out: list[dict[str, Any]] = []
    _tcp_findings(doc, a, out)
    _dns_findings(doc, out)
    _other_findings(doc, out)
    cap = doc["capture"]
    if mostly_undecodable(cap["packets"], cap["undecodable_packets"]):
        out.append(_f("capture_undecodable", "medium",
                      f"{cap['undecodable_packets']} of {cap['packets']} packets could not be "
                      "decoded",
                      "The link type or encapsulation is not one this engine reads, so this "
                      "report says little about the network.", [],
                      "Convert the capture (editcap -T ether) or capture on the VM's NIC."))
    if not [f for f in out if f["severity"] != "info"]:
        out.append(_f("no_problem_seen", "info", "No network problem visible in this capture",
                      f"{doc['capture']['packets']} packets, {doc['flow_count']} flows: no "
                      "resets, loss, DNS or ICMP errors were found.", [],
                      "If the symptom persists, capture during the failure or at the other end."))
    out.sort(key=lambda f: -float(f["score"]))
    for i, f in enumerate(out, 1):
        f["rank"] = i
    _ = F_EVIDENCE
    return out
