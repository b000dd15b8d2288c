"""The flow-log report (markdown) and what the CLI prints for a person.

The report is short: the findings with their evidence first, then the deciding rules, the top
flows, the NICs the logs cover and what was read. The JSON holds the rest.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from .wording import plural

TOP = 5
TOP_FLOWS = 20
_COLOURS = {"critical": "1;31", "high": "31", "medium": "33", "low": "36", "info": "2"}
TUPLE_LEGEND = ("A tuple reads: time (ms since 1970, UTC), source, destination, source port, "
                "destination port, protocol (6 TCP, 17 UDP), direction at the NIC (I in, O out), "
                "state (B begin, C continuing, E end, D denied), encryption (NX: none), packets "
                "and bytes from source to destination, packets and bytes back.")


def question(q: dict[str, Any]) -> str:
    src, dst, port = q.get("src"), q.get("dst"), q.get("port")
    if not (src or dst or port is not None):
        text = "all flows"
    else:
        text = f"{src or 'any'} → {dst or 'any'}" + (f":{port}" if port is not None else "")
    if q.get("since") or q.get("until"):
        text += f" from {q.get('since') or 'the start'} to {q.get('until') or 'the end'}"
    return text


def headline(doc: dict[str, Any]) -> str:
    i = doc["inputs"]
    span = ""
    if i["first_tuple"] and i["last_tuple"]:
        a, b = i["first_tuple"], i["last_tuple"]
        span = f", {a[:16].replace('T', ' ')}–{b[11:16] if a[:10] == b[:10] else b[:16]} UTC"
    n = len(doc["findings"])
    return (f"flow logs ({question(doc['query'])}): {plural(i['blobs'], 'blob')}, "
            f"{plural(len(doc['nics']), 'NIC')}{span}, {plural(i['tuples_matched'], 'record')}"
            f" matched of {i['tuples']:,}; {plural(n, 'finding')}")


def _cell(x: Any) -> str:
    return "-" if x is None or x == "" else str(x).replace("|", "\\|")


def _ev_line(e: dict[str, Any]) -> str:
    if "tuple" not in e:
        return f"- `{e.get('blob')}` ({e.get('status', '')})"
    where = f"record {e.get('record_time')}"
    rule = f", {e['rule']} (aclID {e['acl_id']})" if e.get("rule") else ""
    return f"- `{e['blob']}`, {where}, minute {e.get('minute')}{rule}: `{e['tuple']}`"


def report_md(doc: dict[str, Any]) -> str:
    i = doc["inputs"]
    lines = [f"# VNet flow logs: {question(doc['query'])}", "", headline(doc) + ".", ""]
    lines += ["## Findings", "", "| # | severity | id | finding |", "|---|---|---|---|"]
    for f in doc["findings"]:
        lines.append(f"| {f['rank']} | {f['severity']} | `{f['id']}` | {_cell(f['title'])} |")
    for f in doc["findings"]:
        lines += ["", f"### {f['rank']}. {f['severity'].upper()}: {f['title']}", "",
                  f"`{f['id']}` (score {f['score']}). {f['detail']}", "",
                  f"**Next step:** {f['next_step']}"]
        if f.get("evidence"):
            lines += ["", "Evidence:"] + [_ev_line(e) for e in f["evidence"]]
    if any(f.get("evidence") and "tuple" in f["evidence"][0] for f in doc["findings"]):
        lines += ["", TUPLE_LEGEND]
    if doc["rules"]:
        lines += ["", "## Deciding rules", "",
                  "| rule | aclID | decision | flow records | flows | first | last |",
                  "|---|---|---|---|---|---|---|"]
        for r in doc["rules"][:30]:
            lines.append(f"| {_cell(r['rule'])} | {_cell(r['acl_id'])} | {r['decision']} | "
                         f"{r['flow_records']:,} | {r['flows']:,} | {r['first_seen'][:19]} | "
                         f"{r['last_seen'][:19]} |")
    if doc["flows"]:
        shown = doc["flows"][:TOP_FLOWS]
        lines += ["", f"## Flows (top {len(shown)} of {doc['flows_total']:,}; problem flows "
                  "first)", "",
                  "| flow | decision | rules | first | last | packets out / back | "
                  "bytes out / back | timeline |", "|---|---|---|---|---|---|---|---|"]
        for fl in shown:
            rules = ", ".join(f"{r['rule']} ({r['decision']})" for r in fl["rules"][:3])
            tl = ", ".join(f"{t['decision']} {t['from'][11:16]}–{t['until'][11:16]}"
                           for t in fl["timeline"][:4])
            lines.append(
                f"| {_cell(fl['label'])} | {fl['decision']} | {_cell(rules)} | "
                f"{_cell((fl['first_seen'] or '')[:19])} | {_cell((fl['last_seen'] or '')[:19])}"
                f" | {fl['packets_sent']:,} / {fl['packets_received']:,} | "
                f"{fl['bytes_sent']:,} / {fl['bytes_received']:,} | {_cell(tl)} |")
    if doc["nics"]:
        lines += ["", "## NICs in the logs", "",
                  "| MAC | addresses | first minute | last minute | minutes logged | empty "
                  "records | minutes without a record |", "|---|---|---|---|---|---|---|"]
        for n in doc["nics"][:50]:
            lines.append(f"| {n['mac']} | {_cell(', '.join(n['addresses']))} | "
                         f"{_cell(n['first_minute'])} | {_cell(n['last_minute'])} | "
                         f"{n['minutes_with_records']:,} | {n['empty_records']:,} | "
                         f"{n['minutes_without_record']:,} |")
    ev = doc["events"]
    lines += ["", "## Inputs", "",
              f"- {plural(i['blobs'], 'file')} ({i['bytes']:,} bytes): {i['blobs_read']} read "
              f"whole, {i['blobs_partial']} in part, {i['blobs_damaged']} unreadable, "
              f"{i['files_skipped']} not VNet flow-log blobs",
              f"- {plural(i['records'], 'record')} ({i['empty_records']:,} without a flow, "
              f"{i['duplicate_records']:,} duplicates), {plural(i['tuples'], 'flow tuple')}, "
              f"{i['tuples_matched']:,} matching the question, {i['malformed_tuples']:,} "
              f"unreadable; {plural(doc['flows_total'], 'flow')}"]
    for fl in i["flow_logs"]:
        lines.append(f"- flow log `{fl['id']}` on {', '.join(f'`{t}`' for t in fl['targets'])}")
    lines.append("- activity log: " + (f"{plural(ev['count'], 'write')} from `{ev['file']}`"
                                       if ev["given"] else "none given (--events)"))
    if i["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in i["warnings"]]
    return "\n".join(lines) + "\n"


#: flows named on a finding's key line (the report lists them all)
KEY_FLOWS = 2


def finding_key(finding: dict[str, Any]) -> str:
    """One line an RCA can cite as is: the finding's id, its flows, the deciding rule and the
    window (first and last minute), e.g. ``id flow_denied; flows 168.63.129.16 → 10.1.3.4:8080/TCP;
    rule UserRule_deny-all-inbound (aclID …); window 2026-11-22T13:02Z to 2026-11-22T13:40Z``.
    The audit record of the run keeps it, so the evidence needs no file that may be gone by
    the time the RCA is read (core.engine.outcomes reads it)."""
    parts = [f"id {finding['id']}"]
    flows = [str(f["label"]) for f in finding.get("flows") or []
             if isinstance(f, dict) and f.get("label")]
    if flows:
        more = f" (+{len(flows) - KEY_FLOWS} more)" if len(flows) > KEY_FLOWS else ""
        parts.append(f"flows {', '.join(flows[:KEY_FLOWS])}{more}")
    rule = finding.get("rule")
    if isinstance(rule, dict) and rule.get("name"):
        acl = f" (aclID {rule['acl_id']})" if rule.get("acl_id") else ""
        parts.append(f"rule {rule['name']}{acl}")
    window = finding.get("window")
    if isinstance(window, dict) and window.get("from"):
        parts.append(f"window {window['from']} to {window.get('until') or 'the end'}")
    return "; ".join(parts)


def print_top(doc: dict[str, Any], paths: list[str], stream: TextIO) -> None:
    """The question in one line, the first findings with their next step, the files."""
    colour = stream.isatty() and not os.environ.get("NO_COLOR")
    head = headline(doc)
    print(f"\x1b[1m{head}\x1b[0m" if colour else head, file=stream)
    findings = doc["findings"]
    for f in findings[:TOP]:
        sev = f"{f['severity'].upper():<8}"
        if colour:
            sev = f"\x1b[{_COLOURS.get(f['severity'], '0')}m{sev}\x1b[0m"
        print(f"{f['rank']:>2}. {sev} {f['title']}", file=stream)
        print(f"             {finding_key(f)}", file=stream)
        if f.get("next_step"):
            print(f"             next: {f['next_step']}", file=stream)
    if len(findings) > TOP:
        print(f"    … {len(findings) - TOP} more in the report", file=stream)
    for label, path in zip(("semantic JSON", "report"), paths, strict=True):
        print(f"{label + ':':<15}{path}", file=stream)
