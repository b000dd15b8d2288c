"""The terminal approver: the boxed SAFETY SHELL ALERT of ghost-design §10.

One person at a keyboard decides, and the audit records the local user as the approver. Answers
are read line by line from a text stream, so it works piped (`printf 'd\\nwrong rg\\n' | ghost …`);
end of input or three unreadable answers fail closed (the command does not run).

The box fits the terminal and shows the command whole, wrapped only at spaces: the approver
judges exactly the text that runs, so a name such as ``rt-prod-spoke-app-westeurope-001`` is
never split. [M]odify starts from the current command, editable with the arrow keys.
"""

from __future__ import annotations

import getpass
import io
import sys
import unicodedata
from collections.abc import Callable
from typing import TextIO

from rich import box
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from bot.terminal.prompt import Prompter, is_tty
from bot.terminal.style import MAX_WIDTH, console_for
from core.safety.approval import NOT_MODIFIABLE, ApprovalRequest, Decision

#: the width of a box rendered to a string without a terminal (the spec's console design)
PLAIN_WIDTH = 71
#: below this many columns the labels go above their text, so the text keeps the full width
SIDE_LABELS_FROM = 80
TIER_STYLE = {"FORBIDDEN": "bold red", "RISKY": "bold yellow", "SAFE": "bold green"}


def local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in a container
        return "local-user"


def _value(text: str, style: str = "") -> Text:
    # rich wraps at whitespace only; "fold" splits a single word only when it alone is wider
    # than the box, which is the one case where it cannot be shown unbroken
    return Text(text, style=style, overflow="fold", no_wrap=False)


def alert_renderable(request: ApprovalRequest, width: int) -> RenderableType:
    """The alert box, ``width`` columns wide (wide characters counted as two)."""
    rows: list[tuple[str, Text]] = [
        ("TIER", _value(f"{request.tier}  |  {request.classification}  |  RULE: {request.rule}",
                        TIER_STYLE.get(str(request.classification), "bold"))),
        ("COMMAND", _value(request.command, "bold")),
        ("RISK", _value(request.reason)),
        ("REASONING", _value(request.reasoning)),
    ]
    if request.modified_by:
        rows.append(("MODIFIED BY", _value(request.modified_by)))
    body: list[RenderableType] = []
    if width >= SIDE_LABELS_FROM:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(ratio=1)
        for label, text in rows:
            grid.add_row(label + ":", text)
        body.append(grid)
    else:
        for label, text in rows:
            body.append(Text(label + ":", style="dim"))
            body.append(Padding(text, (0, 0, 0, 2)))
    body.append(Text(""))
    body.append(Text(choices_line(request), style="bold"))
    style = "yellow" if request.classification != "FORBIDDEN" else "red"
    return Panel(Group(*body), title="SAFETY SHELL ALERT", title_align="center",
                 box=box.ROUNDED, border_style=style, width=width, padding=(0, 1))


def choices_line(request: ApprovalRequest) -> str:
    """What the engineer may answer: Modify only where there is something to edit."""
    if request.modifiable:
        return "[A]pprove   [D]eny   [M]odify command"
    return "[A]pprove   [D]eny   (nothing to edit in this step)"


def render_alert(request: ApprovalRequest, width: int = PLAIN_WIDTH) -> str:
    """The alert box as plain text (no control codes), ``width`` columns wide."""
    buffer = io.StringIO()
    console_for(buffer, width=width).print(alert_renderable(request, width))
    return buffer.getvalue().rstrip("\n")


def alert_width(request: ApprovalRequest, columns: int) -> int:
    """The box's width in a terminal of ``columns``: the usual cap (``MAX_WIDTH``), widened
    up to the terminal when a single word of the command (a long URL or resource id) would
    otherwise have to be split."""
    usual = max(20, min(columns, MAX_WIDTH))
    longest = max((cell_len(word) for word in request.command.split()), default=0)
    # borders and padding (4); side labels: "MODIFIED BY:" and its gap (14); else an indent (2)
    needed = longest + 4 + (14 if columns >= SIDE_LABELS_FROM else 2)
    return max(usual, min(columns, needed))


def print_alert(request: ApprovalRequest, out: TextIO) -> None:
    """The alert box on ``out``: as wide as the terminal allows, styled only on a TTY."""
    console = console_for(out)
    console.print()
    console.print(alert_renderable(request, alert_width(request, console.width)))
    out.flush()


def control_characters(text: str) -> list[str]:
    """The control characters in ``text``, shown as ^X / U+XXXX (arrow keys leave ^[)."""
    found = []
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf") and char not in found:
            found.append(char)
    return ["^" + chr(ord(c) + 64) if ord(c) < 32 else f"U+{ord(c):04X}" for c in found]


def edit_line(prompt: str, current: str) -> str | None:
    """Read one line at a real terminal with ``current`` pre-filled and line editing on."""
    try:
        import readline
    except ImportError:  # pragma: no cover - no readline on this platform
        return input(prompt)

    def prefill() -> None:
        readline.insert_text(current)  # shown with the prompt, the cursor at its end

    readline.set_startup_hook(prefill)
    try:
        return input(prompt)
    except EOFError:
        return None
    finally:
        readline.set_startup_hook(None)


class TerminalApprover:
    """Asks the person at the terminal; decides immediately."""

    decides_immediately = True

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None,
                 user: str | None = None,
                 editor: Callable[[str, str], str | None] | None = None) -> None:
        self.prompter = Prompter(stdin, stdout)
        self.stdin = self.prompter.stdin
        self.stdout = self.prompter.stdout
        self.user = user or local_user()
        self.editor = editor

    def _ask(self, prompt: str) -> str | None:
        return self.prompter.ask(prompt)

    def _interactive(self) -> bool:
        return (self.stdin is sys.stdin and self.stdout is sys.stdout
                and is_tty(self.stdin) and is_tty(self.stdout))

    def _edit(self, current: str) -> str | None:
        """The edited command: pre-filled at a terminal, one line from a pipe."""
        if self.editor is not None:
            return self.editor("New command: ", current)
        if self._interactive():
            return edit_line("New command (edit, then Enter): ", current)
        return self._ask("New command: ")

    def _modified(self, request: ApprovalRequest) -> Decision | None:
        """A Modify decision, None to ask again; control characters are never accepted."""
        for _ in range(3):
            new = self._edit(request.command)
            if new is None or not new.strip():
                return Decision.abandon(self.user, "no modified command given")
            bad = control_characters(new)
            if bad:
                self.stdout.write(
                    f"The edited command contains control characters ({', '.join(bad)}), "
                    "not accepted: edit it again with plain text.\n")
                continue
            if new.strip() == request.command.strip():
                self.stdout.write("The command is unchanged: choose [A]pprove to run it as "
                                  "it is.\n")
                return None
            return Decision.modify(self.user, new.strip())
        return Decision.abandon(self.user, "the edited command had control characters")

    def request(self, request: ApprovalRequest) -> Decision:
        print_alert(request, self.stdout)
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
            first, _, rest = answer.strip().partition(" ")
            if first.lower() in ("d", "deny") and rest.strip():
                # `d not during the incident`: the denial and its reason on one line
                return Decision.deny(self.user, rest.strip())
            if choice in ("m", "modify") and not request.modifiable:
                self.stdout.write(f"{NOT_MODIFIABLE}\n")
                continue
            if choice in ("m", "modify"):
                decision = self._modified(request)
                if decision is not None:
                    return decision
                continue
            self.stdout.write("Please answer a, d or m.\n" if request.modifiable
                              else "Please answer a or d.\n")
        return Decision.abandon(self.user, "no valid answer after three tries")
