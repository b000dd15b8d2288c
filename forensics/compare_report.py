"""How a two-ended comparison reads: its finding, its summary lines and its report section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .wording import duration_ms, plural

SECTION = "## Two-ended comparison"


def _names(cmp: dict[str, Any]) -> tuple[str, str]:
    return Path(cmp["capture_a"]).name, Path(cmp["capture_b"]).name


def comparison_finding(cmp: dict[str, Any]) -> dict[str, Any]:
    """The finding that heads the list when --compare was asked for."""
    a, b = _names(cmp)
    if cmp["status"] != "ok":
        return {"id": "comparison_refused", "rank": 0, "severity": "medium", "score": 100.0,
                "title": f"No two-ended comparison of {a} and {b}",
                "detail": f"Refused: {cmp['reason']}", "evidence_frames": [],
                "next_step": "Capture both ends of the same path at the same time (same "
                "flows, clocks within a day) and compare those; the single-end findings below "
                f"are about {a} alone."}
    lost = cmp["lost_a_to_b"] + cmp["lost_b_to_a"]
    inj = cmp["unsent_but_received_at_a"] + cmp["unsent_but_received_at_b"]
    copies = cmp.get("copies_received_at_a", 0) + cmp.get("copies_received_at_b", 0)
    sev = "high" if lost or inj else "low" if copies else "info"
    title = (f"Two-ended comparison: {plural(cmp['lost_a_to_b'], 'packet')} lost "
             f"{cmp['host_a']} -> {cmp['host_b']}, {cmp['lost_b_to_a']} lost back"
             + (f", {plural(inj, 'packet')} injected" if inj else "")
             + (f", {plural(copies, 'packet')} copied on the way" if copies else ""))
    return {"id": "two_ended_comparison", "rank": 0, "severity": sev, "score": 100.0,
            "title": title,
            "detail": "; ".join(x.removeprefix("- ") for x in summary_lines(cmp)[1:]) + ".",
            "evidence_frames": [],
            "next_step": ("Losses on one side only point at the device between the two "
                          "capture points; see the two-ended comparison section of the report "
                          "for the flows and packets." if lost or inj else
                          "Nothing was lost between the two ends, but a device between them "
                          "sends packets twice: capture on each hop to find it (see the "
                          "two-ended comparison section of the report)." if copies else
                          "Nothing was lost between the two ends; look at the hosts "
                          "themselves (see the two-ended comparison section of the report).")}


def summary_lines(cmp: dict[str, Any]) -> list[str]:
    """A few lines for the executive summary."""
    a, b = _names(cmp)
    if cmp["status"] != "ok":
        return [f"Two-ended comparison of `{a}` with `{b}` refused: {cmp['reason']}"]
    owd = cmp["one_way_delay_ms"]
    lines = [
        f"Two-ended comparison of `{a}` (A = {cmp['host_a']}) with `{b}` "
        f"(B = {cmp['host_b']}):",
        f"- lost A->B: {cmp['lost_a_to_b']}, lost B->A: {cmp['lost_b_to_a']} (matched "
        f"{cmp['matched_a_to_b']} / {cmp['matched_b_to_a']} packets; "
        f"{plural(cmp['shared_flows'], 'flow')} seen at both ends)",
        f"- received at B but never sent by A: {cmp['unsent_but_received_at_b']}; received "
        f"at A but never sent by B: {cmp['unsent_but_received_at_a']}"
        + (" (a device in between sent them in the other side's name, e.g. a firewall RST)"
           if cmp["unsent_but_received_at_a"] or cmp["unsent_but_received_at_b"] else ""),
    ]
    if cmp.get("copies_received_at_a") or cmp.get("copies_received_at_b"):
        lines.append(f"- copies made on the way (sent once, received twice, same IP ID and "
                     f"bytes): {cmp['copies_received_at_b']} received at B, "
                     f"{cmp['copies_received_at_a']} at A: neither lost nor forged")
    if owd["a_to_b_min"] is not None:
        lines.append(f"- one-way delay {duration_ms(owd['a_to_b_min'])} (median A->B "
                     f"{duration_ms(owd['a_to_b_median'])}, B->A "
                     f"{duration_ms(owd['b_to_a_median'])}); B's clock is "
                     f"{_offset(cmp['clock_offset_ms'])}")
    else:
        lines.append(f"- packets matched one way only: B's clock plus the one-way delay is "
                     f"{_offset(cmp['clock_offset_ms'])}")
    for way, label, injected in (("a_to_b", "A->B", cmp["unsent_but_received_at_b"]),
                                 ("b_to_a", "B->A", cmp["unsent_but_received_at_a"])):
        sz = cmp["lost_sizes"][way]
        if sz and sz["packets"] >= 2 and sz["min_bytes"] >= 1000:
            size = (f"{sz['min_bytes']} bytes" if sz["min_bytes"] == sz["max_bytes"]
                    else f"{sz['min_bytes']} to {sz['max_bytes']} bytes")
            if injected >= sz["packets"]:
                # a device that forges resets drops the segment it resets on: not an MTU problem
                lines.append(f"- every packet lost {label} ({size}) was answered by a packet "
                             "sent in the other side's name: the device in between dropped "
                             "them as it reset the connections")
            else:
                lines.append(f"- every packet lost {label} was a large TCP segment ({size}): "
                             "suspect an MTU black hole on that path")
    if cmp["clock_warning"]:
        lines.append(f"- WARNING: {cmp['clock_warning']}")
    return lines


def _offset(ms: float) -> str:
    if abs(ms) < 0.001:
        return "in step with A's"
    return f"{duration_ms(abs(ms))} {'ahead of' if ms > 0 else 'behind'} A's"


def report_section(cmp: dict[str, Any]) -> list[str]:
    """The report's comparison section: the sanity checks, the figures, the flows."""
    a, b = _names(cmp)
    out = [SECTION, "", f"- capture A: `{a}` ({plural(cmp['packets_a'], 'packet')})",
           f"- capture B: `{b}` ({plural(cmp['packets_b'], 'packet')})"]
    if cmp["status"] != "ok":
        return out + ["", f"**Refused:** {cmp['reason']}", "",
                      "No loss, delay or offset figure is given: they would be meaningless.",
                      ""]
    out += [
        f"- side A: {cmp['host_a']} (seen at B as {cmp['host_a_as_seen_at_b'] or '-'}); "
        f"side B: {cmp['host_b']} (seen at A as {cmp['host_b_as_seen_at_a'] or '-'})",
        f"- sanity: {cmp['shared_flows']} of {cmp['flows_a']} flows at A also seen at B; "
        f"captures overlap for {duration_ms(cmp['overlap_s'] * 1000)} once B's clock is "
        f"corrected; {cmp['matched_a_to_b'] + cmp['matched_b_to_a']} packets matched by "
        "identity (IP ID, ports, sequence, flags, length)",
        "", *summary_lines(cmp)[1:], "",
        f"Left aside: {plural(cmp['not_addressed_to_the_other_side'], 'packet')} not "
        f"addressed to the other side (third hosts), "
        f"{plural(cmp['outside_the_other_capture'], 'packet')} sent while the other capture "
        "was not running.",
    ]
    mb = cmp["matched_by_byte_range"]
    if mb["a_to_b"] or mb["b_to_a"]:
        out.append(f"Offload is visible on some flows: {mb['a_to_b']} A->B and {mb['b_to_a']} "
                   "B->A TCP segments counted as delivered because the other end holds their "
                   "bytes in differently cut segments.")
    out.append("")
    if cmp["lost_by_flow"]:
        out += ["| flow | lost A->B | lost B->A |", "|---|---|---|"]
        out += [f"| {r['flow']} | {r['a_to_b']} | {r['b_to_a']} |" for r in cmp["lost_by_flow"]]
        out.append("")
    examples = (cmp["lost_examples_a_to_b"] + cmp["lost_examples_b_to_a"]
                + cmp["unsent_examples"] + cmp["copy_examples"])
    if examples:
        out += ["| kind | packet | IP ID |", "|---|---|---|"]
        for label, rows in (("lost A->B", cmp["lost_examples_a_to_b"]),
                            ("lost B->A", cmp["lost_examples_b_to_a"]),
                            ("never sent", cmp["unsent_examples"]),
                            ("copy", cmp["copy_examples"])):
            for e in rows[:5]:
                kind = label
                if "seen_at" in e:
                    other = "B" if e["seen_at"] == "A" else "A"
                    kind = (f"copy: twice at {e['seen_at']}, sent once by {other}"
                            if label == "copy" else f"at {e['seen_at']}, never sent by {other}")
                what = f"{e['proto']} {e['src']}:{e.get('sport', '')} -> {e['dst']}:" \
                       f"{e.get('dport', '')}"
                if e["proto"] == "tcp":
                    what += f" [{e['flags']}] seq {e['seq']} len {e['len']}"
                out.append(f"| {kind} | {what} | {e['ip_id']} |")
        out.append("")
    out.append(cmp["note"] + ".")
    out.append("")
    return out


def output_stem(capture: str, compare: str | None) -> str:
    """Outputs are named after both captures when two are compared."""
    stem = Path(capture).stem
    return f"{stem}_vs_{Path(compare).stem}" if compare else stem

