"""RCA phase 5 (ghost-design §7): the report's sections, one function each.

Written for the engineer who opens the file at 3 a.m.: what Ghost concluded and how sure it
is first, then the evidence, each row pointing at the audit record that proves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.engine.rca_captures import ReportRead
from core.engine.rca_evidence import (
    COMPLETED,
    DENIED,
    ERROR,
    FAILED,
    FORBIDDEN,
    INTERRUPTED,
    LOCAL,
    TIMEOUT,
    AuditEvidence,
    CommandEvidence,
    is_completed,
)
from core.engine.rca_markdown import cell, code_cell, code_inline, inline, paragraph, quote, table

Lines = list[str]
_OPEN_STATES = ("ACTIVE", "DENIED_ONCE", "DENIED_TWICE")
LOCAL_NOTE = (
    "Rows tagged [LOCAL] reflect the machine Ghost runs on (its DNS, routing, VPN), not Azure: "
    "do not read a [LOCAL] probe failure as an Azure failure without [CLOUD] evidence."
)


def _entries(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [v for v in value if isinstance(v, Mapping)]


def _ids(value: Any) -> list[str]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [str(v) for v in value if isinstance(v, str | int) and str(v)]


def format_duration(seconds: float) -> str:
    """Whole seconds, one way everywhere: the RCA header and the terminal's closing banner
    (ghost-design §10 writes ``8m 32s``) show the same figure."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h {minutes:02d}m {secs:02d}s" if hours else f"{minutes}m {secs:02d}s"


def header(session_id: str, *, generated: str, confidence: str, concluded: bool,
           duration_s: float | None, state: Mapping[str, Any],
           integrity_warning: str | None) -> Lines:
    out = [f"# Root Cause Analysis — {inline(session_id)}", "",
           f"_Generated: {generated}_  ", f"_Confidence: {confidence}_  "]
    if duration_s is not None:
        out.append(f"_Duration: {format_duration(duration_s)}_  ")
    if state.get("resumed_from"):
        out.append(f"_Resumed from: {inline(state['resumed_from'], 80)}_  ")
    out.append("_Ended by: complete_investigation_" if concluded else
               "_Ended without complete_investigation (Done or turn limit)_")
    if integrity_warning:
        out += ["", f"> **Integrity warning:** {inline(integrity_warning)} "
                "See the Integrity Statement."]
    return out + [""]


#: approval transitions a person decides (expiry and Ghost's own withdrawals are not decisions)
_DECISIONS = {"approved": "approved", "denied": "denied", "modified": "modified"}


def who_and_what(symptom: str | None, requested_by: str | None,
                 audit_records: Sequence[Any]) -> Lines:
    """What was investigated, who asked, and who decided the approvals: the first things an
    engineer reading the report needs."""
    decided: dict[str, dict[str, int]] = {}
    for record in audit_records:
        if not isinstance(record, Mapping) or record.get("kind") != "approval":
            continue
        verb = _DECISIONS.get(str(record.get("status")))
        actor = record.get("actor")
        if verb is None or not isinstance(actor, str) or not actor or actor == "ghost":
            continue
        counts = decided.setdefault(actor, {})
        counts[verb] = counts.get(verb, 0) + 1
    approvers = "; ".join(
        f"{inline(actor, 80)} ({', '.join(f'{n} {verb}' for verb, n in counts.items())})"
        for actor, counts in decided.items()) or "none (no approval was decided)"
    return [f"**Symptom:** {inline(symptom or '(not recorded)', 1000)}  ",
            f"**Requested by:** {inline(requested_by or '(unknown)', 120)}  ",
            f"**Approvers:** {approvers}", ""]


def _count_line(audit: AuditEvidence) -> str:
    labels = ((COMPLETED, "ran with exit 0"), (FAILED, "failed"), (DENIED, "denied"),
              (FORBIDDEN, "forbidden"), (TIMEOUT, "timed out"),
              (INTERRUPTED, "interrupted"), (ERROR, "refused or errored"))
    parts = [f"{len(audit.by_outcome(key))} {label}" for key, label in labels
             if audit.by_outcome(key)]
    line = f"Commands: {len(audit.commands)} recorded"
    if parts:
        line += " — " + ", ".join(parts)
    approved = len(audit.risky_approved)
    return line + (f"; {approved} ran with an engineer's approval." if approved else ".")


