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
    said = f" → {result['meaning']}" if result.get("meaning") else ""
    return f"[Shell] {classification} — {label}: {command}{exit_note}{said}{audit}"


def orchestrator_line(name: str, result: Mapping[str, Any]) -> str:
    task = result.get("task_id") or "-"
    state = result.get("state") or result.get("status")
    message = str(result.get("message") or result.get("error_detail") or "").strip()
    return f"[Orchestrator] {name} {task}: {state}" + (f" — {message}" if message else "")


def banner(session_id: str, out: TextIO) -> None:
    out.write(f"\n{RULE}\n  GHOST  |  Session: {session_id}\n{RULE}\n")
    out.flush()


def closing_banner(out: TextIO, *, path: str | None, confidence: str, turns: int,
                   duration_s: float | None, error: str | None = None,
                   already_done: bool = False) -> None:
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
    out.write(f"\n{RULE}\n  {head}\n"
              f"  Confidence: {confidence}  |  Turns: {turns}  |  Duration: {took}\n{RULE}\n")
    out.flush()


class TerminalLease:
    """The liveness of a `ghost investigate` process: a lease on its investigation, renewed
    from a daemon thread while the process lives (chat workers hold the same kind of lease).

    Killed with -9, the process stops renewing; once the lease expires, the next session's
    orphan scan treats the investigation as ended and offers to clean up its captures.
    """

    def __init__(self, store: Any, session_id: str, *, seconds: float = 60.0,
                 owner: str | None = None) -> None:
        import os
        import socket

        self.store = store
        self.session_id = session_id
        self.seconds = max(float(seconds), 3.0)
        self.owner = owner or f"terminal:{socket.gethostname()}:{os.getpid()}"
        self._stop: Any = None
        self._thread: Any = None

    def acquire(self) -> bool:
        """Take the lease and start renewing it; False when another live process holds it."""
        import threading

        if not self.store.take_lease(self.session_id, self.owner, lease_seconds=self.seconds):
            stale = self._dead_local_holder()
            if stale is None:
                return False
            # a `ghost investigate` on this machine that was killed: no need to wait it out
            self.store.release_lease(self.session_id, stale)
            if not self.store.take_lease(self.session_id, self.owner,
                                         lease_seconds=self.seconds):
                return False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="ghost-terminal-lease",
                                        daemon=True)
        self._thread.start()
        return True

    def _dead_local_holder(self) -> str | None:
        """The holder's owner string when it is a terminal run on this host whose process is
        gone (killed with -9); None otherwise (another host, or still alive)."""
        import os
        import socket

        holder = getattr(self.store.get_investigation(self.session_id), "lease_owner", None)
        prefix = f"terminal:{socket.gethostname()}:"
        if not isinstance(holder, str) or not holder.startswith(prefix):
            return None
        try:
            os.kill(int(holder[len(prefix):]), 0)
        except ProcessLookupError:
            return holder
        except (ValueError, PermissionError):
            return None
        return None

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.store.renew_lease(self.session_id, self.owner, lease_seconds=self.seconds)
            except Exception:  # noqa: BLE001 - a missed renewal is retried; never crash
                continue

    def release(self) -> None:
        if self._stop is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._stop = None
        try:
            self.store.release_lease(self.session_id, self.owner)
        except Exception:  # noqa: BLE001 - an unreleased lease simply expires
            return


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
