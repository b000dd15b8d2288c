"""Where an investigation stands, once, for every view (issue 34: one state story).

`ghost session list` (table and `--json`), `ghost status` (text and `--json`), `ghost session
show`, `ghost watch` and the chat status all ask :func:`state_of`, so they never contradict each
other: a terminal run whose process is gone is ``interrupted`` everywhere (not ``running`` in
one view and ``interrupted`` in another), and what can be done with it is said in words true for
it — resume with a key, or `ghost demo` again for a lab run without one.

States: the stored ones (``queued``, ``running``, ``awaiting_approval``, ``awaiting_user``,
``parked``, ``completed``, ``cancelled``, ``failed``) plus ``interrupted``: a terminal
investigation still open in the database whose process no longer holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

#: the statuses in which an investigation may still continue
LIVE_STATUSES = ("queued", "running", "awaiting_approval", "awaiting_user", "parked")
FINISHED = ("completed", "cancelled", "failed")
CHAT = ("slack", "teams")


@dataclass(frozen=True)
class State:
    """An investigation's state as every view shows it."""

    name: str
    #: the status column as stored (``name`` differs only for ``interrupted``)
    stored: str
    #: approval | instruction | turn_limit_decision | model | resume | None
    waiting_for: str | None
    #: a process holds its lease right now (a worker, or the terminal that runs it)
    worker_active: bool
    resumable: bool
    #: what moves it on, for a person or a script (a command), or None
    resume_command: str | None
    #: one line for people: where it stands and what can be done
    words: str

    @property
    def interrupted(self) -> bool:
        return self.name == "interrupted"


def held(inv: Any, now: datetime) -> bool:
    """Whether a live process holds the investigation's lease (a terminal run on this host
    whose process is gone does not, whatever its lease says)."""
    expires = getattr(inv, "lease_expires_at", None)
    if not inv.lease_owner or expires is None:
        return False
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    if expires <= now:
        return False
    from bot.terminal.holders import is_gone, parse

    holder = parse(inv.lease_owner)
    return not (holder is not None and is_gone(holder))


def _key_available() -> bool:
    from bot.settings import load_settings

    try:
        return bool(load_settings().gemini_api_key)
    except Exception:  # noqa: BLE001 - settings that do not load: say what is generic
        return True


def _terminal_resume(inv: Any, key: bool | None) -> tuple[str | None, str]:
    """What continues a terminal investigation, in words true for it."""
    sid = inv.session_id
    if key is None:
        key = _key_available()
    resume = f"ghost investigate --resume {sid}"
    if inv.lab:
        if key:
            return resume, (f"`{resume}` continues it, or `ghost demo` again starts a fresh "
                            "lab run")
        return "ghost demo", ("a lab run without a Gemini key: run `ghost demo` again for a "
                              "fresh run (with GEMINI_API_KEY set, "
                              f"`{resume}` continues this one)")
    if key:
        return resume, f"`{resume}` continues it where it stopped"
    return resume, f"set GEMINI_API_KEY, then `{resume}` continues it where it stopped"


def state_of(inv: Any, *, now: datetime | None = None, pending: Sequence[Any] = (),
             key_available: bool | None = None) -> State:
    """The one answer to "where does it stand, and what moves it on"."""
    now = now or datetime.now(UTC)
    sid, status, platform = inv.session_id, str(inv.status), inv.platform
    engine = inv.engine_state or {}
    active = held(inv, now)
    terminal = platform == "terminal"
    chat = platform in CHAT
    resume_chat = f"/ghost resume {sid}"
    if terminal and status in LIVE_STATUSES and not active:
        command, words = _terminal_resume(inv, key_available)
        return State("interrupted", status, "resume", False, True, command,
                     f"interrupted: its `ghost investigate` is no longer running; {words}")
    if status == "completed":
        return State(status, status, None, active, False, None, "finished; the RCA is ready")
    if status == "awaiting_approval":
        approval = pending[0].approval_id if pending else None
        if approval and terminal:  # its keyboard, or `ghost approvals decide` by its owner
            command = f"ghost approvals decide {approval} approve --as {inv.requested_by}"
        else:
            command = f"ghost approvals decide {approval} approve --as USER" if approval \
                else None
        return State(status, status, "approval", active, bool(approval), command,
                     "waiting for an approval" + (f": `{command}`" if command else ""))
    if status == "awaiting_user":
        waiting = "turn_limit_decision" if engine.get("phase") == "turn_limit" \
            else "instruction"
        command = resume_chat if chat else f"ghost investigate --resume {sid}"
        what = "Extend or Generate RCA" if waiting == "turn_limit_decision" \
            else "Continue or Done"
        return State(status, status, waiting, active, True, command,
                     f"waiting for a person: {what}")
    if status == "parked":
        command = resume_chat if chat else f"ghost investigate --resume {sid}"
        return State(status, status, "resume", active, True, command,
                     "parked: Gemini stayed unavailable past GHOST_GEMINI_OUTAGE_S; resume it "
                     f"once Gemini answers (`{command}`)")
    if status in ("failed", "cancelled"):
        if terminal:
            command, words = _terminal_resume(inv, key_available)
        else:
            command = resume_chat if chat else f"ghost investigate --resume {sid}"
            words = f"`{command}` picks it up again"
        return State(status, status, None, active, True, command, f"{status}; {words}")
    outage = engine.get("outage") or {}
    if outage and status in ("queued", "running"):
        until = str(outage.get("until") or "")[11:16]
        return State(status, status, "model", active, False, None,
                     f"waiting for Gemini: unavailable, retrying until {until} UTC")
    if status == "queued":
        return State(status, status, None, active, False, None,
                     "queued: a worker picks it up in a moment")
    return State(status, status, None, active, False, None,
                 "running" + (" (a worker holds it)" if active else ""))
