"""The terminal front end: `ghost investigate` with the console design of ghost-design §10.

One person at a keyboard: their answers decide approvals (recorded as the local user), and the
prompts read stdin line by line, so a script can drive a whole investigation through a pipe.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

RULE = "═" * 54


class TerminalNotifier:
    """Prints what the engine does, in the spec's console style."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def _print(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def model_text(self, session_id: str, text: str) -> None:
        self._print(f"\n[Ghost Agent] {text.strip()}")

    def tool_result(self, session_id: str, name: str, args: Mapping[str, Any],
                    result: Mapping[str, Any]) -> None:
        if name == "run_shell_cmd":
            self._print(shell_line(args, result))
        elif result.get("error") == "unknown_tool":
            self._print(f"[Ghost Agent] asked for a tool that does not exist ({name}); "
                        "told it which tools there are.")
        else:
            self._print(orchestrator_line(name, result))

    def approval_pending(self, session_id: str, name: str, args: Mapping[str, Any],
                         result: Mapping[str, Any]) -> None:
        what = args.get("command") or name
        self._print(f"[Shell] Still waiting for a decision on: {what}")

    def state_changed(self, session_id: str, state: Mapping[str, Any],
                      engine_state: Mapping[str, Any]) -> None:
        return None


def shell_line(args: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """One compact line per command, with its audit id."""
    command = str(args.get("command") or "").strip() or "(no command given)"
    audit = f"  [{result.get('audit_id')}]" if result.get("audit_id") else ""
    status, action = result.get("status"), result.get("action")
    classification = result.get("classification") or "?"
    if status == "denied":
        reason = result.get("denial_reason")
        why = f" (reason: \"{reason}\")" if reason else ""
        return f"[Shell] {classification} — denied: {command}{why}{audit}"
    if result.get("error") == "forbidden_command":
        return f"[Shell] FORBIDDEN — blocked: {command}{audit}"
    if status == "error":
        return f"[Shell] ERROR ({result.get('error')}): {command}{audit}"
    ran = str(result.get("command") or command)
    if ran != command:
        command = f"{ran} (edited from: {command})"
    label = {"auto_approved": "auto-approved", "user_approved": "approved",
             "user_modified": "modified and approved"}.get(str(action), str(action))
    exit_note = "" if result.get("exit_code") in (0, None) else \
        f" (exit {result.get('exit_code')})"
    return f"[Shell] {classification} — {label}: {command}{exit_note}{audit}"


def orchestrator_line(name: str, result: Mapping[str, Any]) -> str:
    task = result.get("task_id") or "-"
    state = result.get("state") or result.get("status")
    message = str(result.get("message") or result.get("error_detail") or "").strip()
    return f"[Orchestrator] {name} {task}: {state}" + (f" — {message}" if message else "")


def banner(session_id: str, out: TextIO) -> None:
    out.write(f"\n{RULE}\n  GHOST  |  Session: {session_id}\n{RULE}\n")
    out.flush()


def closing_banner(out: TextIO, *, path: str | None, confidence: str, turns: int,
                   duration_s: float | None) -> None:
    minutes, seconds = divmod(int(duration_s or 0), 60)
    where = path or "(not written — printed above)"
    out.write(f"\n{RULE}\n  RCA REPORT WRITTEN: {where}\n"
              f"  Confidence: {confidence}  |  Turns: {turns}  |  Duration: {minutes}m "
              f"{seconds:02d}s\n{RULE}\n")
    out.flush()


class Prompter:
    """Reads one answer per line; None at end of input."""

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout

    def ask(self, prompt: str) -> str | None:
        self.stdout.write(prompt)
        self.stdout.flush()
        line = self.stdin.readline()
        if not line:
            self.stdout.write("\n")
            return None
        answer = line.rstrip("\r\n")
        if not _is_tty(self.stdin):
            # piped answers are not echoed by a terminal: show them, so the transcript reads
            self.stdout.write(answer + "\n")
            self.stdout.flush()
        return answer

    def choose(self, prompt: str, choices: dict[str, str]) -> str | None:
        """Ask until the answer's first letter is one of ``choices`` (three tries)."""
        for _ in range(3):
            answer = self.ask(prompt)
            if answer is None:
                return None
            key = answer.strip().lower()[:1]
            if key in choices:
                return choices[key]
            self.stdout.write(f"Please answer one of: {', '.join(sorted(choices))}.\n")
        return None


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
