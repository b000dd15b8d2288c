"""Continue / Done / Extend / Generate RCA: each prompt is answered once, by any route.

A prompt is identified by its key, ``"<phase>:<turn>"`` (``awaiting_user:4``, ``turn_limit:50``),
which its buttons carry. Whatever answers it — a button, an ``@ghost`` mention, instructions
queued while Ghost was busy, ``/ghost cancel`` — first claims the key in ``conversation_ref``
(a compare-and-set under the row lock), so the first answer wins in every process. The prompt's
messages then show who answered instead of their buttons, for everyone. A later click on an old
prompt (its key answered, or no longer the current one) does nothing and tells the clicker who
answered it.

``conversation_ref["prompts"]``: ``{key: {"refs": [where the message is], "max_turns": n,
"answer": {"by", "choice", "at"} | None}}``, the newest few keys only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.errors import GhostError
from core.session_state import iso_utc, utc_now

KEY = "prompts"
KEEP = 12
PHASES = ("awaiting_user", "turn_limit")

#: How each route reads on the answered prompt: "<choice> by <who>."
CONTINUED, DONE, EXTENDED = "Continued", "Done — writing the RCA", "Extended by 10 turns"
MENTIONED = "Answered with a mention in the thread"
QUEUED = "Answered with the instructions left in the thread"
CANCELLED = "Investigation cancelled"


class NotWaiting(GhostError):
    """The button or mention came when the investigation was not waiting for it."""


class AlreadyAnswered(NotWaiting):
    """A click on a prompt that was answered already (or that Ghost has moved past)."""


@dataclass(frozen=True)
class Answer:
    by: str | None
    choice: str
    at: str
    #: the recorded request that gave this answer (its inbox key): applying that request
    #: again after a crash recognises its own answer and finishes the job instead of being
    #: told "already answered"
    token: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"by": self.by, "choice": self.choice, "at": self.at}
        if self.token:
            out["token"] = self.token
        return out

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Answer:
        return cls(data.get("by"), str(data.get("choice") or "Answered"),
                   str(data.get("at") or ""), data.get("token"))

    def sentence(self) -> str:
        """``Continued by {user:U1} at 09:12 UTC`` (the platform renders the placeholder)."""
        who = f" by {{user:{self.by}}}" if self.by else ""
        try:
            when = f" at {datetime.fromisoformat(self.at):%H:%M} UTC" if self.at else ""
        except ValueError:
            when = ""
        return f"{self.choice}{who}{when}"


def key_of(inv: Any) -> str | None:
    """The key of the prompt the investigation waits on now, or None."""
    phase = (inv.engine_state or {}).get("phase")
    if phase not in PHASES:
        return None
    return f"{phase}:{int((inv.state or {}).get('turn_count') or 0)}"


def split_value(value: str) -> tuple[str, str | None]:
    """A button's value ``"<session id>|<key>"``: (session id, key or None)."""
    sid, _, key = value.partition("|")
    return sid, key or None


def button_value(session_id: str, key: str | None) -> str:
    return f"{session_id}|{key}" if key else session_id


def entry(inv: Any, key: str) -> dict[str, Any]:
    return dict(((inv.conversation_ref or {}).get(KEY) or {}).get(key) or {})


def answer_of(inv: Any, key: str) -> Answer | None:
    data = entry(inv, key).get("answer")
    return Answer.of(data) if data else None


def answered_by_token(inv: Any, token: str | None) -> str | None:
    """The key of the prompt that the recorded request ``token`` answered, if any."""
    if not token:
        return None
    for key, item in ((inv.conversation_ref or {}).get(KEY) or {}).items():
        if ((item or {}).get("answer") or {}).get("token") == token:
            return str(key)
    return None


def check_click(inv: Any, key: str | None) -> None:
    """Raise :class:`AlreadyAnswered` when the clicked prompt ``key`` is not the one Ghost
    waits on (answered, or moved past); None (an older card without a key) is refused too."""
    if key is None:
        raise AlreadyAnswered("This button belongs to an older Ghost prompt and was not used. "
                              "Use the newest prompt in the thread, or mention @ghost with "
                              "an instruction.")
    answered = answer_of(inv, key)
    if answered is not None:
        raise AlreadyAnswered(f"This prompt was already answered: {answered.sentence()}. "
                              "Nothing more was done.")
    if key != key_of(inv):
        raise AlreadyAnswered("This prompt is no longer current: Ghost has moved on since it "
                              "was posted. Nothing was done; use the newest prompt in the "
                              "thread, or mention @ghost.")


def _trim(prompts: dict[str, Any]) -> None:
    for old in list(prompts)[:-KEEP]:
        prompts.pop(old, None)


class PromptBook:
    """Reads and writes the prompts' bookkeeping in the store."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def claim(self, session_id: str, key: str, by: str | None, choice: str,
              token: str | None = None) -> Answer:
        """Record the answer to ``key``; :class:`AlreadyAnswered` when someone was first."""
        answer = Answer(by, choice, iso_utc(utc_now()), token)

        def change(ref: dict[str, Any]) -> dict[str, Any] | None:
            prompts = ref.setdefault(KEY, {})
            item = prompts.setdefault(key, {"refs": []})
            if item.get("answer"):
                return dict(item["answer"])
            item["answer"] = answer.as_dict()
            _trim(prompts)
            return None

        earlier = self.store.change_conversation_ref(session_id, change)
        if earlier:
            raise AlreadyAnswered(f"This prompt was already answered: "
                                  f"{Answer.of(earlier).sentence()}. Nothing more was done.")
        return answer

    def release(self, session_id: str, key: str, answer: Answer) -> None:
        """The answer could not be acted on: the prompt is open again."""
        def change(ref: dict[str, Any]) -> None:
            item = (ref.get(KEY) or {}).get(key)
            if item and item.get("answer") == answer.as_dict():
                item["answer"] = None
        self.store.change_conversation_ref(session_id, change)

    def reopen(self, session_id: str, key: str) -> None:
        """``/ghost resume`` asks again: the prompt at ``key`` takes answers again."""
        def change(ref: dict[str, Any]) -> None:
            item = (ref.get(KEY) or {}).get(key)
            if item:
                item["answer"] = None
        self.store.change_conversation_ref(session_id, change)

    def posted(self, session_id: str, key: str, where: Mapping[str, Any] | None,
               max_turns: int) -> None:
        def change(ref: dict[str, Any]) -> None:
            prompts = ref.setdefault(KEY, {})
            item = prompts.setdefault(key, {"refs": []})
            item["max_turns"] = max_turns
            if where:
                item.setdefault("refs", []).append(dict(where))
            ref["prompted"] = key
            _trim(prompts)
        self.store.change_conversation_ref(session_id, change)
