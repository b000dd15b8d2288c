"""Markdown reports: the full forensic report and the short executive summary.

The Executive Summary comes first in the report and is also written alone (at most 50
lines) because the investigation engine reads it through a shell that truncates output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .compare_report import report_section, summary_lines
from .wording import (
    HISTORY_LEGEND,
    duration_ms,
    duration_ns,
    listing,
    plural,
    state_legend,
    value,
)

EXEC_MAX_LINES = 50
EXPLAINED_NAMES = {"mtu_blackhole": "MTU black hole (`mtu_blackhole`)",
                   "stalled": "stalled transfer (`tcp_stalled`)"}
TOP_FINDINGS = 6
LINE_MAX = 600  # a finding's detail in the summary: long enough for its figures


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def executive_summary_lines(doc: dict[str, Any], title: str) -> list[str]:
    """The summary block (without a heading), short enough to survive truncation."""
    cap = doc["capture"]
    if not cap["packets"]:
        lines = [f"Capture `{Path(cap['file']).name}`: empty (no packets recorded)."]
    else:
        lines = [
            f"Capture `{Path(cap['file']).name}`: {plural(cap['packets'], 'packet')}, "
            f"{_human_bytes(cap['bytes'])} over {duration_ns(cap['duration_s'] * 1e9)}, "
            f"{plural(doc['flow_count'], 'flow')} ({doc['tcp_flow_count']:,} TCP).",
        ]
    if cap["warnings"]:
        lines.append(f"WARNING: {cap['warnings'][0]}")
    if "comparison" in doc:
        lines += [""] + summary_lines(doc["comparison"])
    lines.append("")
    findings = doc["findings"]
    for f in findings[:TOP_FINDINGS]:
        ev = ", ".join(str(x) for x in f["evidence_frames"][:6])
        lines.append(f"{f['rank']}. **[{f['severity'].upper()}] {f['title']}**")
        lines.append(clip(f"   {f['detail']}"))
        lines.append(clip(f"   Next: {f['next_step']}"))
        if ev:
            lines.append(f"   Evidence frames: {ev}")
    if len(findings) > TOP_FINDINGS:
        more = plural(len(findings) - TOP_FINDINGS, "more finding")
        lines.append(f"({more} in the full report.)")
    ta = doc["tcp_analysis"]
    nonzero = ", ".join(f"{k} {v}" + (retransmission_note(doc) if k == "retransmission" else "")
                        for k, v in ta.items() if v)
    lines.append("")
    conns = doc["diagnosis"]["tcp_connections"]
    if conns["total"]:
        lines.append("TCP connections: " + ", ".join(
            f"{v:,} {k.replace('_', ' ')}" for k, v in sorted(
                conns["by_outcome"].items(), key=lambda kv: -kv[1])) + ".")
    lines.append(f"TCP analysis flags (frames, as tshark marks them): {nonzero or 'none'}; "
                 f"RST packets {doc['tcp_resets']}.")
    lines += _dns_line(doc["dns"])
    return lines[:EXEC_MAX_LINES - 2]


def clip(line: str, limit: int = LINE_MAX) -> str:
    """A long line cut at a word, marked as cut, never mid-word."""
    if len(line) <= limit:
        return line
    return line[:limit - 2].rsplit(" ", 1)[0].rstrip(",;:") + " …"


def retransmission_note(doc: dict[str, Any]) -> str:
    """What tshark's retransmission count is made of, in the loss finding's terms: its flag
    marks every re-sent segment, SYN and FIN retries included; loss counts data segments."""
    flagged = doc["tcp_analysis"]["retransmission"]
    if not flagged:
        return ""
    data = doc["diagnosis"]["data_loss"]["flagged_by_tshark"]
    other = flagged - data
    if other <= 0:
        return " (data segments only)"
    if not data:
        return " (all SYN, SYN-ACK or FIN retries: no data segment)"
    return (f" ({plural(data, 'data segment')} and {plural(other, 'SYN, SYN-ACK or FIN retry')}"
            ")")


def _dns_line(dns: dict[str, Any]) -> list[str]:
    rc = dns["rcodes"]
    if not dns["queries"] and not rc:
        return []
    ex = dns["exchanges"]
    names = ex.get("names", ex["total"])
    fates = []
    if ex["unanswered"]:
        fates.append(f"{ex['unanswered']} never answered")
    if ex.get("refused_by_host"):
        fates.append(f"{ex['refused_by_host']} refused by the host (ICMP port unreachable: "
                     "nothing listens on 53)")
    if ex["at_capture_end"]:
        fates.append(f"{ex['at_capture_end']} asked less than 1 s before the capture ended")
    return [
        f"DNS: {plural(dns['queries'], 'query', 'queries')} (retries included) for "
        f"{plural(names, 'name')} in {plural(ex['total'], 'exchange')} (one client asking "
        "one server one name), answers "
        + (", ".join(f"{k} {v}" for k, v in rc.items()) or "none")
        + ("; of the exchanges " + listing(fates) if fates else "; every exchange answered")
        + "."
    ]


def executive_summary_md(doc: dict[str, Any], title: str) -> str:
    """The standalone executive summary file (at most 50 lines)."""
    lines = [f"## Executive Summary — {title}", ""] + executive_summary_lines(doc, title)
    return "\n".join(lines[:EXEC_MAX_LINES]) + "\n"


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "/") for c in r) + " |")
    return out


def forensic_report_md(doc: dict[str, Any], title: str) -> str:
    """The full report: summary first, then the evidence section by section."""
    cap = doc["capture"]
    L: list[str] = [f"# Forensic Report — {title}", ""]
    L += ["## Executive Summary", ""] + executive_summary_lines(doc, title) + [""]
    if "comparison" in doc:
        L += report_section(doc["comparison"])
    L += ["## Findings", ""]
    L += _table(["#", "severity", "finding", "evidence frames", "next step"], [
        [f["rank"], f["severity"], f["title"], ", ".join(map(str, f["evidence_frames"][:8])),
         f["next_step"]] for f in doc["findings"]
    ])
    L += ["", "## Capture", ""]
    links = ", ".join(lt["name"] for lt in cap["link_types"]) or "unknown"
    L += [
        f"- file: `{cap['file']}` ({cap['format']}, link type {links}, snaplen {cap['snaplen']})",
        f"- {plural(cap['packets'], 'packet')}, {plural(cap['bytes'], 'byte')}, duration "
        f"{duration_ns(cap['duration_s'] * 1e9)}",
        f"- truncated packets {cap['truncated_packets']}, non-IP {cap['non_ip_packets']}, "
        f"undecodable {cap['undecodable_packets']}, IP fragments {cap['ip_fragments']}",
        "- offload: " + (f"yes (largest IP datagram {cap['offload']['largest_ip_datagram']} "
                         "bytes)" if cap["offload"]["likely"]
                         else "no sign (no IP datagram above 1500 bytes)"),
    ]
    for w in cap["warnings"]:
        L.append(f"- WARNING: {w}")
    L += ["", "## TCP", ""]
    flags = [[k, v] for k, v in doc["tcp_analysis"].items() if v]
    L += _table(["flag", "frames"], flags) if flags else ["No TCP analysis flag was set."]
    states = doc["tcp_conn_states"]
    L += ["", f"RST packets: {doc['tcp_resets']}; connection states: "
          + (", ".join(f"{k} {v}" for k, v in states.items()) or "none"), ""]
    if states:
        L += [state_legend(sorted(states)), ""]
    conns = doc["diagnosis"]["tcp_connections"]
    if conns["total"]:
        L += ["Connection outcomes:", ""] + [
            f"- {k.replace('_', ' ')}: {v:,} ({conns['outcome_meanings'][k]})"
            for k, v in conns["by_outcome"].items()] + [""]
    if doc["tcp_analysis"]["retransmission"]:
        L += ["The `retransmission` flag counts every frame tshark marks as re-sent"
              + retransmission_note(doc) + "; the data loss figures below count data "
              "segments only.", ""]
    loss = doc["diagnosis"]["data_loss"]
    if not loss["data_segments"]:
        L += ["Data loss: no data segment (TCP payload) in the capture.", ""]
    elif not loss["retransmitted"]:
        L += [f"Data loss: none of {plural(loss['data_segments'], 'data segment')} was "
              "retransmitted.", ""]
    else:
        segs = plural(loss["data_segments"], "data segment")
        aside = []
        if loss["copies"]:
            aside.append(f"{plural(loss['copies'], 'copy', 'copies')} made in the network")
        if loss["unneeded"]:
            aside.append(f"{loss['unneeded']} the receiver did not need ({loss['dsack']} "
                         f"D-SACK, {loss['spurious']} already acknowledged)")
        L += [f"Data loss: {loss['lost']} of {segs} lost and retransmitted; "
              f"{loss['retransmitted']} re-sent in all"
              + (f", of which {listing(aside)}" if aside else "")
              + " (handshake retries not included):", ""]
        L += _table(["from", "to", "captured at", "data segments", "re-sent", "lost", "copies",
                     "not needed", "loss rate"], [
            [d["from"], d["to"], d["captured_at"], d["data_segments"], d["retransmitted"],
             d["lost"], d["copies"], d["unneeded"], f"{d['loss_rate'] * 100:.1f} %"]
            for d in loss["by_direction"]]) + [""]
        point = doc["diagnosis"]["capture_point"]
        if point["hosts"]:
            L += ["Capture point: " + "; ".join(
                f"{h} ({point['evidence'][h]})" for h in point["hosts"]) + ". At the sender "
                "every range sent twice counts as re-sent (tshark's out-of-order ones "
                "included), an upper bound on what the path dropped.", ""]
        for kind, v in (loss.get("explained_by") or {}).items():
            if v["retransmitted"]:
                L += [f"Of these, {plural(v['retransmitted'], 'retransmission')} on "
                      f"{plural(v['connections'], 'connection')} are explained by the "
                      f"{EXPLAINED_NAMES.get(kind, kind)} finding, not reported as loss.", ""]
    L += ["### Flows (problem flows first)", "", HISTORY_LEGEND + ".", ""]
    rows = []
    for fl in doc["flows"][:40]:
        rows.append([
            fl["proto"], f"{fl['src']}:{fl['sport']}", f"{fl['dst']}:{fl['dport']}",
            fl.get("conn_state", ""), fl.get("history", ""),
            f"{fl['orig_packets']}/{fl['resp_packets']}",
            f"{fl['orig_bytes']}/{fl['resp_bytes']}",
            duration_ms(fl["handshake_rtt_ms"]) if fl.get("handshake_rtt_ms") else "-",
            ", ".join(f"{k} {v}" for k, v in (fl.get("tcp_analysis") or {}).items()),
        ])
    L += _table(["proto", "orig", "resp", "state", "history", "pkts o/r", "bytes o/r",
                 "handshake", "tcp analysis"], rows)
    dns = doc["dns"]
    ex = dns["exchanges"]
    L += ["", "## DNS", ""]
    if not dns["queries"] and not dns["responses"]:
        L += ["No DNS traffic.", ""]
    else:
        by_srv = ex["unanswered_by_server"]
        L += [f"{plural(dns['queries'], 'query', 'queries')} ({plural(dns['retries'], 'retry')})"
              f" for {plural(ex.get('names', ex['total']), 'name')} in "
              f"{plural(ex['total'], 'exchange')}, {plural(dns['responses'], 'response')}; "
              f"{ex['unanswered']} of {plural(ex['total'], 'exchange')} never answered"
              + (f", {ex['refused_by_host']} refused by the host (ICMP port unreachable)"
                 if ex.get("refused_by_host") else "")
              + (" (" + ", ".join(f"{s}: {n} queries" for s, n in by_srv.items()) + ")"
                 if by_srv else "")
              + "; median answer time " + (duration_ms(dns["median_answer_ms"])
                                            if dns["median_answer_ms"] is not None else "-"),
              ""]
    L += _dns_tables(dns)
    L += _icmp_section(doc["icmp"])
    L += ["", "## TLS and HTTP", ""]
    L.append("TLS alerts: " + (", ".join(f"{k} {v}" for k, v in
                                          doc["tls_alerts"]["counts"].items()) or "none"))
    L.append("HTTP status codes: " + (", ".join(f"{k} {v}" for k, v in
                                               doc["http"]["status_codes"].items()) or "none"))
    L += ["", "## Top talkers", ""]
    L += _table(["address", "pkts sent", "bytes sent", "pkts recv", "bytes recv", "flows"], [
        [t["address"], t["packets_sent"], t["bytes_sent"], t["packets_received"],
         t["bytes_received"], t["flows"]] for t in doc["top_talkers"]
    ])
    L.append("")
    return "\n".join(L)


def _dns_tables(dns: dict[str, Any]) -> list[str]:
    L: list[str] = []
    if dns["rcodes"]:
        L += _table(["rcode", "responses"], [[k, v] for k, v in dns["rcodes"].items()]) + [""]
    if dns["failures"]:
        L += _table(["frame", "name", "type", "rcode", "server"], [
            [f["frame"], f["name"], f["qtype"], f["rcode"], f["server"]] for f in dns["failures"]
        ]) + [""]
    if dns["slowest_answers"]:
        L += _table(["answer time", "name", "type", "query frame", "answer frame"], [
            [duration_ms(s["ms"]), s["name"], s["qtype"], s["query_frame"], s["answer_frame"]]
            for s in dns["slowest_answers"][:5]
        ]) + [""]
    return L


def _icmp_section(icmp: dict[str, Any]) -> list[str]:
    L = ["## ICMP", ""]
    if not icmp["type_code"] and not icmp["icmpv6_type_code"]:
        return L + ["No ICMP."]
    L += _table(["type/code", "packets"], [[k, v] for k, v in icmp["type_code"].items()]
                + [[f"v6 {k}", v] for k, v in icmp["icmpv6_type_code"].items()])
    for e in icmp["unreachables"] + icmp["fragmentation_needed"]:
        q = e.get("quoted_flow") or {}
        L.append(f"- frame {e['frame']}: {e['meaning']} from {e['from']} about "
                 f"{value(q.get('proto'))} {value(q.get('src'))}:{q.get('sport', '')} -> "
                 f"{value(q.get('dst'))}:{q.get('dport', '')}"
                 + (f" (next-hop MTU {e['next_hop_mtu']})" if "next_hop_mtu" in e else ""))
    return L
