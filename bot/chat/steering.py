"""Who may steer an investigation from its thread: Continue, Done, Extend, Generate RCA and
``@ghost`` instructions (approvals have their own rules in ``bot.chat.decisions``).

- Always a member of the investigation's channel (an outsider never steers an incident).
- With configured approvers (``GHOST_APPROVERS``), only the engineer who started the
  investigation and the approvers (users, or members of the listed groups): a workspace that
  restricts who approves commands also restricts who tells Ghost what to look at next, or when
  to stop. Steering never runs a command on its own, so no two-person rule applies: the requester
  may press Continue or Done on their own investigation.
"""

from __future__ import annotations

from bot.chat.ports import Directory
from core.safety.approval import AI_ACTOR, ApprovalPolicy

NOT_MEMBER = ("Only members of this incident channel can steer Ghost's investigation. "
              "Ask someone in the channel, or join it.")
NOT_ALLOWED = ("In this workspace only the engineer who started the investigation and the "
               "configured Ghost approvers can steer it. Ask one of them to press the button.")


def why_not_steer(policy: ApprovalPolicy, directory: Directory, *, actor: str,
                  channel: str | None, requester: str | None) -> str | None:
    """The reason ``actor`` may not steer, or None when they may."""
    if actor == AI_ACTOR:
        return NOT_ALLOWED
    if not channel or not directory.is_member(actor, channel):
        return NOT_MEMBER
    if policy.approvers and actor != requester and actor not in policy.approvers and not any(
            directory.in_group(actor, group) for group in policy.approvers):
        return NOT_ALLOWED
    return None
