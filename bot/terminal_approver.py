"""The terminal approver: the boxed SAFETY SHELL ALERT of ghost-design §10.

One person at a keyboard decides, and the audit records the local user as the approver. Answers
are read line by line from a text stream, so it works piped (`printf 'd\\nwrong rg\\n' | ghost …`);
end of input or three unreadable answers fail closed (the command does not run).
"""

from __future__ import annotations

import getpass
import textwrap
from typing import TextIO

from bot.terminal import Prompter
from core.safety.approval import ApprovalRequest, Decision

WIDTH = 69  # inner width of the box, as in the spec's console design


def local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in a container
        return "local-user"


def _row(label: str, text: str) -> list[str]:
    prefix = f"  {label:<11} " if label else " " * 14
    lines = textwrap.wrap(text, WIDTH - len(prefix)) or [""]
    out = []
    for i, line in enumerate(lines):
        lead = prefix if i == 0 else " " * len(prefix)
        out.append(f"│{(lead + line):<{WIDTH}}│")
    return out


def render_alert(request: ApprovalRequest) -> str:
    """The alert box for one request."""
    top = "┌" + "─" * WIDTH + "┐"
    bottom = "└" + "─" * WIDTH + "┘"
    title = f"│{'SAFETY SHELL ALERT':^{WIDTH}}│"
    rows = [top, title]
    rows += _row("TIER:", f"{request.tier}  |  CLASSIFICATION: {request.classification}"
                 f"  |  RULE: {request.rule}")
    rows += _row("COMMAND:", request.command)
    rows += _row("RISK:", request.reason)
    rows += _row("REASONING:", request.reasoning)
    if request.modified_by:
        rows += _row("MODIFIED BY:", request.modified_by)
    rows.append(f"│{'':<{WIDTH}}│")
    rows.append(f"│{'  [A]pprove   [D]eny   [M]odify command':<{WIDTH}}│")
    rows.append(bottom)
    return "\n".join(rows)


class TerminalApprover:
    """Asks the person at the terminal; decides immediately."""

    decides_immediately = True

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None,
                 user: str | None = None) -> None:
        self.prompter = Prompter(stdin, stdout)
        self.stdin = self.prompter.stdin
        self.stdout = self.prompter.stdout
        self.user = user or local_user()

    def _ask(self, prompt: str) -> str | None:
        return self.prompter.ask(prompt)

    def request(self, request: ApprovalRequest) -> Decision:
        self.stdout.write("\n" + render_alert(request) + "\n")
        for _ in range(3):
            answer = self._ask("Your choice: ")
            if answer is None:
                return Decision.abandon(self.user, "no answer: input closed")
            choice = answer.strip().lower()
            if choice in ("a", "approve", "y", "yes"):
                return Decision.approve(self.user)
            if choice in ("d", "deny", "n", "no"):
                reason = self._ask("Denial reason (optional, press Enter to skip): ")
                return Decision.deny(self.user, (reason or "").strip() or None)
            if choice in ("m", "modify"):
                new = self._ask("New command: ")
                if new is None or not new.strip():
                    return Decision.abandon(self.user, "no modified command given")
                return Decision.modify(self.user, new.strip())
            self.stdout.write("Please answer a, d or m.\n")
        return Decision.abandon(self.user, "no valid answer after three tries")
