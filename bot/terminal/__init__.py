"""The terminal front end: `ghost investigate` and `ghost demo` with the console design of
docs/terminal.md.

One person at a keyboard: their answers decide approvals (recorded as the local user), and the
prompts read stdin line by line, so a script can drive a whole investigation through a pipe.

The names below are loaded when first used (PEP 562), so that a command importing one small
module of this package (``bot.terminal.logs`` runs for every command) does not pay for rich.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {"RULE": "console", "TerminalNotifier": "console", "banner": "console",
          "closing_banner": "console", "orchestrator_line": "console",
          "shell_line": "console", "version": "console", "TerminalLease": "lease",
          "Prompter": "prompt"}

__all__ = ["RULE", "Prompter", "TerminalLease", "TerminalNotifier", "banner", "closing_banner",
           "orchestrator_line", "shell_line", "version"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'bot.terminal' has no attribute {name!r}")
    return getattr(import_module(f"bot.terminal.{_WHERE[name]}"), name)
