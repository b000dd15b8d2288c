"""Rank what the capture says into findings: the Executive Summary is built from these.

Each finding names the symptom, how strong the evidence is, the frames to look at, and
what an on-call engineer should check next. Rules are deliberately simple and explainable.
"""

from __future__ import annotations

from typing import Any

from .analyzer import Analyzer
from .diagnosis import Diagnosis
from .findings_tcp import tcp_findings
from .wording import duration_ms, listing, plural

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


def _dns_findings(doc: dict[str, Any], out: list[dict[str, Any]]) -> None:
    dns = doc["dns"]
    fails = dns["failures"]
    for name, sev, why, act in (
        ("NXDOMAIN", "medium", "does not exist", "Check the name for typos, the private DNS "
         "zone links of the VNet and conditional forwarders."),
        ("SERVFAIL", "high", "could not be resolved (the resolver failed)", "Check the DNS "
         "server/forwarder health and upstream reachability (Azure DNS 168.63.129.16)."),
        ("REFUSED", "high", "was refused by the server", "Check the DNS server's ACLs and "
         "recursion settings for this client."),
    ):
        n = dns["rcodes"].get(name, 0)
        if n:
            ex = [f for f in fails if f["rcode"] == name]
            names = sorted({f["name"] for f in ex})
            servers = sorted({f["server"] for f in ex})
            out.append(_f(
                f"dns_{name.lower()}", sev,
                f"{plural(n, 'DNS answer')} {name} from {listing(servers, 3)}",
                f"DNS said {listing(names, 3)} {why}.", [f["frame"] for f in ex], act, n))
    ex = dns["exchanges"]
    for srv, row in ex.get("refused_by_host_servers", {}).items():
        names = sorted({e["name"] for e in ex["refused_examples"] if e["server"] == srv})
        q = row["queries"]
        out.append(_f(
            "dns_port_unreachable", "high",
            f"DNS refused by the host {srv}: nothing listens on port 53",
            f"{srv} answered {plural(row['icmp_messages'], 'query', 'queries')} with an ICMP "
            f"port unreachable (frames {', '.join(map(str, row['icmp_frames'][:4]))}): its "
            f"kernel is up and refused them, so no DNS server listens there (or a host "
            f"firewall rejects). {plural(q, 'query', 'queries')} (retries included) for "
            f"{plural(len(names), 'name')} ({listing(names, 3)}) got no DNS answer.",
            row["icmp_frames"] + [e["frame"] for e in ex["refused_examples"]
                                  if e["server"] == srv],
            f"Start or fix the DNS service on {srv} (ss -lun 'sport = :53' shows whether "
            "anything listens), or point the client at a working resolver.", 9.0))
    for srv, row in ex.get("rejected_servers", {}).items():
        names = sorted({e["name"] for e in ex["refused_examples"] if e["server"] == srv})
        by = listing(row["from"], 3)
        out.append(_f(
            "dns_rejected", "high",
            f"DNS to {srv} rejected on the way by {by}: {listing(row['meanings'])}",
            f"{by} answered {plural(row['icmp_messages'], 'query', 'queries')} to {srv} with "
            f"an ICMP {listing(row['meanings'])} (frames "
            f"{', '.join(map(str, row['icmp_frames'][:4]))}): a filter or route on the path "
            f"refuses the DNS traffic before it reaches {srv}. "
            f"{plural(row['queries'], 'query', 'queries')} (retries included) for "
            f"{plural(len(names), 'name')} ({listing(names, 3)}) got no DNS answer.",
            row["icmp_frames"] + [e["frame"] for e in ex["refused_examples"]
                                  if e["server"] == srv],
            f"Check {by}'s rules and routes for UDP 53 to {srv} (a REJECT rule, an NSG deny, a "
            "missing route), or point the client at a resolver it may reach.", 9.0))
    if ex["unanswered"]:
        n = ex.get("unanswered_names", ex["unanswered"])
        by_srv = ex["unanswered_by_server"]
        queries = sum(by_srv.values())
        names = sorted({u["name"] for u in ex["unanswered_examples"]})
        answered = ex["answered"]
        out.append(_f(
            "dns_unanswered", "high" if n > 1 or queries > 2 else "medium",
            f"{plural(n, 'DNS name')} never answered by {listing(sorted(by_srv), 3)}",
            f"{plural(queries, 'query', 'queries')} (retries included) for {listing(names, 3)} "
            f"got no response; {answered} of the {plural(ex['total'], 'exchange')} (a client "
            "asking a server one name) were answered.",
            [u["frame"] for u in ex["unanswered_examples"]],
            f"Check that {listing(sorted(by_srv), 3)} is up and reachable on UDP/TCP 53 "
            "through NSGs/firewalls, or point the client at a working resolver.", queries))
    slow = [s for s in dns["slowest_answers"] if s["ms"] > 500]
    if slow:
        out.append(_f(
            "dns_slow", "medium", f"Slow DNS answers (slowest {duration_ms(slow[0]['ms'])})",
            f"{plural(len(slow), 'answer')} took over 500 ms, e.g. {slow[0]['name']}",
            [s["answer_frame"] for s in slow], "Check the resolver chain and its upstreams.",
            slow[0]["ms"] / 1000))