def summary(root_cause: str, confidence_note: str | None, audit: AuditEvidence,
            tasks: Mapping[str, Mapping[str, Any]], state: Mapping[str, Any],
            notes: Sequence[str] = (), cost: str | None = None) -> Lines:
    """The conclusion; hypothesis states come from the log (after the final call's lists were
    applied), never from the raw arguments, so they match the Hypotheses Log."""
    out = ["## Investigation Summary", "", *paragraph(root_cause), ""]
    if confidence_note:
        out += [confidence_note, ""]
    log = _entries(state.get("hypothesis_log"))
    for wanted, label in (("CONFIRMED", "Confirmed"), ("REFUTED", "Refuted")):
        ids = [str(h.get("id")) for h in log if h.get("state") == wanted]
        if ids:
            out.append(f"- {label}: {inline(', '.join(ids))}")
    out += [f"- {inline(note, 400)}" for note in notes]
    out.append(f"- {_count_line(audit)}")
    done = sum(1 for t in tasks.values() if is_completed(t))
    out.append(f"- Packet captures: {len(tasks)} task(s), {done} completed.")
    if cost:  # tokens and estimated cost of the model calls (docs/eval.md)
        out.append(f"- Cost: {inline(cost, 300)}")
    return out + [""]


def hypotheses(state: Mapping[str, Any]) -> Lines:
    log = _entries(state.get("hypothesis_log"))
    out = ["## Hypotheses Log", ""]
    if not log:
        return out + ["No hypotheses were recorded.", ""]
    rows = [[cell(h.get("id")), cell(h.get("description")), cell(h.get("state")),
             cell(h.get("denial_count", 0)),
             cell(h.get("resolving_audit_id") or ("none cited" if h.get("state") in
                                                  ("CONFIRMED", "REFUTED", "UNVERIFIABLE")
                                                  else "—"))] for h in log]
    out += table(["Hypothesis ID", "Description", "Final State", "Denial Count",
                  "Resolving Audit ID"], rows)
    denials = [(h.get("id"), d) for h in log for d in _entries(h.get("denial_events"))]
    if denials:
        out += ["", "### Denial events", ""]
        for hyp, event in denials:
            reason = event.get("denial_reason")
            out.append(
                f"- {inline(hyp, 40)}, turn {inline(event.get('turn', '?'), 10)}: "
                f"{code_inline(event.get('command'))} denied "
                f"(audit_id {code_inline(event.get('audit_id'), 80)})"
                + (f" — reason: {inline(reason, 300)}" if reason else " — no reason given"))
    return out + [""]


def _outcome_text(ev: CommandEvidence) -> str:
    if ev.via_sdk and ev.outcome in (COMPLETED, FAILED):
        # what the SDK answered, not the exit code of a command that never ran
        return ev.meaning or ("Azure SDK call succeeded" if ev.outcome == COMPLETED
                              else "Azure SDK call failed")
    if ev.outcome == COMPLETED:
        return f"ran: {ev.meaning}" if ev.meaning else "succeeded"
    if ev.outcome == FAILED:
        code = ev.exit_code if ev.exit_code is not None else "unknown"
        return f"failed (exit {code})" + (f": {ev.meaning}" if ev.meaning else "")
    if ev.outcome == DENIED:
        detail = f" ({ev.error})" if ev.error and ev.error != "user_denied" else ""
        reason = f": {ev.denial_reason}" if ev.denial_reason else ""
        return f"denied{detail}{reason}"
    if ev.outcome == FORBIDDEN:
        return "refused: forbidden command"
    if ev.outcome == TIMEOUT:
        return "timed out"
    if ev.outcome == INTERRUPTED:
        return "interrupted: outcome unknown, not re-run"
    return f"error: {ev.error or ev.status or 'unknown'}"


