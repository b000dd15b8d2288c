"""Who may decide (DESIGN.md approval rules)."""

from __future__ import annotations

import pytest

from core.safety.approval import AI_ACTOR, ApprovalPolicy, command_hash, may_decide

CASES = [
    # policy, actor, groups, requester, modified_by, member, allowed
    (ApprovalPolicy(), "U2", frozenset(), "U1", None, True, True),
    (ApprovalPolicy(), "U1", frozenset(), "U1", None, True, False),  # own investigation
    (ApprovalPolicy(), "U2", frozenset(), "U1", "U2", True, False),  # own modification
    (ApprovalPolicy(), "U3", frozenset(), "U1", "U2", True, True),
    (ApprovalPolicy(), "U2", frozenset(), "U1", None, False, False),  # not in the channel
    (ApprovalPolicy(), AI_ACTOR, frozenset(), "U1", None, True, False),
    (ApprovalPolicy(approvers=frozenset({"U9"})), "U2", frozenset(), "U1", None, True, False),
    (ApprovalPolicy(approvers=frozenset({"U9"})), "U9", frozenset(), "U1", None, False, True),
    (ApprovalPolicy(approvers=frozenset({"S-oncall"})), "U2", frozenset({"S-oncall"}), "U1",
     None, True, True),
    (ApprovalPolicy(two_person=False), "U1", frozenset(), "U1", "U1", True, True),
]


@pytest.mark.parametrize(("policy", "actor", "groups", "requester", "modified_by", "member",
                          "allowed"), CASES)
def test_may_decide(policy: ApprovalPolicy, actor: str, groups: frozenset[str],
                    requester: str, modified_by: str | None, member: bool,
                    allowed: bool) -> None:
    verdict = may_decide(policy, actor=actor, actor_groups=groups,
                         investigation_requester=requester, modified_by=modified_by,
                         is_channel_member=member)
    assert verdict.allowed is allowed
    assert bool(verdict.why) is (not allowed)


def test_hash_binds_exact_command_and_classifier_version() -> None:
    base = command_hash("az vm stop -n a", "v1")
    assert base != command_hash("az vm stop -n a ", "v1")
    assert base != command_hash("az vm stop -n a", "v2")
    assert base == command_hash("az vm stop -n a", "v1")