def _explained_icmp(e: dict[str, Any], dns: set[tuple[str, str]],
                    flooded: set[tuple[str, int]]) -> bool:
    """An ICMP unreachable that answered a DNS query, or a SYN-ACK to a flood's source."""
    q = e.get("quoted_flow") or {}
    if q.get("proto") == "udp" and q.get("dport") == 53:
        return (q.get("src"), q.get("dst")) in dns
    return q.get("proto") == "tcp" and (q.get("src"), q.get("sport")) in flooded


def _other_findings(doc: dict[str, Any], diag: Diagnosis, out: list[dict[str, Any]]) -> None:
    icmp = doc["icmp"]
    if icmp["fragmentation_needed"]:
        fn = icmp["fragmentation_needed"]
        mtus = sorted({e.get("next_hop_mtu", 0) for e in fn})
        out.append(_f(
            "path_mtu", "high", "Path MTU problem: fragmentation needed / packet too big",
            f"{listing(sorted({e['from'] for e in fn}), 3)} asked for smaller packets "
            f"(next-hop MTU {listing([str(m) for m in mtus])}); if these ICMP messages "
            "are blocked elsewhere, large transfers stall (PMTU black hole).",
            [e["frame"] for e in fn], "Lower the MTU/MSS on the path (VPN/ExpressRoute "
            "overhead), and allow ICMP type 3 code 4 through NSGs/firewalls.", len(fn)))
    # ICMP that answered DNS queries is the DNS findings' evidence; ICMP about a flood's
    # SYN-ACKs (forged sources) is the flood's
    refusals = [r for r in icmp.get("udp_unreachable", []) if r["port"] == 53]
    dns_refused = {(r["client"], r["server"]) for r in refusals}
    flooded = {(fl["host"], fl["port"]) for fl in diag.floods}
    un = [e for e in icmp["unreachables"] if not _explained_icmp(e, dns_refused, flooded)]
    floods = sum(1 for e in icmp["unreachables"] if _explained_icmp(e, set(), flooded))
    count = icmp["unreachable_count"] - sum(r["messages"] for r in refusals) - floods
    if un and count > 0:
        kinds = sorted({e["meaning"] for e in un})
        senders = sorted({e["from"] for e in un})
        quoted = sorted({f"{q['proto']} {q['dst']}:{q.get('dport', '')}".rstrip(":")
                         for q in (e.get("quoted_flow") for e in un) if q})
        failed = diag.by_outcome("unreachable")
        out.append(_f(
            "icmp_unreachable", "high" if count > 2 or failed else "medium",
            f"{plural(count, 'ICMP destination-unreachable message')} "
            f"from {listing(senders, 3)}",
            f"{listing(kinds)} about {listing(quoted, 4)}"
            + (f"; {plural(len(failed), 'TCP connection attempt')} failed this way" if failed
               else "") + ".", [e["frame"] for e in un],
            f"{listing(senders, 3)} refused the traffic: check its routes and filters (a "
            "REJECT rule, an NSG or a missing route) and whether the target port is open.",
            count / 2 + 5 * bool(failed)))
    if icmp["time_exceeded"] >= 5 and icmp["echo_requests"] + icmp["time_exceeded"] > 0:
        out.append(_f(
            "icmp_time_exceeded", "info", f"{icmp['time_exceeded']} ICMP time-exceeded messages",
            "TTL expired in transit at "
            + listing(list(icmp["time_exceeded_from"]), 4)
            + ": a traceroute, or a routing loop if it is not one.", [],
            "If no traceroute ran, look for a routing loop between the listed routers."))
    tls = doc["tls_alerts"]["counts"]
    fatal = {k: v for k, v in tls.items() if k.startswith("fatal")}
    if fatal:
        ex = doc["tls_alerts"]["examples"]
        out.append(_f(
            "tls_alerts", "high",
            f"{plural(sum(fatal.values()), 'TLS fatal alert')}: {', '.join(sorted(fatal))}",
            "The TLS handshake failed (certificate, protocol version or cipher mismatch); sent "
            "by " + listing(sorted({e["from"] for e in ex if e["alert"].startswith("fatal")}),
                            3) + ".",
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
                                          if k[0] in "45")
            + " from " + listing(sorted({e["server"] for e in ex}), 3) + ".",
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
                      f"{plural(cap['truncated_packets'], 'packet')} truncated by the snap length",
                      "Headers were analysed with the original lengths; payload-based details "
                      "(DNS names, HTTP/TLS) may be missing.", [],
                      "Capture full packets if application details matter."))


