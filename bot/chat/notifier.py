"""The engine's Notifier for chat threads, and the chat Approver.

Cards are posted by :meth:`ChatNotifier.approval_pending`, which the engine calls only after it
saved the investigation as waiting: a click can never arrive before that save. The approver
therefore just answers "later" (None). A card's location is stored on the approval row, so a
second call (a retry, a restart) does not post it twice.

Every post goes through the outbox (``bot.chat.outbox``): recorded, then sent, retried on
transient errors by whoever holds or reconciles the investigation; a chat outage is never the
reason an investigation fails. A pending approval without a card is itself the durable record
of the card owed (``owe_cards`` finds it after a crash).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from bot.chat.approval_cards import approval_card, outcome_of, ran_outcome
from bot.chat.captures import capture_lines, record_capture, task_line
from bot.chat.command_lines import command_line
from bot.chat.endings import model_outage as outage_words
from bot.chat.outbox import Outbox
from bot.chat.ports import ChatPort
from bot.chat.status import status_view
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
        self.outbox = Outbox(store, port_for)
        self.outbox.register("card", self._send_card)

    def _where(self, session_id: str) -> tuple[Any, ChatPort] | None:
        """The investigation and its port, whose posts go through the outbox."""
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        if port is None or not inv.channel_ref or not inv.thread_ref:
            return None
        return inv, self.outbox.port(port)

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
            self._close_ran_card(session_id, port, inv, result)
            return
        # captures: progress goes into the status message; the thread gets a line only for an
        # error or a capture reaching its final state, not one per poll
        finished = self.store.change_conversation_ref(
            session_id, lambda ref: record_capture(ref, name, result))
        if not result.get("task_id") or finished:
            port.post_text(inv, task_line(name, result), notice=True)
        self.refresh_status(session_id)

    def _close_ran_card(self, session_id: str, port: ChatPort, inv: Any,
                        result: Mapping[str, Any]) -> None:
        """An approved command's card said "— running" since the click: now it says "ran
        (exit N)" or "failed (…)". The approval is the one the command's audit record names
        (or the result's own ``approval_id``); SAFE commands have none and no card."""
        approval = self._approval_of(session_id, result)
        if approval is None or not approval.message_ref:
            return
        outcome = outcome_of(approval)
        if outcome.result != "approved":
            return
        card = approval_card(approval, inv, self.policy)
        try:
            port.close_card(approval.message_ref, card, ran_outcome(outcome, result))
        except Exception as exc:  # noqa: BLE001 - the command line above is the record
            log.warning("could not mark the card of approval %s as ran: %s",
                        approval.approval_id, exc)

    def _approval_of(self, session_id: str, result: Mapping[str, Any]) -> Any:
        approval_id = result.get("approval_id")
        audit_id = result.get("audit_id")
        if not approval_id and audit_id:
            for record in reversed(self.store.audit_records(session_id)):
                if record.get("audit_id") == audit_id:
                    approval_id = (record.get("details") or {}).get("approval_id")
                    break
        if not approval_id and result.get("action") in ("user_approved", "user_modified"):
            # no audit record (outcome unknown): the newest approval that was let run
            ran = self.store.approvals(session_id, statuses=("executing", "executed",
                                                             "interrupted"))
            approval_id = ran[-1].approval_id if ran else None
        return self.store.get_approval(str(approval_id)) if approval_id else None

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
        """Owe the card of a pending request unless it has one, and deliver it (a failure is
        retried by the outbox, never raised)."""
        approval = self.store.get_approval(approval_id)
        if approval is None or approval.status != "pending" or approval.message_ref:
            return
        self.outbox.send(approval.session_id, "card", {"approval_id": approval_id},
                         key=f"card:{approval_id}")

    def owe_cards(self, session_id: str) -> int:
        """Every pending approval of the investigation without a card gets one (its process
        died between recording the approval and posting the card); how many were owed."""
        owed = 0
        for approval in self.store.approvals(session_id, statuses=("pending",)):
            if not approval.message_ref:
                self.outbox.owe(session_id, "card", {"approval_id": approval.approval_id},
                                key=f"card:{approval.approval_id}")
                owed += 1
        return owed

    def _send_card(self, inv: Any, port: ChatPort, payload: Mapping[str, Any]) -> None:
        """The outbox's sender for cards: rendered when sent, so it shows the request as it is
        then; a request decided (or expired) before its card went out needs none."""
        approval = self.store.get_approval(str(payload["approval_id"]))
        if approval is None or approval.status != "pending" or approval.message_ref:
            return
        ref = port.post_card(inv, approval_card(approval, inv, self.policy))
        self.store.set_approval_message_ref(approval.approval_id, ref)

    def model_outage(self, session_id: str, error: str, until: datetime) -> None:
        """Gemini is unavailable: one notice per outage (keyed by when it began), and the
        status message says Ghost is waiting for Gemini."""
        inv = self.store.get_investigation(session_id)
        since = str(((inv.engine_state or {}).get("outage") or {}).get("since") or until)
        if self._where(session_id) is not None:
            self.outbox.send(session_id, "text", {
                "text": "⚠️ " + outage_words(error, f"{until:%H:%M}"), "notice": True},
                key=f"outage:{since}")
        self.refresh_status(session_id)

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
        try:
            port.update_status(inv, view)
        except Exception as exc:  # noqa: BLE001 - an edit, redrawn on the next change
            log.warning("could not update the status message of %s: %s: %s", session_id,
                        type(exc).__name__, exc)
            return
        self._shown[session_id] = view.fingerprint()
