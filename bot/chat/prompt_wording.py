"""What Ghost says when it needs a person: after a text-only answer (Continue or Done) or
at the turn limit (Extend or write the RCA). Which prompt is answered, once, is
``bot.chat.prompts``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    """Ghost needs a person: after a text-only answer, or at the turn limit."""

    kind: str  # awaiting_user | turn_limit
    session_id: str
    text: str
    #: which prompt this is (``bot.chat.prompts``): its buttons carry it, so a click on an
    #: old prompt is told it was answered instead of acting on the newest one
    key: str | None = None


def prompt_for(kind: str, session_id: str, max_turns: int, key: str | None = None) -> Prompt:
    if kind == "parked":
        return Prompt(kind, session_id, "Gemini was unavailable for too long, so Ghost parked "
                      "this investigation where it was. Resume it once Gemini answers.", key)
    if kind == "turn_limit":
        return Prompt(kind, session_id, f"Ghost reached its limit of {max_turns} turns. Extend "
                      "by 10 turns, or write the RCA with what it has.", key)
    return Prompt(kind, session_id, "Ghost is waiting for you. Continue (optionally with an "
                  "instruction — or reply with @ghost in this thread), or Done to write the RCA.",
                  key)
