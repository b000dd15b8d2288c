"""Hypotheses and denials: the §8 bookkeeping the loop keeps (ghost-design §4 and §6).

The model reports hypotheses through the optional ``hypotheses`` argument that every tool
accepts (``[{id, description, state, evidence_audit_ids}]``). When it does not, the spec's text
convention is the fallback: "Hypothesis H1: NSG blocks 6379" opens one, "H1 CONFIRMED" (or
REFUTED / CONTRADICTED / UNVERIFIABLE) changes it. Ids are normalised to lower case ("h1").

Denials are counted per active hypothesis; the loop injects ``_meta`` into the function response
so the model pivots, and marks a hypothesis UNVERIFIABLE at the third denial.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MAX_DENIALS_PER_HYPOTHESIS = 3
MAX_ACTIVE = 3

STATES = ("ACTIVE", "CONFIRMED", "REFUTED", "CONTRADICTED", "UNVERIFIABLE",
          "DENIED_ONCE", "DENIED_TWICE")
TERMINAL = ("CONFIRMED", "REFUTED", "UNVERIFIABLE")

# "Hypothesis H1: …" (markdown emphasis allowed); the description stops at the end of the line
# or where the next "Hypothesis Hn" starts, so two hypotheses on one line are both opened
_OPEN = re.compile(r"\bHypothesis\s+(H\d{1,3})[*_]*\s*[:\-\u2014]\s*[*_]*\s*"
                   r"((?:(?!\bHypothesis\s+H\d)[^\n]){3,300})", re.IGNORECASE)
# the first sentence is the hypothesis; what follows is the model's plan ("Checking NSGs first.")
_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)\]'\"`])[.!?]\s+(?=[A-Z])")
_CHANGE = re.compile(r"\b(H\d{1,3})\s*(?:is\s+|:\s*|\u2014\s*|-\s*)?"
                     r"(CONFIRMED|REFUTED|CONTRADICTED|UNVERIFIABLE)\b")


def _norm_id(raw: str) -> str:
    return raw.strip().lower()


def _description(raw: str) -> str:
    """The stated hypothesis: its first sentence, without markdown emphasis or end marks."""
    first = _SENTENCE_END.split(raw.strip(), maxsplit=1)[0]
    return first.strip().strip("*_").strip().rstrip(".;,:").strip()


def _find(state: Mapping[str, Any], hid: str) -> dict[str, Any] | None:
    for entry in state["hypothesis_log"]:
        if entry.get("id") == hid:
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


def _set_state(state: dict[str, Any], entry: dict[str, Any], new: str, now: str,
               evidence: list[str], conflicts: list[dict[str, Any]]) -> None:
    old = entry.get("state")
    if old in TERMINAL or new == old:
        return
    entry["state"] = new
    if new in TERMINAL:
        entry["resolved_at"] = now
        entry["resolving_audit_id"] = evidence[-1] if evidence else None
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


def _refresh_active(state: dict[str, Any]) -> None:
    active = [e["id"] for e in state["hypothesis_log"] if e.get("state") not in TERMINAL]
    state["active_hypothesis_ids"] = active[:MAX_ACTIVE] if len(active) > MAX_ACTIVE else active


def apply_reported(state: dict[str, Any], reported: Iterable[Mapping[str, Any]],
                   now: str, last_audit_id: str | None = None) -> None:
    """Merge the ``hypotheses`` argument of a tool call into the session state.

    A resolution that cites no evidence is attributed to the latest command (``last_audit_id``).
    """
    conflicts: list[dict[str, Any]] = []
    for item in reported:
        if not isinstance(item, Mapping) or not item.get("id"):
            continue
        hid = _norm_id(str(item["id"]))
        entry = _open(state, hid, str(item.get("description") or ""), now)
        new = str(item.get("state") or "ACTIVE").upper()
        cited = item.get("evidence_audit_ids")
        evidence = [str(a) for a in cited if a] if isinstance(cited, list) else []
        if not evidence and last_audit_id:
            evidence = [last_audit_id]
        if new in STATES and new != "ACTIVE":
            _set_state(state, entry, new, now, evidence, conflicts)
    state["evidence_conflicts"].extend(conflicts)
    _refresh_active(state)


def apply_text(state: dict[str, Any], text: str, now: str,
               last_audit_id: str | None = None) -> None:
    """The fallback: read "Hypothesis H1: …" and "H1 CONFIRMED" from the model's prose."""
    if not text:
        return
    conflicts: list[dict[str, Any]] = []
    for match in _OPEN.finditer(text):
        _open(state, _norm_id(match.group(1)), _description(match.group(2)), now)
    for match in _CHANGE.finditer(text):
        entry = _find(state, _norm_id(match.group(1)))
        if entry is not None:
            evidence = [last_audit_id] if last_audit_id else []
            _set_state(state, entry, match.group(2).upper(), now, evidence, conflicts)
    state["evidence_conflicts"].extend(conflicts)
    _refresh_active(state)


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
