"""What the engine does, printed for the person at the terminal (ghost-design §10)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TextIO

from bot.terminal.preview import output_preview
from bot.terminal.style import cut, fancy, say_command, wrapped

RULE = "═" * 54


class TerminalNotifier:
    """Prints what the engine does, in the spec's console style."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def _print(self, text: str = "") -> None:
        """A line, wrapped at spaces to the terminal's width (whole on a pipe)."""
        self.out.write("\n".join(wrapped(text, self.out)) + "\n")
        self.out.flush()

    def model_text(self, session_id: str, text: str) -> None:
        if not fancy(self.out):  # a pipe, a file or NO_COLOR: the model's words as written
            self._print(f"\n[Ghost Agent] {text.strip()}")
            return
        from bot.terminal.markdown import print_markdown

        self._print("\n[Ghost Agent]")
        print_markdown(text, self.out)

    def tool_result(self, session_id: str, name: str, args: Mapping[str, Any],
                    result: Mapping[str, Any]) -> None:
        if name == "run_shell_cmd":
            self._print(shell_line(args, result))
            for row in output_preview(result):
                if row.startswith("    │"):  # a glimpse of the output: one screen line each
                    self.out.write(cut(row, self.out) + "\n")
                elif ": ghost " in row:  # "… N more lines: ghost audit show ID": copyable
                    label, command = row.split(": ", 1)
                    say_command(self.out, label.strip() + ":", command, indent="    ")
                else:
                    self._print(row)
            self.out.flush()
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

    def model_outage(self, session_id: str, error: str, until: datetime) -> None:
        """Once per outage: what failed, and until when Ghost keeps asking (the waits between
        tries show on the status line, not as more lines)."""
        self._print(f"[Gemini] Gemini is unavailable; retrying until {until:%H:%M} UTC "
                    "(GHOST_GEMINI_OUTAGE_S; Ctrl-C saves the session for later). What failed: "
                    f"{error.strip()}")


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
    said = f" → {result['meaning']}" if result.get("meaning") else ""
    return f"[Shell] {classification} — {label}: {command}{exit_note}{said}{audit}"


def orchestrator_line(name: str, result: Mapping[str, Any]) -> str:
    task = result.get("task_id") or "-"
    state = result.get("state") or result.get("status")
    message = str(result.get("message") or result.get("error_detail") or "").strip()
    edited = result.get("edited")
    if name == "capture_traffic" and isinstance(edited, list) and edited:
        # the engineer's Modify: what runs is not what the model asked for
        message += f" (edited by the engineer: {'; '.join(str(e) for e in edited)})"
    return f"[Orchestrator] {name} {task}: {state}" + (f" — {message}" if message else "")


def version() -> str:
    """The installed Ghost's version (``ghost --version`` and the banner)."""
    from bot import __version__

    return __version__


def banner(session_id: str, out: TextIO) -> None:
    out.write(f"\n{RULE}\n  GHOST {version()}  |  Session: {session_id}\n{RULE}\n")
    out.flush()


def closing_banner(out: TextIO, *, path: str | None, confidence: str, turns: int,
                   duration_s: float | None, error: str | None = None,
                   already_done: bool = False, usage: str | None = None) -> None:
    """The last lines of a run; they say only what happened in this run.

    ``already_done``: the investigation had finished before (a resume of a finished session):
    nothing was written now. ``path`` None: the write failed and the report was printed.
    """
    from core.engine.rca_sections import format_duration

    if already_done:
        head = (f"INVESTIGATION ALREADY FINISHED — RCA: {path}" if path else
                "INVESTIGATION ALREADY FINISHED — its RCA was not written to a file")
    elif path:
        head = f"RCA REPORT WRITTEN: {path}"
    else:
        head = "RCA REPORT NOT WRITTEN" + (f" ({error})" if error else "") + \
            " — the report is printed above"
    took = format_duration(duration_s) if duration_s is not None else "unknown"
    text = (f"\n{RULE}\n  {head}\n"
            f"  Confidence: {confidence}  |  Turns: {turns}  |  Duration: {took}\n"
            + (f"  Usage: {usage}\n" if usage else "") + RULE)
    out.write("\n".join(wrapped(text, out)) + "\n")
    out.flush()