def build_findings(doc: dict[str, Any], a: Analyzer, diag: Diagnosis) -> list[dict[str, Any]]:
    """All findings, highest score first; a capture without a problem says so, an empty one
    says it is empty."""
    out: list[dict[str, Any]] = tcp_findings(doc, diag, a.flag_frames, _f)
    _dns_findings(doc, out)
    _other_findings(doc, diag, out)
    cap = doc["capture"]
    if not cap["packets"]:
        out.append(_f("capture_empty", "medium", "The capture holds no packets",
                      "The file is a valid capture but no packet was recorded: nothing can be "
                      "concluded about the network from it.", [],
                      "Check the capture filter, the interface or NIC it ran on, and that "
                      "traffic flowed while it ran; then capture again."))
    if mostly_undecodable(cap["packets"], cap["undecodable_packets"]):
        out.append(_f("capture_undecodable", "medium",
                      f"{cap['undecodable_packets']} of {cap['packets']} packets could not be "
                      "decoded",
                      "The link type or encapsulation is not one this engine reads, so this "
                      "report says little about the network.", [],
                      "Convert the capture (editcap -T ether) or capture on the VM's NIC."))
    if not [f for f in out if f["severity"] != "info"]:
        conns = diag.summary()["tcp_connections"]["by_outcome"]
        ok = conns.get("established", 0) + conns.get("closed", 0)
        out.append(_f("no_problem_seen", "info", "No network problem visible in this capture",
                      f"{plural(cap['packets'], 'packet')}, {plural(doc['flow_count'], 'flow')}"
                      f" ({ok} of {plural(len(diag.connections), 'TCP connection')} established)"
                      ": no resets, loss, DNS or ICMP errors were found.", [],
                      "If the symptom persists, capture during the failure or at the other end.",
                      9.9))
    out.sort(key=lambda f: -float(f["score"]))
    for i, f in enumerate(out, 1):
        f["rank"] = i
    return out
