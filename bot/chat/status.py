"""Where an investigation stands, as people read it: the status message edited in place
(phase, turn, hypotheses, captures, cost so far), the `status` and `list` replies, and the
status a person would call it ("interrupted" for a terminal run whose process died).

Front-end-neutral: Slack and Teams render ``StatusView`` (user ids stay raw, each platform
has its own mention syntax); the terminal's session table and the contract's session document
share ``shown_status``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.chat.captures import capture_lines
from bot.chat.records import InvestigationLike

PHASES = {
    "queued": "Queued — a worker will pick it up in a moment",
    "running": "Investigating",
    "awaiting_approval": "Waiting for an approval",
    "awaiting_user": "Waiting for you: Continue or Done",
    "parked": "Parked — Gemini stayed unavailable; press Resume once it answers",
    "completed": "Finished — RCA posted below",
    "cancelled": "Cancelled",
    "failed": "Stopped on an error — see the thread",
}


@dataclass(frozen=True)
class Hypothesis:
    id: str
    description: str
    state: str


@dataclass(frozen=True)
class StatusView:
    """The one status message per investigation, edited in place."""

    session_id: str
    symptom: str
    requested_by: str | None
    status: str
    phase: str
    turn: int
    max_turns: int
    hypotheses: tuple[Hypothesis, ...] = ()
    tasks: tuple[str, ...] = ()
    denials: int = 0
    #: captures' progress (task id, state, polls), from ``capture_lines``
    captures: tuple[str, ...] = ()
    #: tokens, estimated cost and time so far (core.engine.usage.status_usage), when the
    #: model reported usage
    usage: str = ""
    #: queued and not started: how many investigations are ahead of it
    ahead: int | None = None

    def fingerprint(self) -> str:
        """Equal fingerprints mean an edit would change nothing (so none is sent)."""
        return repr(self)


def queued_words(ahead: int | None) -> str:
    """Where a queued investigation stands: "Queued: 3 investigations ahead"."""
    if ahead is None:
        return PHASES["queued"]
    if ahead == 0:
        return "Queued: next in line — a worker picks it up in a moment"
    return f"Queued: {ahead} investigation{'s' if ahead != 1 else ''} ahead"


def status_view(inv: InvestigationLike, *, ahead: int | None = None) -> StatusView:
    state, engine = inv.state, inv.engine_state or {}
    hyps = tuple(Hypothesis(str(h.get("id")), str(h.get("description") or ""),
                            str(h.get("state") or ""))
                 for h in state.get("hypothesis_log") or [] if isinstance(h, Mapping))
    denials = sum(int(v) for v in (state.get("denial_tracker") or {}).values()
                  if isinstance(v, int))
    outage = engine.get("outage") or {}
    phase = PHASES.get(inv.status, inv.status)
    if inv.status == "queued" and ahead is not None:
        phase = queued_words(ahead)
    elif outage and inv.status in ("queued", "running"):  # the one state story's words
        phase = (f"Waiting for Gemini — unavailable, retrying until "
                 f"{str(outage.get('until') or '')[11:16]} UTC")
    return StatusView(
        session_id=inv.session_id, symptom=inv.symptom, requested_by=inv.requested_by,
        status=inv.status, phase=phase,
        turn=int(state.get("turn_count") or 0), max_turns=int(engine.get("max_turns") or 50),
        hypotheses=hyps, tasks=tuple(str(t) for t in state.get("active_task_ids") or []),
        denials=denials, usage=_usage(engine), ahead=ahead,
    )


def _usage(engine: Mapping[str, Any]) -> str:
    """Tokens, estimated cost (GHOST_PRICES) and time so far, when the model reported usage."""
    from core.engine.usage import recorded, status_usage
    from core.session_state import utc_now

    if not recorded(engine):
        return ""
    from bot.settings import load_settings

    return status_usage(engine, load_settings().prices, utc_now())


def list_lines(investigations: Sequence[InvestigationLike]) -> list[str]:
    if not investigations:
        return ["No investigations yet. Start one with `/ghost investigate <symptom>`."]
    return [f"`{i.session_id}` — {PHASES.get(i.status, i.status)} — {i.symptom[:80]}"
            for i in investigations]


def status_line(store: Any, sid: str, *, list_hint: str, captures: bool = False) -> str:
    """`status [SID]` on any platform: one line about an investigation (default: the newest);
    with ``captures``, the status message's Captures lines under it (``capture_lines``)."""
    from core.errors import UnknownInvestigation

    if sid:
        try:
            inv = store.get_investigation(sid)
        except UnknownInvestigation:
            return f"No investigation `{sid}`. `{list_hint}` shows recent ones."
    else:
        recent = store.list_investigations(limit=1)
        if not recent:
            return "No investigations yet."
        inv = recent[0]
    view = status_view(inv)
    hyps = "; ".join(f"{h.id} {h.state}" for h in view.hypotheses) or "none yet"
    line = (f"`{view.session_id}` — {view.phase}. Turn {view.turn}/{view.max_turns}, "
            f"denials {view.denials}, hypotheses: {hyps}.")
    tasks = capture_lines(inv.conversation_ref) if captures else ()
    return line + ("\nCaptures:" + "".join(f"\n• {t}" for t in tasks) if tasks else "")


def shown_status(inv: Any, now: datetime) -> str:
    """The state every view shows (``bot.state.state_of``): the status, or "interrupted" for
    a terminal run nobody holds any more."""
    from bot.state import state_of

    return state_of(inv, now=now).name
