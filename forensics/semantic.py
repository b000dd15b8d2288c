"""Turn the analyzer's counters into the semantic JSON document (``schema_version`` 1).

The document is what the investigation engine reads: small, named, ranked. Bulky
per-frame detail only appears on request (``frame_flags``).
"""

from __future__ import annotations

import heapq
from collections import Counter
from typing import Any

from . import tcp_analysis as T
from .analyzer import Analyzer
from .diagnosis import diagnose
from .findings import build_findings
from .flows import (
    F_BYTES0,
    F_BYTES1,
    F_PKTS0,
    F_PKTS1,
    F_PROTO,
    F_SEEN0,
    F_SEEN1,
    conn_state,
    flow_to_dict,
    originator,
    split_addrs,
)

SCHEMA_VERSION = 1
LINKTYPE_NAMES = {0: "BSD loopback", 1: "Ethernet", 12: "raw IP", 14: "raw IP", 101: "raw IP",
                  108: "OpenBSD loopback", 113: "Linux cooked (SLL)", 228: "raw IPv4",
                  229: "raw IPv6", 276: "Linux cooked v2 (SLL2)"}
MAX_FLOWS = 200
TOP_TALKERS = 10


def _tcp_totals(a: Analyzer) -> dict[str, int]:
    return {name: a.flag_counts.get(bit, 0) for bit, name in T.FLAG_NAMES}


def _top_talkers(a: Analyzer) -> list[dict[str, Any]]:
    # Summed per address pair first (a capture has few), in order of first appearance: the
    # addresses then appear in the same order as when walking every flow, which breaks ties.
    pairs: dict[bytes, list[int]] = {}
    for rec in a.flows:
        p = pairs.get(rec[1])
        if p is None:
            p = pairs[rec[1]] = [0, 0, 0, 0, 0]
        p[0] += rec[F_PKTS0]
        p[1] += rec[F_BYTES0]
        p[2] += rec[F_PKTS1]
        p[3] += rec[F_BYTES1]
        p[4] += 1
    sent: dict[bytes, list[int]] = {}
    for pair, (pk0, by0, pk1, by1, n) in pairs.items():
        src, dst = pair[: len(pair) // 2], pair[len(pair) // 2 :]
        for addr, pk, by, rpk, rby in ((src, pk0, by0, pk1, by1), (dst, pk1, by1, pk0, by0)):
            s = sent.setdefault(addr, [0, 0, 0, 0, 0])
            s[0] += pk
            s[1] += by
            s[2] += rpk
            s[3] += rby
            s[4] += n
    ranked = sorted(sent.items(), key=lambda kv: -(kv[1][1] + kv[1][3]))[:TOP_TALKERS]
    out = []
    for addr, (pk, by, rpk, rby, nflows) in ranked:
        out.append({
            "address": split_addrs(addr + addr)[0],
            "packets_sent": pk, "bytes_sent": by,
            "packets_received": rpk, "bytes_received": rby, "flows": nflows,
        })
    return out


def _flow_rank(rec: list[Any]) -> tuple[int, int]:
    """Problem flows first (analysis flags, resets), then by size."""
    problems = sum(rec[16].values()) if rec[16] else 0
    return (-problems, -(rec[F_BYTES0] + rec[F_BYTES1]))


def build_semantic(a: Analyzer, path: str, frame_flags: bool = False) -> dict[str, Any]:
    """The whole semantic document for one capture."""
    info = a.info
    duration = (a.last_ts - a.first_ts) / 1e9 if a.packets > 1 else 0.0
    flow_dicts = [flow_to_dict(r) for r in heapq.nsmallest(MAX_FLOWS, a.flows, key=_flow_rank)]
    seen = Counter((r[F_SEEN0], r[F_SEEN1]) for r in a.flows if r[F_PROTO] == 6)
    states: dict[str, int] = {}
    for (s0, s1), n in seen.items():  # as flow_to_dict: originator first
        state = conn_state(s1, s0) if originator(s0, s1) else conn_state(s0, s1)
        states[state] = states.get(state, 0) + n
    offload = {
        "ip_datagrams_over_1500_bytes": a.oversized_packets,
        "largest_ip_datagram": a.max_ip_len,
        "ipv4_total_length_zero": a.ip_len_zero,
        "likely": a.oversized_packets > 0 or a.ip_len_zero > 0,
        "explanation": (
            "segments larger than the MTU were captured: the NIC's segmentation/receive "
            "offload (TSO/GSO/GRO/LRO) merges packets before the capture point, so packet "
            "counts are lower and sizes larger than on the wire"
            if a.oversized_packets or a.ip_len_zero else ""
        ),
    }
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": "ghost-forensics",
        "capture": {
            "file": path,
            "format": info.file_format,
            "link_types": [
                {"id": lt, "name": LINKTYPE_NAMES.get(lt, f"linktype {lt}")}
                for lt in info.linktypes
            ],
            "snaplen": info.snaplen,
            "nanosecond_timestamps": info.nanosecond,
            "packets": a.packets,
            "bytes": a.bytes,
            "first_ts_ns": a.first_ts,
            "last_ts_ns": a.last_ts,
            "duration_s": round(duration, 6),
            "truncated_packets": a.truncated_packets,
            "ipv4_packets": a.ipv4_packets,
            "ipv6_packets": a.ipv6_packets,
            "non_ip_packets": a.non_ip_packets,
            "undecodable_packets": a.undecodable_packets,
            "ip_fragments": a.fragments,
            "timestamps_going_backwards": a.ts_backwards,
            "offload": offload,
            "warnings": list(info.warnings),
        },
        "tcp_analysis": _tcp_totals(a),
        "tcp_resets": a.tcp_resets,
        "tcp_reset_frames": a.reset_frames,
        "tcp_analysis_frames_sample": {
            name: a.flag_frames.get(bit, []) for bit, name in T.FLAG_NAMES if bit in a.flag_frames
        },
        "tcp_conn_states": dict(sorted(states.items())),
        "flow_count": len(a.flows),
        "tcp_flow_count": seen.total(),
        "flows": flow_dicts,
        "flows_truncated": len(a.flows) > MAX_FLOWS,
        "dns": a.dns.summary(a.last_ts, a.icmp.refused(53)),
        "icmp": a.icmp.summary(),
        "top_talkers": _top_talkers(a),
    }
    doc.update(a.app.summary())
    diag = diagnose(a)
    doc["diagnosis"] = diag.summary()
    doc["findings"] = build_findings(doc, a, diag)
    if frame_flags:
        doc["frame_flags"] = {str(k): T.flag_names(v) for k, v in sorted(a.frame_flags.items())}
    return doc
