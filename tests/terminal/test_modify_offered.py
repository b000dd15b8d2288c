"""Modify is offered only where there is something to edit (issue 29): the terminal box, the
Slack and Teams cards and the chat decider agree, from the request's ``modifiable`` flag."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from bot.chat.approval_cards import ApprovalCard
from bot.chat.decisions import Decider, DecisionRequest
from bot.slack.blocks import approval_card as slack_card
from bot.teams.cards import approval_card as teams_card
from bot.terminal.approver import TerminalApprover, render_alert
from core.safety.approval import NOT_MODIFIABLE, ApprovalPolicy, ApprovalRequest, DecisionKind

DELETE = ("az network watcher packet-capture delete --location westeurope --name "
          "ghost_web-vm-01_20261128T160040")


def _request(modifiable: bool) -> ApprovalRequest:
    return ApprovalRequest(approval_id="a1", session_id="s1", command=DELETE,
                           classification="RISKY", tier=2, rule="T2.az_mutating_verb",
                           reason="changes state", reasoning="Cleanup.", environment="azure",
                           requested_by="ana", expires_at=None, modifiable=modifiable)


def _card(modifiable: bool) -> ApprovalCard:
    return ApprovalCard(approval_id="a1", session_id="s1", command=DELETE,
                        classification="RISKY", tier=2, rule="T2.az_mutating_verb",
                        risk="changes state", reasoning="Cleanup.", environment="azure",
                        investigation_requester="ana", modified_by=None,
                        needed="1 approval.", expires_at=datetime(2026, 1, 1, tzinfo=UTC),
                        modifiable=modifiable)


def test_the_terminal_box_offers_modify_only_where_it_means_something() -> None:
    assert "[M]odify command" in render_alert(_request(True))
    box = render_alert(_request(False))
    assert "[M]odify" not in box and "[A]pprove   [D]eny" in box
    out = io.StringIO()
    decision = TerminalApprover(io.StringIO("m\na\n"), out).request(_request(False))
    assert decision.kind is DecisionKind.APPROVE  # "m" was refused, then "a" approved
    assert NOT_MODIFIABLE in out.getvalue()


def test_chat_cards_drop_the_modify_button_for_a_step_with_nothing_to_edit() -> None:
    blocks, _ = slack_card(_card(True))
    assert "Modify…" in json.dumps(blocks, ensure_ascii=False)
    blocks, _ = slack_card(_card(False))
    text = json.dumps(blocks, ensure_ascii=False)
    assert "Modify…" not in text and "Approve" in text and "Deny…" in text
    assert "Modify…" in json.dumps(teams_card(_card(True)), ensure_ascii=False)
    card = json.dumps(teams_card(_card(False)), ensure_ascii=False)
    assert "Modify…" not in card and "Deny…" in card


class _Store:
    def __init__(self, context: dict[str, Any]) -> None:
        self.approval = SimpleNamespace(approval_id="a1", session_id="s1", status="pending",
                                        modified_by=None, context=context, message_ref=None,
                                        decided_by=None, decided_at=None, denial_reason=None)

    def requeue(self, session_id: str, **kw: Any) -> None:
        return None

    def get_approval(self, approval_id: str) -> Any:
        return self.approval

    def get_investigation(self, session_id: str) -> Any:
        return SimpleNamespace(requested_by="ana", channel_ref="C1")


class _Directory:
    def is_member(self, user: str, channel: str) -> bool:
        return True

    def in_group(self, user: str, group: str) -> bool:
        return False


def test_the_decider_refuses_an_edit_of_a_step_with_nothing_to_edit() -> None:
    decided: list[Any] = []
    shell = SimpleNamespace(decide=lambda *a: decided.append(a))
    decider = Decider(_Store({"reason": "x", "modifiable": False}), lambda sid: shell,
                      ApprovalPolicy(), _Directory())
    result = decider.decide(DecisionRequest("a1", "bob", "modify", new_command="az vm list"))
    assert result.status == "refused" and result.message == NOT_MODIFIABLE
    assert decided == []  # nothing recorded: the card stays open for approve or deny


def test_an_old_request_without_the_flag_stays_modifiable() -> None:
    decided: list[Any] = []
    decider = Decider(_Store({"reason": "x"}), lambda sid: SimpleNamespace(
        decide=lambda *a: decided.append(a)), ApprovalPolicy(), _Directory())
    decider.decide(DecisionRequest("a1", "bob", "modify", new_command="az vm list"))
    assert decided and decided[0][1].kind is DecisionKind.MODIFY
