"""The terminal front end: `ghost investigate` and `ghost demo` with the console design of
ghost-design §10.

One person at a keyboard: their answers decide approvals (recorded as the local user), and the
prompts read stdin line by line, so a script can drive a whole investigation through a pipe.
"""

from bot.terminal.console import (
    RULE,
    TerminalNotifier,
    banner,
    closing_banner,
    orchestrator_line,
    shell_line,
    version,
)
from bot.terminal.lease import TerminalLease
from bot.terminal.prompt import Prompter

__all__ = ["RULE", "Prompter", "TerminalLease", "TerminalNotifier", "banner", "closing_banner",
           "orchestrator_line", "shell_line", "version"]
