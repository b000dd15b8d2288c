"""How an investigation ends, said in its thread: the RCA summary, or why it stopped
(Gemini failed, an unexpected error, an interrupted RCA upload) and how to resume it."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.chat.records import InvestigationLike


@dataclass(frozen=True)
class RcaSummary:
    session_id: str
    confidence: str
    root_cause: str
    actions: tuple[str, ...] = field(default_factory=tuple)
    turns: int = 0
    duration_s: float | None = None

    def duration(self) -> str:
        minutes, seconds = divmod(int(self.duration_s or 0), 60)
        return f"{minutes}m {seconds:02d}s"


def rca_summary(inv: InvestigationLike) -> RcaSummary:
    rca = (inv.engine_state or {}).get("rca") or {}
    return RcaSummary(
        session_id=inv.session_id, confidence=str(rca.get("confidence") or "low"),
        root_cause=str(rca.get("root_cause") or "Not determined."),
        actions=tuple(str(a) for a in rca.get("recommended_actions") or []),
        turns=int(inv.state.get("turn_count") or 0), duration_s=rca.get("duration_s"))


def brain_failure(session_id: str, detail: str, *, transient: bool = True) -> str:
    """Gemini failed: say why, and what to do first (wait, or fix the worker's settings)."""
    detail = detail.strip().rstrip(".")
    if transient:
        then = f"When Gemini answers again, run `/ghost resume {session_id}`."
    else:
        then = ("Waiting will not fix this. Once it is fixed (a changed setting such as "
                "GEMINI_API_KEY or GHOST_MODEL needs the worker restarted), run "
                f"`/ghost resume {session_id}`.")
    return f"Gemini could not be used: {detail}. Everything so far is saved. {then}"


def model_outage(detail: str, until_hhmm: str) -> str:
    """Gemini became unavailable: said once per outage; Ghost waits and goes on by itself."""
    detail = detail.strip().rstrip(".")
    return (f"Gemini is unavailable; retrying until {until_hhmm} UTC. The investigation is "
            "saved and goes on where it was as soon as Gemini answers; nothing to do. "
            f"({detail})")


def parked(session_id: str, detail: str, minutes: float) -> str:
    """Gemini stayed unavailable past GHOST_GEMINI_OUTAGE_S: parked, not failed."""
    detail = detail.strip().rstrip(".")
    return (f"Gemini has been unavailable for {minutes:.0f} min ({detail}), so Ghost stopped "
            "asking and parked the investigation where it was; nothing is lost. Press Resume "
            f"(or `/ghost resume {session_id}`) once Gemini answers again.")


def unexpected_failure(session_id: str, detail: str) -> str:
    return (f"Ghost hit an error it did not expect: {detail}. Everything so far is saved; "
            f"`/ghost resume {session_id}` tries again. If it keeps failing, check the worker's "
            "log for this session id.")


def rca_interrupted(session_id: str) -> str:
    return (f"The upload of the RCA (`ghost_rca_{session_id}.md`) was interrupted — Ghost "
            "restarted or Slack did not answer. If the file is not in this thread, run "
            f"`/ghost resume {session_id}` to upload it again. The report is also saved in "
            "Ghost's audit directory.")
