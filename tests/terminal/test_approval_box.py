"""The approval box fits the terminal, shows the command whole, and Modify edits the command
that is on screen (issue 17)."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len

from bot.terminal.approver import TerminalApprover, print_alert, render_alert
from core.safety.approval import ApprovalRequest, DecisionKind

COMMAND = ("az network route-table route update --resource-group rg-prod-network-westeurope "
           "--route-table-name rt-prod-spoke-app-westeurope-001 --name to-firewall "
           "--next-hop-type VirtualAppliance --next-hop-ip-address 10.20.0.4")


def _request(command: str = COMMAND, reason: str = "Changes routing of the prod spoke 🔥🚀",
             ) -> ApprovalRequest:
    return ApprovalRequest("appr_1", "ghost_1", command, "RISKY", 2, "T2.route_change",
                           reason, "The route must point at the firewall 防火墙", "prod",
                           "alice", None)


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("width", [40, 60, 71, 120])
def test_the_box_is_exactly_as_wide_as_asked_even_with_wide_characters(width: int) -> None:
    lines = render_alert(_request(), width=width).splitlines()
    assert {cell_len(line) for line in lines} == {width}, "\n".join(lines)


@pytest.mark.parametrize("width", [44, 60, 120])
def test_the_command_is_whole_and_wrapped_only_at_spaces(width: int) -> None:
    text = render_alert(_request(), width=width)
    inside = [line.strip("│ ").removeprefix("COMMAND:").strip() for line in text.splitlines()]
    for token in COMMAND.split(" "):
        assert any(token in line.split() for line in inside), (token, text)
    # joined back at the wraps, the shown lines are the command exactly
    start = next(i for i, line in enumerate(inside) if line.startswith("az network"))
    shown = []
    for line in inside[start:]:
        shown.append(line)
        if " ".join(shown).endswith("10.20.0.4"):
            break
    assert " ".join(shown) == COMMAND


def test_not_a_terminal_or_no_color_means_no_control_codes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    piped = io.StringIO()
    print_alert(_request(), piped)
    assert "\x1b" not in piped.getvalue() and "rt-prod-spoke-app-westeurope-001" in \
        piped.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    tty = FakeTty()
    print_alert(_request(), tty)
    assert "\x1b" not in tty.getvalue()
    monkeypatch.delenv("NO_COLOR")
    coloured = FakeTty()
    print_alert(_request(), coloured)
    assert "\x1b[" in coloured.getvalue()  # a real terminal does get colour


def test_modify_starts_from_the_current_command() -> None:
    seen: list[str] = []

    def editor(prompt: str, current: str) -> str:
        seen.append(current)
        return current.replace("rt-prod-spoke-app-westeurope-001",
                               "rt-prod-spoke-app-westeurope-002")

    out = io.StringIO()
    decision = TerminalApprover(io.StringIO("m\n"), out, user="eve",
                                editor=editor).request(_request())
    assert seen == [COMMAND]
    assert decision.kind is DecisionKind.MODIFY
    assert decision.new_command == COMMAND.replace("-001", "-002")


def test_control_characters_in_an_edit_are_refused_with_a_clear_message() -> None:
    edits = iter(["hostnme\x1b[D\x1b[Da", "hostname"])
    out = io.StringIO()
    decision = TerminalApprover(io.StringIO("m\n"), out, user="eve",
                                editor=lambda prompt, current: next(edits)).request(
        _request(command="hostnme"))
    assert "control characters (^[)" in out.getvalue()
    assert decision.kind is DecisionKind.MODIFY and decision.new_command == "hostname"


def test_piped_control_characters_never_run() -> None:
    out = io.StringIO()
    decision = TerminalApprover(io.StringIO("m\nhost\x1b[Dname\n"), out,
                                user="eve").request(_request(command="hostnme"))
    assert "control characters" in out.getvalue()
    assert decision.kind is not DecisionKind.MODIFY


def test_an_unchanged_edit_asks_again() -> None:
    out = io.StringIO()
    decision = TerminalApprover(io.StringIO("m\na\n"), out, user="eve",
                                editor=lambda prompt, current: current).request(_request())
    assert "unchanged" in out.getvalue()
    assert decision.kind is DecisionKind.APPROVE


def test_deny_and_its_reason_on_one_line() -> None:
    """`d not during the incident` is a denial with that reason (it was refused with "Please
    answer a, d or m" and counted as one of the three tries)."""
    out = io.StringIO()
    decision = TerminalApprover(io.StringIO("d  Not during the incident; ask ana\n"), out,
                                user="eve").request(_request())
    assert decision.kind is DecisionKind.DENY
    assert decision.reason == "Not during the incident; ask ana"
    assert "Please answer" not in out.getvalue()
    other = TerminalApprover(io.StringIO("approve it\n\n\n"), io.StringIO(),
                             user="eve").request(_request())
    assert other.kind is DecisionKind.ABANDON  # an approval takes no words after it
