"""Hypotheses and denials: the §8 bookkeeping the loop keeps (ghost-design §4 and §6).

The model reports hypotheses through the optional ``hypotheses`` argument that every tool
accepts (``[{id, description, state, evidence_audit_ids}]``). When it does not, the spec's text
convention is the fallback: "Hypothesis H1: NSG blocks 6379" opens one, "H1 CONFIRMED" (or
REFUTED / CONTRADICTED / UNVERIFIABLE) changes it. Ids have one canonical form, lower case
("h1"), and match case-insensitively ("H1 CONFIRMED" resolves h1).

Denials are counted per active hypothesis; the loop injects ``_meta`` into the function response
so the model pivots, and marks a hypothesis UNVERIFIABLE at the third denial.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

MAX_DENIALS_PER_HYPOTHESIS = 3
MAX_ACTIVE = 3

STATES = ("ACTIVE", "CONFIRMED", "REFUTED", "CONTRADICTED", "UNVERIFIABLE",
          "DENIED_ONCE", "DENIED_TWICE")
TERMINAL = ("CONFIRMED", "REFUTED", "UNVERIFIABLE")
#: what the model may report; the DENIED_* states are the loop's own bookkeeping
REPORTABLE = ("ACTIVE", "CONFIRMED", "REFUTED", "CONTRADICTED", "UNVERIFIABLE")

# "Hypothesis H1: …" (markdown emphasis allowed); the description stops at the end of the line
# or where the next "Hypothesis Hn" starts, so two hypotheses on one line are both opened
_OPEN = re.compile(r"\bHypothesis\s+(H\d{1,3})[*_]*\s*[:\-\u2014]\s*[*_]*\s*"
                   r"((?:(?!\bHypothesis\s+H\d)[^\n]){3,300})", re.IGNORECASE)
# the first sentence is the hypothesis; what follows is the model's plan ("Checking NSGs first.")
_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)\]'\"`])[.!?]\s+(?=[A-Z])")
_CHANGE = re.compile(r"\b([Hh]\d{1,3})\s*(?:is\s+|:\s*|\u2014\s*|-\s*)?"
                     r"(CONFIRMED|REFUTED|CONTRADICTED|UNVERIFIABLE)\b")
#: an audit id as Ghost writes them: ``{session_id}_{seq:03d}``
_AUDIT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*_\d{3,}\b")
#: the final call's lists, applied to the log before the RCA is written
COMPLETION_LISTS = (("confirmed_hypotheses", "CONFIRMED"), ("refuted_hypotheses", "REFUTED"),
                    ("contradicted_hypotheses", "CONTRADICTED"),
                    ("unverifiable_hypotheses", "UNVERIFIABLE"))


def norm_id(raw: object) -> str:
    """The one canonical form of a hypothesis id ("H1", " h1 " → "h1"): ids match
    case-insensitively everywhere, in the log, the tracker and the RCA."""
    return str(raw).strip().lower()


def _cited(raw: Iterable[Any], known: Collection[str] | None) -> list[str]:
    """The audit ids the model cited that are real records of this investigation."""
    ids = [str(a).strip() for a in raw if isinstance(a, str | int) and str(a).strip()]
    return [a for a in ids if known is None or a in known]


def _description(raw: str) -> str:
    """The stated hypothesis: its first sentence, without markdown emphasis or end marks."""
    first = _SENTENCE_END.split(raw.strip(), maxsplit=1)[0]
    return first.strip().strip("*_").strip().rstrip(".;,:").strip()


def _find(state: Mapping[str, Any], hid: str) -> dict[str, Any] | None:
    for entry in state["hypothesis_log"]:
        if norm_id(entry.get("id") or "") == hid:
            return entry  # type: ignore[no-any-return]
    return None


def _open(state: dict[str, Any], hid: str, description: str, now: str) -> dict[str, Any]:
    entry = _find(state, hid)
    if entry is None:
        entry = {
            "id": hid,
            "description": description.strip(),
            "state": "ACTIVE",
            "denial_count": 0,
            "created_at": now,
            "resolved_at": None,
            "resolving_audit_id": None,
            "denial_events": [],
        }
        state["hypothesis_log"].append(entry)
        state["denial_tracker"].setdefault(hid, 0)
        state["consecutive_denial_counter"].setdefault(hid, 0)
    elif description.strip() and not entry.get("description"):
        entry["description"] = description.strip()
    return entry


def _reopens(state: Mapping[str, Any], old: object, new: str) -> bool:
    """Resume re-validation (ghost-design §2): a CONFIRMED or REFUTED hypothesis that new
    evidence puts in doubt goes back to ACTIVE (or CONTRADICTED). UNVERIFIABLE stays terminal:
    nothing can be tested for it any more (test plan M8)."""
    return (bool(state.get("is_resume")) and old in ("CONFIRMED", "REFUTED")
            and new in ("ACTIVE", "CONTRADICTED"))


def _set_state(state: dict[str, Any], entry: dict[str, Any], new: str, now: str,
               evidence: list[str], conflicts: list[dict[str, Any]]) -> bool:
    """Move a hypothesis; False when the move is not allowed (a terminal state stays)."""
    old = entry.get("state")
    if new == old:
        return True
    if old in TERMINAL and not _reopens(state, old, new):
        return False
    if new == "ACTIVE" and old not in TERMINAL:
        return True  # DENIED_ONCE/TWICE go back to ACTIVE on a success, not on a report
    entry["state"] = new
    if new in TERMINAL:
        entry["resolved_at"] = now
        # only a record that is evidence for it: one the model cited, never a stand-in
        entry["resolving_audit_id"] = evidence[-1] if evidence else None
    elif old in TERMINAL:
        entry["resolved_at"] = None
        entry["resolving_audit_id"] = None
    if new == "CONTRADICTED" and not any(
            c.get("hypothesis_id") == entry["id"] for c in state["evidence_conflicts"]):
        conflicts.append({
            "hypothesis_id": entry["id"],
            "conflicting_audit_ids": list(evidence),
            "higher_fidelity_source": None,
            "resolution": None,
            "description": "Marked CONTRADICTED by the model; awaiting higher-fidelity evidence.",
        })
    if old == "CONTRADICTED" and new in ("CONFIRMED", "REFUTED"):
        for conflict in state["evidence_conflicts"]:
            if conflict.get("hypothesis_id") == entry["id"] and not conflict.get("resolution"):
                conflict["resolution"] = new
                conflict["conflicting_audit_ids"] = sorted(
                    set(conflict.get("conflicting_audit_ids") or []) | set(evidence))
    return True


def _refresh_active(state: dict[str, Any]) -> None:
    active = [e["id"] for e in state["hypothesis_log"] if e.get("state") not in TERMINAL]
    state["active_hypothesis_ids"] = active[:MAX_ACTIVE] if len(active) > MAX_ACTIVE else active


def apply_reported(state: dict[str, Any], reported: Iterable[Mapping[str, Any]],
                   now: str, known_audit_ids: Collection[str] | None = None) -> None:
    """Merge the ``hypotheses`` argument of a tool call into the session state.

    A resolution cites the ``evidence_audit_ids`` the model gave that are real records
    (``known_audit_ids``; None accepts every citation); citing none leaves it uncited.
    """
    conflicts: list[dict[str, Any]] = []
    for item in reported:
        if not isinstance(item, Mapping) or not item.get("id"):
            continue
        hid = norm_id(item["id"])
        entry = _open(state, hid, str(item.get("description") or ""), now)
        new = str(item.get("state") or "ACTIVE").upper()
        cited = item.get("evidence_audit_ids")
        evidence = _cited(cited, known_audit_ids) if isinstance(cited, list) else []
        if new in REPORTABLE:
            _set_state(state, entry, new, now, evidence, conflicts)
    state["evidence_conflicts"].extend(conflicts)
    _refresh_active(state)


def apply_text(state: dict[str, Any], text: str, now: str,
               known_audit_ids: Collection[str] | None = None) -> None:
    """The fallback: read "Hypothesis H1: …" and "H1 CONFIRMED" from the model's prose.

    A change cites the audit ids written on the same line ("H1 CONFIRMED (ghost_…_004)").
    """
    if not text:
        return
    conflicts: list[dict[str, Any]] = []
    for match in _OPEN.finditer(text):
        _open(state, norm_id(match.group(1)), _description(match.group(2)), now)
    for match in _CHANGE.finditer(text):
        entry = _find(state, norm_id(match.group(1)))
        if entry is not None:
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.end())
            line = text[start:] if end < 0 else text[start:end]
            evidence = _cited(_AUDIT_ID.findall(line), known_audit_ids)
            _set_state(state, entry, match.group(2).upper(), now, evidence, conflicts)
    state["evidence_conflicts"].extend(conflicts)
    _refresh_active(state)


def apply_completion(state: dict[str, Any], completion: Mapping[str, Any],
                     now: str) -> list[str]:
    """Apply ``complete_investigation``'s lists to the log, so that the RCA's summary, table
    and unverifiable section say the same thing. Returns a note per listed id that could not
    be applied (a hypothesis already in another terminal state keeps it)."""
    notes: list[str] = []
    conflicts: list[dict[str, Any]] = []
    for key, new in COMPLETION_LISTS:
        listed = completion.get(key)
        if not isinstance(listed, list):
            continue
        for raw in listed:
            if not isinstance(raw, str | int) or not str(raw).strip():
                continue
            hid = norm_id(raw)
            entry = _find(state, hid) or _open(
                state, hid, "(named only in complete_investigation)", now)
            if not _set_state(state, entry, new, now, [], conflicts):
                notes.append(f"complete_investigation listed {hid} as {new.lower()}, but it "
                             f"was already {entry.get('state')}; the log keeps "
                             f"{entry.get('state')}.")
    state["evidence_conflicts"].extend(conflicts)
    _refresh_active(state)
    return notes


def record_denial(state: dict[str, Any], *, turn: int, command: str,
                  denial_reason: str | None, audit_id: str | None, now: str) -> dict[str, Any]:
    """Count a denial against every active hypothesis; return the ``_meta`` to inject."""
    meta: dict[str, Any] = {}
    if denial_reason:
        meta["denial_reason"] = denial_reason
    for hid in list(state["active_hypothesis_ids"]):
        count = int(state["denial_tracker"].get(hid, 0)) + 1
        state["denial_tracker"][hid] = count
        state["consecutive_denial_counter"][hid] = int(
            state["consecutive_denial_counter"].get(hid, 0)) + 1
        entry = _find(state, hid)
        if entry is not None:
            entry["denial_count"] = count
            entry["denial_events"].append({"turn": turn, "command": command,
                                           "denial_reason": denial_reason or "",
                                           "audit_id": audit_id})
        meta["denial_count"] = max(count, int(meta.get("denial_count", 0)))
        if count == 1:
            meta["pivot_instruction"] = (
                "Command denied. Consider an alternative diagnostic approach.")
            if entry is not None:
                entry["state"] = "DENIED_ONCE"
        elif count == 2:
            meta["approaching_threshold"] = True
            meta["warning"] = (f"Second denial for hypothesis {hid}. If denied again, "
                               "hypothesis will be marked UNVERIFIABLE.")
            if entry is not None:
                entry["state"] = "DENIED_TWICE"
        if count >= MAX_DENIALS_PER_HYPOTHESIS:
            meta["denial_threshold_reached"] = True
            if entry is not None:
                entry["state"] = "UNVERIFIABLE"
                entry["resolved_at"] = now
                entry["resolving_audit_id"] = audit_id
            state["active_hypothesis_ids"].remove(hid)
            meta["instruction"] = (
                f"Hypothesis {hid} marked UNVERIFIABLE. Move to next hypothesis or call "
                "complete_investigation if active_hypothesis_ids is now empty.")
    return meta


def record_success(state: dict[str, Any]) -> None:
    """A result that was not a denial resets the consecutive counters (not the totals)."""
    for hid in state["active_hypothesis_ids"]:
        state["consecutive_denial_counter"][hid] = 0
        entry = _find(state, hid)
        if entry is not None and entry.get("state") in ("DENIED_ONCE", "DENIED_TWICE"):
            entry["state"] = "ACTIVE"
