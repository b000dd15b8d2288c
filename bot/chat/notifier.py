"""The engine's Notifier for chat threads, and the chat Approver.

Cards are posted by :meth:`ChatNotifier.approval_pending`, which the engine calls only after it
saved the investigation as waiting: a click can never arrive before that save. The approver
therefore just answers "later" (None). A card's location is stored on the approval row, so a
second call (a retry, a restart) does not post it twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from bot.chat.content import (
    approval_card,
    capture_lines,
    command_line,
    record_capture,
    status_view,
    task_line,
)
from bot.chat.ports import ChatPort
from core.errors import GhostError
from core.safety.approval import ApprovalPolicy, ApprovalRequest, Decision

log = logging.getLogger(__name__)


class InvestigationCancelled(GhostError):
    """``/ghost cancel`` won the race with a worker's step; the worker stops quietly."""


class ChatApprover:
    """Decisions arrive later, from a click in any process."""

    decides_immediately = False

    def request(self, request: ApprovalRequest) -> Decision | None:
        return None


class ChatNotifier:
    """Posts what the engine does into the investigation's thread."""

    def __init__(self, store: Any, port_for: Callable[[str], ChatPort | None],
                 policy: ApprovalPolicy) -> None:
        self.store = store
        self.port_for = port_for
        self.policy = policy
        self._shown: dict[str, str] = {}  # status fingerprints: saves edits, not needed for truth

    def _where(self, session_id: str) -> tuple[Any, ChatPort] | None:
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        if port is None or not inv.channel_ref or not inv.thread_ref:
            return None
        return inv, port

    def model_text(self, session_id: str, text: str) -> None:
        where = self._where(session_id)
        if where and text.strip():
            where[1].post_text(where[0], text)

    def tool_result(self, session_id: str, name: str, args: Mapping[str, Any],
                    result: Mapping[str, Any]) -> None:
        where = self._where(session_id)
        if where is None:
            return
        inv, port = where
        if name == "run_shell_cmd":
            port.post_command(inv, command_line(self._ran(args, result), result))
            return
        # captures: progress goes into the status message; the thread gets a line only for an
        # error or a capture reaching its final state, not one per poll
        finished = self.store.change_conversation_ref(
            session_id, lambda ref: record_capture(ref, name, result))
        if not result.get("task_id") or finished:
            port.post_text(inv, task_line(name, result), notice=True)
        self.refresh_status(session_id)

    @staticmethod
    def _ran(args: Mapping[str, Any], result: Mapping[str, Any]) -> Mapping[str, Any]:
        """The model's arguments, with the command that really ran: after a Modify that is
        the engineer's edit (the result names it), not what the model asked for."""
        ran = result.get("command")
        return {**args, "command": ran} if ran else args

    def approval_pending(self, session_id: str, name: str, args: Mapping[str, Any],
                         result: Mapping[str, Any]) -> None:
        held = result.get("waiting_for_approval")
        approval_id = result.get("approval_id") or (
            held.get("approval_id") if isinstance(held, Mapping) else None)
        if approval_id:
            self.ensure_card(str(approval_id))

    def ensure_card(self, approval_id: str) -> None:
        """Post the card for a pending request unless it already has one."""
        approval = self.store.get_approval(approval_id)
        if approval is None or approval.status != "pending" or approval.message_ref:
            return
        where = self._where(approval.session_id)
        if where is None:
            return
        inv, port = where
        ref = port.post_card(inv, approval_card(approval, inv, self.policy))
        self.store.set_approval_message_ref(approval_id, ref)

    def state_changed(self, session_id: str, state: Mapping[str, Any],
                      engine_state: Mapping[str, Any]) -> None:
        """After every save. A cancel that arrived mid-step stops the engine here: the step is
        saved (the store keeps ``cancelled``), and nothing more runs."""
        self.refresh_status(session_id)
        if self.store.get_investigation(session_id).status == "cancelled":
            raise InvestigationCancelled(f"Investigation {session_id} was cancelled.")

    def refresh_status(self, session_id: str) -> None:
        where = self._where(session_id)
        if where is None:
            return
        inv, port = where
        view = replace(status_view(inv), captures=capture_lines(inv.conversation_ref))
        if self._shown.get(session_id) == view.fingerprint():
            return
        port.update_status(inv, view)
        self._shown[session_id] = view.fingerprint()