def _action_text(ev: CommandEvidence) -> str | None:
    if ev.action and ev.actor and ev.action.startswith("user_"):
        return f"{ev.action} by {ev.actor}"
    return ev.action


def commands(audit: AuditEvidence) -> Lines:
    out = ["## Command Evidence", ""]
    if not audit.commands:
        out += ["No commands were run.", ""]
    else:
        rows = [[cell(ev.audit_id), f"[{ev.evidence_context}]",
                 code_cell(ev.command) + (" (az equivalent of an SDK call)" if ev.via_sdk
                                          else " (done by Ghost itself; shell equivalent)"
                                          if ev.via_ghost else ""),
                 cell(ev.classification), cell(_action_text(ev)),
                 "n/a (SDK)" if ev.via_sdk and ev.outcome in (COMPLETED, FAILED)
                 else cell(ev.exit_code),
                 cell(_outcome_text(ev))] for ev in audit.commands]
        out += table(["Audit ID", "Context", "Command", "Classification", "Action",
                      "Exit Code", "Outcome"], rows)
        out += ["", "Raw output is not reproduced here: read it in the audit record of each "
                "audit_id. Outcome gives what the answer meant (DNS rcode, packet loss, HTTP "
                "status, IP flow verdict) where Ghost can read it; a row marked \"az equivalent "
                "of an SDK call\" is a call Ghost made through the Azure SDK, shown as the az "
                "command that would do the same."]
        if any(ev.evidence_context == LOCAL for ev in audit.commands):
            out += ["", f"_{LOCAL_NOTE}_"]
    if audit.unfinished:
        out += ["", "Started without a recorded outcome (still running, or Ghost stopped; "
                "never re-run): " + ", ".join(code_inline(a, 80) for a in audit.unfinished)]
    return out + [""]


def _task_state(task: Mapping[str, Any]) -> str:
    state = str(task.get("state") or "?")
    outcome = task.get("outcome")
    text = f"{state} ({outcome})" if outcome and str(outcome).upper() != state else state
    error = task.get("error_detail")
    return f"{text}: {str(error)[:200]}" if error else text


_GONE = ("deleted", "already_deleted")


def _pcap(task: Mapping[str, Any]) -> str:
    """Where the raw pcap is, or that the cleanup deleted it (a path that no longer exists
    is not shown as if it did)."""
    path = task.get("local_pcap_path")
    if not path:
        return "not downloaded"
    entry = next((e for e in _entries(task.get("cleanup_plan"))
                  if e.get("kind") == "local" and e.get("resource") == path), None)
    outcome = entry.get("outcome") if entry else None
    if outcome in _GONE:
        return f"deleted by the cleanup ({path})"
    if outcome in ("denied", "failed"):
        return f"{path} (kept: its deletion was {outcome})"
    return str(path)


def _summary_block(read: ReportRead, task_ids: list[str]) -> Lines:
    out = [f"### Executive summary — {inline(', '.join(task_ids))}", ""]
    if read.lines is None:
        return out + [f"{read.problem} The full report is at {code_inline(read.report_path)} "
                      "for offline review.", ""]
    out.append(f"Read from {code_inline(read.source_path)} through the Safe-Exec Shell "
               f"(audit_id {code_inline(read.audit_id, 80)}).")
    out += ["", *quote(read.lines), ""]
    if read.truncated:
        out += ["The shell truncated this read; the full report is at "
                f"{code_inline(read.report_path)}.", ""]
    return out


