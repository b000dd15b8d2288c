"""Deciding an approval from the command line with the chat front ends' rules.

The :class:`~bot.chat.decisions.Decider` of Slack and Teams does the work (eligibility through
``core.safety.approval.may_decide``, the first decision wins through the shell's compare-and-set,
expiry and the command hash checked by the shell, the investigation requeued for a worker). What
differs is only the directory: who counts as a member of the investigation's channel.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.chat.decisions import Decider, DecisionRequest, DecisionResult
from bot.contract.codes import Code, ContractError
from bot.contract.views import CLI_CHANNEL, policy_for

log = logging.getLogger(__name__)


class CliDirectory:
    """Membership as the command line can know it.

    An investigation opened with ``ghost investigate --detach`` lives in the ``cli`` channel:
    everyone who can run ghost against this database is in it (narrow it with an approvers
    list). A chat channel's membership cannot be checked from here, so nobody is a member of
    one; chat groups cannot be resolved either.
    """

    def is_member(self, user: str, channel: str) -> bool:
        return channel == CLI_CHANNEL

    def in_group(self, user: str, group: str) -> bool:
        return False


class TerminalDirectory:
    """A `ghost investigate` is one person at a keyboard (DESIGN.md: the two-person rule is a
    chat feature): its "channel" is that person alone."""

    def __init__(self, owner: str | None) -> None:
        self.owner = owner

    def is_member(self, user: str, channel: str | None) -> bool:
        return user == self.owner

    def in_group(self, user: str, group: str) -> bool:
        return False


def _directory(settings: Any, platform: str) -> Any:
    """Slack's own directory when this process can reach Slack; otherwise the CLI's."""
    if platform == "slack" and settings.slack_bot_token:
        from bot.slack.client import make_client
        from bot.slack.port import SlackDirectory

        return SlackDirectory(make_client(settings.slack_bot_token, settings.slack_api_url))
    return CliDirectory()


def decide(settings: Any, store: Any, *, approval_id: str, actor: str, kind: str,
           reason: str | None, new_command: str | None) -> DecisionResult:
    """Apply one decision, or raise the contract error that says why not."""
    from bot.bootstrap import build_shell
    from bot.chat.notifier import ChatApprover

    actor = actor.strip()
    if not actor:
        raise ContractError(Code.INVALID_ARGUMENT, "--as names nobody.",
                            "Give the deciding user, e.g. --as oncall-ana.")
    if kind == "modify" and not (new_command or "").strip():
        raise ContractError(Code.INVALID_ARGUMENT, "modify needs the new command.",
                            "Add --command \"THE COMMAND TO RUN INSTEAD\".")
    if kind != "modify" and new_command:
        raise ContractError(Code.INVALID_ARGUMENT, "--command goes with modify only.")
    if kind != "deny" and reason:
        raise ContractError(Code.INVALID_ARGUMENT, "--reason goes with deny only.")
    approval = store.get_approval(approval_id)
    if approval is None:
        raise ContractError(Code.APPROVAL_NOT_FOUND, f"No approval request '{approval_id}'.",
                            "List pending requests with `ghost approvals list`.")
    inv = store.get_investigation(approval.session_id)
    policy = policy_for(settings, inv.platform)
    directory = _directory(settings, inv.platform)
    if inv.platform == "terminal":  # the terminal policy: the person who started it decides
        if actor != inv.requested_by:
            raise ContractError(Code.NOT_ALLOWED, f"Investigation {inv.session_id} runs in "
                                f"{inv.requested_by or 'someone'}'s terminal: only the person "
                                "who started it decides its requests.",
                                f"Decide as {inv.requested_by} (--as {inv.requested_by}), or at "
                                f"its keyboard: `ghost investigate --resume {inv.session_id}`.")
        from core.safety.approval import ApprovalPolicy

        policy = ApprovalPolicy(approvers=frozenset(), two_person=False,
                                expiry_seconds=settings.approval_expiry_seconds)
        directory = TerminalDirectory(inv.requested_by)

    def shell_for(sid: str) -> Any:
        owner = store.get_investigation(sid)
        return build_shell(settings, store, sid, ChatApprover(), owner.requested_by, policy)

    decider = Decider(store, shell_for, policy, directory)
    result = decider.decide(DecisionRequest(approval_id, actor, kind, reason, new_command))
    if result.status == "refused":
        hint = None
        if not policy.approvers and inv.platform in ("slack", "teams"):
            hint = (f"Decide in the {inv.platform} thread, or configure the approvers list "
                    "to decide from the command line.")
        elif inv.platform == "terminal":
            hint = (f"Decide as {inv.requested_by}, or at its keyboard: "
                    f"`ghost investigate --resume {inv.session_id}`.")
        raise ContractError(Code.NOT_ALLOWED, result.message, hint or "Ask another engineer.")
    if result.status == "closed":
        raise ContractError(Code.APPROVAL_NOT_PENDING, _closed_line(result),
                            f"See `ghost status {approval.session_id}`.")
    if result.status == "unknown":
        raise ContractError(Code.APPROVAL_NOT_FOUND, result.message)
    _close_chat_card(settings, store, approval_id, result)
    return result


def _closed_line(result: DecisionResult) -> str:
    outcome = result.outcome
    if outcome is None:
        return "This approval request is no longer pending."
    if outcome.result == "expired":
        return "This approval expired before anyone decided; the command did not run."
    when = f" at {outcome.at:%Y-%m-%d %H:%M} UTC" if outcome.at else ""
    return f"Already decided: {outcome.result} by {outcome.actor or 'someone'}{when}."


def _close_chat_card(settings: Any, store: Any, approval_id: str,
                     result: DecisionResult) -> None:
    """A Slack card decided from here shows the outcome instead of its buttons. Best effort:
    the decision stands, and a later click on the card is told who decided."""
    if not result.message_ref or not settings.slack_bot_token:
        return
    try:
        from bot.chat.approval_cards import approval_card, outcome_of
        from bot.slack.client import make_client
        from bot.slack.port import SlackPort

        approval = store.get_approval(approval_id)
        inv = store.get_investigation(approval.session_id)
        if inv.platform != "slack":
            return
        port = SlackPort(make_client(settings.slack_bot_token, settings.slack_api_url))
        port.close_card(result.message_ref, approval_card(approval, inv,
                                                          policy_for(settings, "slack")),
                        result.outcome or outcome_of(approval))
    except Exception:  # noqa: BLE001 - the card is cosmetic; the decision is recorded
        log.exception("could not update the Slack card of approval %s", approval_id)
