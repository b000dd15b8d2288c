"""`ghost approvals decide` applies the chat front ends' policy: the approvers list, the
two-person rule (requester and modifier), expiry, Modify as a new request, Deny with a reason,
and a chat channel whose membership the command line cannot check."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from core.session_state import utc_now
from storage.store import Store
from tests.contract.conftest import Run
from tests.contract.helpers import validate


def _get(store: Store, approval_id: str) -> Any:
    approval = store.get_approval(approval_id)
    assert approval is not None
    return approval


def _pending(store: Store, *, platform: str = "cli", expires_in: float = 1800,
             command: str = "echo risky") -> Any:
    channel = "cli" if platform == "cli" else "C1"
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a", platform=platform,
                                     channel_ref=channel, requested_by="alertbot").session_id
    store.set_status(sid, "awaiting_approval")
    return store.create_approval(sid, command=command, command_hash="h" * 64,
                                 classifier_version="1", classification="RISKY",
                                 reasoning="why", environment="local",
                                 requested_by="alertbot",
                                 expires_at=utc_now() + timedelta(seconds=expires_in))


def test_approve_requeues_the_investigation(store: Store, cli: Run) -> None:
    approval = _pending(store)
    code, doc = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ana",
                    "--json")
    assert code == 0 and validate("approval-decision", doc)["result"] == "approved"
    assert _get(store, approval.approval_id).decided_by == "ana"
    assert store.get_investigation(approval.session_id).status == "queued"
    kinds = [(r["kind"], r["actor"]) for r in store.audit_records(approval.session_id)]
    assert ("approval", "ana") in kinds  # the decision is in the audit chain with its actor


def test_deny_carries_the_reason(store: Store, cli: Run) -> None:
    approval = _pending(store)
    code, doc = cli("approvals", "decide", approval.approval_id, "deny", "--as", "ana",
                    "--reason", "not during the change freeze", "--json")
    assert code == 0 and doc["result"] == "denied"
    assert _get(store, approval.approval_id).denial_reason == \
        "not during the change freeze"


def test_modify_makes_a_new_request_its_author_cannot_approve(store: Store,
                                                             cli: Run) -> None:
    approval = _pending(store)
    code, doc = cli("approvals", "decide", approval.approval_id, "modify", "--as", "ana",
                    "--command", "echo safer", "--json")
    assert code == 0 and validate("approval-decision", doc)["result"] == "modified"
    successor = _get(store, doc["new_approval_id"])
    assert successor.command == "echo safer" and successor.status == "pending"
    assert successor.modified_by == "ana"
    code, err = cli("approvals", "decide", successor.approval_id, "approve", "--as", "ana",
                    "--json")
    assert (code, err["error"]["code"]) == (1, "NOT_ALLOWED")
    assert "You modified this command" in err["error"]["message"]
    code, ok = cli("approvals", "decide", successor.approval_id, "approve", "--as", "bo",
                   "--json")
    assert code == 0 and ok["result"] == "approved"


def test_an_expired_request_cannot_be_decided(store: Store, cli: Run) -> None:
    approval = _pending(store, expires_in=-5)
    code, err = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ana",
                    "--json")
    assert (code, err["error"]["code"]) == (1, "APPROVAL_NOT_PENDING")
    assert "expired" in err["error"]["message"]
    assert _get(store, approval.approval_id).status == "expired"


def test_the_approvers_list_decides_who_may(store: Store, cli: Run,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GHOST_APPROVERS", "ana,cy")
    approval = _pending(store)
    code, err = cli("approvals", "decide", approval.approval_id, "approve", "--as", "bo",
                    "--json")
    assert (code, err["error"]["code"]) == (1, "NOT_ALLOWED")
    assert "list of Ghost approvers" in err["error"]["message"]
    _, listed = cli("approvals", "list", "--json")
    assert listed["approvals"][0]["may_decide"]["approvers"] == ["ana", "cy"]
    code, ok = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ana",
                   "--json")
    assert code == 0 and ok["decided_by"] == "ana"


def test_a_chat_channel_cannot_be_checked_from_here(store: Store, cli: Run) -> None:
    approval = _pending(store, platform="teams")
    code, err = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ana",
                    "--json")
    assert (code, err["error"]["code"]) == (1, "NOT_ALLOWED")
    assert "teams thread" in err["error"]["recovery_action"]
    assert _get(store, approval.approval_id).status == "pending"


def test_ghost_itself_never_approves(store: Store, cli: Run) -> None:
    approval = _pending(store)
    code, err = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ghost",
                    "--json")
    assert (code, err["error"]["code"]) == (1, "NOT_ALLOWED")


def test_text_mode_says_what_happened(store: Store, cli: Run) -> None:
    approval = _pending(store)
    code, text = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ana")
    assert code == 0 and text.startswith("Approved")


def test_a_slack_approval_decided_here_uses_slacks_directory_and_closes_the_card(
        store: Store, cli: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fakes.slack_api import FakeSlack

    fake = FakeSlack(members={"C1": ["alertbot", "U2"]}).start()
    try:
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
        monkeypatch.setenv("SLACK_API_URL", fake.base_url)
        approval = _pending(store, platform="slack")
        fake.messages[("C1", "1700000000.000001")] = {"channel": "C1",
                                                      "ts": "1700000000.000001"}
        store.set_approval_message_ref(approval.approval_id, {
            "platform": "slack", "channel": "C1", "ts": "1700000000.000001"})
        code, err = cli("approvals", "decide", approval.approval_id, "approve", "--as", "U9",
                        "--json")
        assert (code, err["error"]["code"]) == (1, "NOT_ALLOWED")
        assert "Only members of this incident channel" in err["error"]["message"]
        code, ok = cli("approvals", "decide", approval.approval_id, "approve", "--as", "U2",
                       "--json")
        assert code == 0 and ok["result"] == "approved"
        (update,) = fake.called("chat.update")
        assert update.args["ts"] == "1700000000.000001"
        assert "Approved" in str(update.args["blocks"]) and "U2" in str(update.args["blocks"])
    finally:
        fake.stop()


def test_a_terminal_investigations_request_is_decided_at_its_keyboard(store: Store,
                                                                     cli: Run) -> None:
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a",
                                     requested_by="dev").session_id
    approval = store.create_approval(sid, command="echo x", command_hash="h" * 64,
                                     classifier_version="1", classification="RISKY",
                                     reasoning="r", environment="local", requested_by="dev")
    code, err = cli("approvals", "decide", approval.approval_id, "approve", "--as", "ana",
                    "--json")
    assert (code, err["error"]["code"]) == (1, "NOT_ALLOWED")
    assert f"ghost investigate --resume {sid}" in err["error"]["recovery_action"]


def test_a_step_with_nothing_to_edit_lists_no_modify_and_refuses_one(store: Store,
                                                                     cli: Run) -> None:
    """A capture's delete is made through the Azure SDK with nothing to edit (issue 29)."""
    sid = store.create_investigation(symptom="s", model="m", audit_dir="a", platform="cli",
                                     channel_ref="cli", requested_by="alertbot").session_id
    store.set_status(sid, "awaiting_approval")
    delete = store.create_approval(
        sid, command="az network watcher packet-capture delete --location westeurope --name x",
        command_hash="h" * 64, classifier_version="1", classification="RISKY", reasoning="why",
        environment="azure", requested_by="alertbot", expires_at=utc_now() + timedelta(hours=1),
        context={"reason": "changes state", "modifiable": False})
    editable = _pending(store)
    _, listed = cli("approvals", "list", "--json")
    decisions = {a["approval_id"]: a["decisions"]
                 for a in validate("approvals-list", listed)["approvals"]}
    assert decisions[delete.approval_id] == ["approve", "deny"]
    assert decisions[editable.approval_id] == ["approve", "deny", "modify"]
    code, err = cli("approvals", "decide", delete.approval_id, "modify", "--as", "ana",
                    "--command", "az vm list", "--json")
    assert code == 1 and "Modify is not offered for this step" in err["error"]["message"]
    assert _get(store, delete.approval_id).status == "pending"  # still approve or deny
