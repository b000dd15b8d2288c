"""The honest end of a replay that cannot follow what ran.

A replay is a fixed script: when an engineer denies or edits a step the script depends on, and
the file has no branch for it, the replay must not narrate results that never existed. Instead
its last turn says so, cleans up the captures it left running, and calls
``complete_investigation`` with what the history had established by then: the hypotheses
confirmed or refuted so far keep their state (and their evidence), the open ones are listed
unverifiable. The RCA then tells the same story.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.engine.hypotheses import apply_reported, apply_text
from lab.replay_follow import Divergence, task_answers

#: task states after which a capture needs no cleanup_task (Ghost cleaned it up itself)
_SETTLED = ("DONE", "CANCELLED", "FAILED", "TIMED_OUT", "ABANDONED")
RE_PLAN = ("This demo plays the scenario's replay, a fixed script that cannot re-plan; with "
           "GEMINI_API_KEY set, Gemini would re-plan from here.")


def hypothesis_states(history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The hypothesis log the model's turns imply, read as the engine reads them (prose
    first, then the ``hypotheses`` arguments)."""
    state: dict[str, Any] = {"hypothesis_log": [], "denial_tracker": {},
                             "consecutive_denial_counter": {}, "evidence_conflicts": [],
                             "active_hypothesis_ids": []}
    for turn in history:
        if turn.get("role") != "model":
            continue
        parts = [p for p in turn.get("parts") or [] if isinstance(p, Mapping)]
        text = "".join(str(p["text"]) for p in parts
                       if isinstance(p.get("text"), str) and not p.get("thought"))
        apply_text(state, text, "")
        for part in parts:
            call = part.get("functionCall")
            if isinstance(call, Mapping) and isinstance(call.get("args"), Mapping):
                reported = call["args"].get("hypotheses")
                if isinstance(reported, list):
                    apply_reported(state, reported, "")
    return list(state["hypothesis_log"])


def _cleanups_called(history: Sequence[Mapping[str, Any]]) -> set[str]:
    called: set[str] = set()
    for turn in history:
        if turn.get("role") != "model":
            continue
        for part in turn.get("parts") or []:
            call = part.get("functionCall") if isinstance(part, Mapping) else None
            if isinstance(call, Mapping) and call.get("name") in ("cleanup_task", "cancel_task"):
                args = call.get("args")
                if isinstance(args, Mapping) and args.get("task_id"):
                    called.add(str(args["task_id"]))
    return called


def open_captures(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """Capture tasks still holding resources, that no cleanup_task was asked for yet."""
    called = _cleanups_called(history)
    return [task_id for task_id, seen in task_answers(history).items()
            if seen and str(seen[-1].get("state") or "") not in _SETTLED
            and task_id not in called]


def _described(entries: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{e['id']} — {str(e.get('description') or '(no description)').rstrip('.')}"
                     for e in entries)


def honest_end(divergence: Divergence, history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The last model turn: what happened, the cleanup still owed, and the conclusion that
    records only what was established."""
    log = hypothesis_states(history)
    confirmed = [h for h in log if h.get("state") == "CONFIRMED"]
    refuted = [h for h in log if h.get("state") == "REFUTED"]
    still_open = [h for h in log if h.get("state") not in ("CONFIRMED", "REFUTED",
                                                            "UNVERIFIABLE")]
    decision = ("the engineer's decision" if divergence.kind == "denied"
                or "engineer" in divergence.what else "what ran")
    captures = open_captures(history)
    text = (f"The scripted investigation cannot follow {decision}: {divergence.what}. {RE_PLAN} "
            "Ending the investigation with what was established so far"
            + (f", after cleaning up {', '.join(captures)}." if captures else "."))
    summary = [f"The scripted investigation stopped when {divergence.what}."]
    if confirmed:
        summary.append(f"Established before that: {_described(confirmed)}.")
    else:
        summary.append("No root cause was established before that.")
    if refuted:
        summary.append(f"Ruled out: {_described(refuted)}.")
    if still_open:
        summary.append(f"Left open, so unverifiable: {_described(still_open)}.")
    args: dict[str, Any] = {
        "confidence": "medium" if confirmed else "low",
        "root_cause_summary": " ".join(summary),
        "confirmed_hypotheses": [h["id"] for h in confirmed],
        "refuted_hypotheses": [h["id"] for h in refuted],
        "unverifiable_hypotheses": [h["id"] for h in still_open],
        "recommended_actions": [
            "Run the investigation again with GEMINI_API_KEY set: Gemini re-plans around the "
            "engineer's decision.",
            "Or run the demo again and approve the step to see the scripted path to the end."],
    }
    parts: list[dict[str, Any]] = [{"text": text}]
    parts += [{"functionCall": {"name": "cleanup_task", "args": {"task_id": task_id}}}
              for task_id in captures]
    parts.append({"functionCall": {"name": "complete_investigation", "args": args}})
    return {"role": "model", "parts": parts}
