"""Driving investigations from a chat thread: start, instruct, finish, cancel, resume, and
what a worker posts after each advance (prompts, the RCA, failures).

Each operation changes the database and makes the investigation runnable; a worker (any
process) does the slow part. What was already posted is recorded in ``conversation_ref`` so a
retry or a restart does not post it again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bot.chat.content import (
    DecisionOutcome,
    Prompt,
    approval_card,
    brain_failure,
    prompt_for,
    rca_summary,
    status_view,
    unexpected_failure,
)
from bot.chat.notifier import ChatNotifier
from bot.chat.ports import ChatPort
from core.engine.loop import Engine, Outcome
from core.errors import GhostError
from core.safety.approval import ApprovalPolicy, Decision

log = logging.getLogger(__name__)


class NotWaiting(GhostError):
    """The button or mention came when the investigation was not waiting for it."""


class ChatRuntime:
    """The chat-neutral operations behind slash commands, buttons and mentions."""

    def __init__(self, *, store: Any, engine: Engine, notifier: ChatNotifier,
                 port_for: Callable[[str], ChatPort | None],
                 shell_for: Callable[[str], Any], policy: ApprovalPolicy, model: str,
                 audit_dir: str) -> None:
        self.store = store
        self.engine = engine
        self.notifier = notifier
        self.port_for = port_for
        self.shell_for = shell_for
        self.policy = policy
        self.model = model
        self.audit_dir = audit_dir
        #: Called when something became runnable: wakes an in-process worker at once.
        self.kick: Callable[[], None] = lambda: None

    def _port(self, platform: str) -> ChatPort:
        port = self.port_for(platform)
        if port is None:
            raise GhostError(f"No chat front end for {platform} is configured.")
        return port

    # ----------------------------------------------------------------- operations
    def start(self, *, platform: str, channel: str, user: str, symptom: str) -> str:
        """Post the root (status) message, create the investigation in its thread, queue it."""
        port = self._port(platform)
        from bot.chat.content import StatusView

        first = StatusView(session_id="", symptom=symptom, requested_by=user, status="queued",
                           phase="Starting…", turn=0, max_turns=50)
        thread = port.post_root(channel, first)
        inv = self.store.create_investigation(
            symptom=symptom, model=self.model, audit_dir=self.audit_dir, requested_by=user,
            platform=platform, channel_ref=channel, thread_ref=thread,
            status="awaiting_user")  # not runnable until the symptom turn is stored
        self.engine.begin(inv.session_id, symptom)  # → running: a worker may claim it now
        self.notifier.refresh_status(inv.session_id)
        return str(inv.session_id)

    def instruct(self, session_id: str, text: str) -> None:
        inv = self.store.get_investigation(session_id)
        phase = (inv.engine_state or {}).get("phase")
        if phase != "awaiting_user":
            raise NotWaiting(f"Investigation {session_id} is not waiting for an instruction "
                             f"right now ({status_view(inv).phase}).")
        self.engine.instruct(session_id, text)
        self.store.set_status(session_id, "queued")
        self.notifier.refresh_status(session_id)

    def finish(self, session_id: str) -> None:
        inv = self.store.get_investigation(session_id)
        if (inv.engine_state or {}).get("phase") not in ("awaiting_user", "turn_limit"):
            raise NotWaiting(f"Investigation {session_id} is not waiting for Done right now.")
        self.engine.finish(session_id)
        self.store.set_status(session_id, "queued")

    def extend(self, session_id: str) -> None:
        inv = self.store.get_investigation(session_id)
        if (inv.engine_state or {}).get("phase") != "turn_limit":
            raise NotWaiting(f"Investigation {session_id} is not at its turn limit.")
        self.engine.extend(session_id)
        self.store.set_status(session_id, "queued")

    def cancel(self, session_id: str, actor: str) -> int:
        """Stop an investigation; its pending approvals are closed (nothing else runs)."""
        inv = self.store.get_investigation(session_id)
        if inv.status in ("completed", "cancelled"):
            raise NotWaiting(f"Investigation {session_id} is already {inv.status}.")
        self.store.set_status(session_id, "cancelled")
        closed = 0
        shell = self.shell_for(session_id)
        for approval in self.store.approvals(session_id, statuses=("pending",)):
            if shell.decide(approval.approval_id, Decision.abandon(
                    actor, f"investigation cancelled by {actor}")) is not None:
                closed += 1
                self.close_card(approval.approval_id)
        self.notifier.refresh_status(session_id)
        return closed

    def resume(self, session_id: str) -> None:
        inv = self.store.get_investigation(session_id)
        if inv.status == "completed":
            raise NotWaiting(f"Investigation {session_id} is finished; its RCA is in the "
                             "thread.")
        self.engine.mark_resumed(session_id)
        phase = (self.store.get_investigation(session_id).engine_state or {}).get("phase")
        if phase in ("awaiting_user", "turn_limit"):  # ask again in the thread
            self.store.update_conversation_ref(session_id, {"prompted": None})
        self.store.set_status(session_id, "queued")

    def close_card(self, approval_id: str, outcome: DecisionOutcome | None = None) -> None:
        """Replace a decided card's buttons by its outcome, for everyone."""
        from bot.chat.content import outcome_of

        approval = self.store.get_approval(approval_id)
        if approval is None or not approval.message_ref:
            return
        inv = self.store.get_investigation(approval.session_id)
        port = self.port_for(inv.platform)
        if port is None:
            return
        card = approval_card(approval, inv, self.policy)
        port.close_card(approval.message_ref, card, outcome or outcome_of(approval))

    # ----------------------------------------------------------- after each advance
    def after_advance(self, session_id: str, outcome: Outcome) -> None:
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        if port is None:
            return
        ref = inv.conversation_ref or {}
        if outcome.kind in ("awaiting_user", "turn_limit"):
            key = f"{outcome.kind}:{inv.state.get('turn_count')}"
            if ref.get("prompted") != key:
                max_turns = int((inv.engine_state or {}).get("max_turns") or 50)
                port.post_prompt(inv, prompt_for(outcome.kind, session_id, max_turns))
                self.store.update_conversation_ref(session_id, {"prompted": key})
        elif outcome.kind == "completed" and not ref.get("rca_posted") and inv.rca_markdown:
            port.post_rca(inv, f"ghost_rca_{session_id}.md", inv.rca_markdown,
                          rca_summary(inv))
            self.store.update_conversation_ref(session_id, {"rca_posted": True})
        self.notifier.refresh_status(session_id)

    def failed(self, session_id: str, error: BaseException) -> None:
        """Tell the thread what went wrong and what to do; the investigation is saved."""
        from core.engine.loop import BrainUnavailable

        self.store.set_status(session_id, "failed")
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        if isinstance(error, BrainUnavailable):
            text = brain_failure(session_id, error.message)
        elif isinstance(error, GhostError):
            text = unexpected_failure(session_id, error.message)
        else:
            text = unexpected_failure(session_id, type(error).__name__)
        if port is not None and inv.channel_ref and inv.thread_ref:
            port.post_text(inv, "⚠️ " + text)
        self.notifier.refresh_status(session_id)

    def prompt(self, session_id: str, kind: str) -> Prompt:
        inv = self.store.get_investigation(session_id)
        return prompt_for(kind, session_id, int((inv.engine_state or {}).get("max_turns") or 50))