def captures(tasks: Mapping[str, Mapping[str, Any]], reads: Mapping[str, ReportRead],
             advisories: Sequence[str]) -> Lines:
    out = ["## Capture Evidence", ""]
    if not tasks:
        out += ["No packet captures were run.", ""]
    else:
        rows = [[cell(task_id), cell(t.get("target")), cell(_task_state(t)),
                 cell(t.get("report_path")), cell(_pcap(t))]
                for task_id, t in tasks.items()]
        out += table(["Task ID", "Target", "State", "Report Path", "PCAP Path"], rows) + [""]
        for path, read in reads.items():
            owners = [tid for tid, t in tasks.items()
                      if t.get("report_path") == path and is_completed(t)]
            out += _summary_block(read, owners)
    if advisories:
        out += ["### Advisories", "",
                "Heuristic checks, not conclusions; they flag what deserves a second look.", ""]
        out += [f"- {inline(note, 1000)}" for note in advisories] + [""]
    return out


def actions(items: Sequence[str], *, concluded: bool) -> Lines:
    out = ["## Recommended Actions", ""]
    if not items:
        return out + ["None given." if concluded else "None.", ""]
    return out + [f"{n}. {inline(item, 1000)}" for n, item in enumerate(items, 1)] + [""]


def _hypothesis_index(state: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(h.get("id")): h for h in _entries(state.get("hypothesis_log")) if h.get("id")}


def unresolved(state: Mapping[str, Any]) -> Lines:
    """From the log alone (the final call's lists are already applied to it)."""
    index = _hypothesis_index(state)
    conflicts = _entries(state.get("evidence_conflicts"))
    unverifiable = [i for i, h in index.items() if h.get("state") == "UNVERIFIABLE"]
    contradicted = [i for i, h in index.items() if h.get("state") == "CONTRADICTED"]
    still_open = [i for i, h in index.items() if h.get("state") in _OPEN_STATES]
    out = ["## Unverifiable and Contradicted Hypotheses", ""]
    for hyp in unverifiable:
        h = index.get(hyp, {})
        ids = [str(e.get("audit_id")) for e in _entries(h.get("denial_events"))]
        out.append(f"- **{inline(hyp, 40)}** unverifiable — {inline(h.get('description', ''))}"
                   f" (denied {h.get('denial_count', len(ids))} time(s)"
                   + (f"; audit_ids {inline(', '.join(ids))})" if ids else ")"))
    for hyp in contradicted:
        h = index.get(hyp, {})
        out.append(f"- **{inline(hyp, 40)}** contradicted — {inline(h.get('description', ''))}")
    for hyp in still_open:
        out.append(f"- **{inline(hyp, 40)}** still open ({inline(index[hyp].get('state'))}) "
                   f"— {inline(index[hyp].get('description', ''))}")
    if len(out) == 2:
        out.append("None: no hypothesis was left unverifiable, contradicted or open.")
    if conflicts:
        out += ["", "### Evidence conflicts", ""]
        for c in conflicts:
            out.append(
                f"- {inline(c.get('hypothesis_id', '?'), 40)}: audit_ids "
                f"{inline(', '.join(_ids(c.get('conflicting_audit_ids'))) or '?')}; "
                f"resolved {inline(c.get('resolution') or 'not yet')} by "
                f"{inline(c.get('higher_fidelity_source') or 'no higher-fidelity source')}"
                + (f" — {inline(c['description'])}" if c.get("description") else ""))
    return out + [""]


def integrity(session_id: str, audit: AuditEvidence, skipped_tasks: int,
              integrity_warning: str | None) -> Lines:
    sid = inline(session_id, 120)
    out = ["## Integrity Statement", "",
           "All evidence is cited by audit_id from the append-only, hash-chained audit log "
           f"(`ghost audit verify {sid}`). Capture states come from the append-only task "
           "registry (the last record written for each task). Raw command output is not "
           "reproduced in this report; it stays in the audit log "
           f"(`ghost audit export {sid}` writes it as JSONL)."]
    if audit.skipped or skipped_tasks:
        out += ["", f"Unreadable records skipped: {audit.skipped} audit, {skipped_tasks} task."]
    if integrity_warning:
        out += ["", f"**Session state integrity warning:** {inline(integrity_warning)} The "
                "session state failed its checksum when it was loaded and the engineer chose "
                "to continue, so the Hypotheses Log may not be trustworthy. The audit log is "
                f"checked separately: run `ghost audit verify {sid}`."]
    return out + [""]
