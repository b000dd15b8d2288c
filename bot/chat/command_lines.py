"""One compact thread line per command that ran or was refused, with what a shell error
means for an on-call engineer (not installed, stopped, not run and why)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.chat.approval_cards import refusal_reason


@dataclass(frozen=True)
class CommandLine:
    """A command that ran or was refused, as one compact line."""

    classification: str
    verdict: str
    command: str
    audit_id: str | None
    note: str = ""
    #: it did not run to the end (not installed, stopped, refused): shown with ❗, not ✅
    failed: bool = False

    def icon(self) -> str:
        """What happened, at a glance: ✅ it ran (after an approval too — a ⚠️ there read as
        a warning about a command that ran fine), 🚫 denied, ⛔ refused or blocked, ⌛ expired,
        ❗ it could not run to the end."""
        if self.failed:
            return "❗"
        if self.verdict.startswith("ran"):
            return "✅"
        return {"denied": "🚫", "blocked": "⛔", "not run": "⛔", "expired": "⌛"}.get(
            self.verdict, {"SAFE": "✅", "RISKY": "⚠️", "FORBIDDEN": "⛔"}.get(
                self.classification, "•"))


def _program(command: str) -> str:
    """The program a command line names, for a sentence (never raises on bad quoting)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return (words[0] if words else "the program").replace("`", "'")[:60]


def error_words(error: str, command: str) -> tuple[str, str]:
    """A shell error code as (verdict, what it means) for an on-call engineer; the audit id
    stays on the line for the details."""
    program = _program(command)
    known = {
        "command_not_found": ("not run", f"`{program}` is not installed on the Ghost host "
                              "(or not on its PATH), so it could not be started"),
        "timeout": ("stopped", "it ran past Ghost's time limit for one command and was "
                    "stopped; Ghost has the output it printed until then"),
        "unsupported_syntax": ("not run", "Ghost runs a single program without a shell; "
                               "pipes, redirections and chained commands are not executed"),
        "file_not_permitted": ("not run", "Ghost only reads files inside its own data "
                               "directory"),
        "secret_in_command": ("not run", "the command line contains a secret, so it was "
                              "neither stored nor offered for approval"),
        "empty_command": ("not run", "Ghost's model sent an empty command"),
        "interrupted": ("outcome unknown", "Ghost stopped while it was running; it was not "
                        "run again"),
        "outcome_unknown": ("outcome unknown", "Ghost stopped while it was running; it was "
                            "not run again"),
        "call_failed": ("failed", "the Azure call returned an error; Ghost has the details "
                        "and re-plans"),
        "approval_missing": ("not run", "its approval record is missing, so it was not run"),
        "audit_record_missing": ("outcome unknown", "its audit record is missing"),
    }
    if error in known:
        return known[error]
    return "failed", f"Ghost could not run it ({error.replace('_', ' ')})"


def command_line(args: Mapping[str, Any], result: Mapping[str, Any]) -> CommandLine:
    command = str(args.get("command") or "")
    classification = str(result.get("classification") or "?")
    status, action, error = result.get("status"), result.get("action"), result.get("error")
    audit_id = str(result["audit_id"]) if result.get("audit_id") else None
    if status == "denied":
        reason = result.get("denial_reason")
        if error == "approval_expired":
            return CommandLine(classification, "expired", command, audit_id,
                               "nobody decided in time; it did not run")
        if error == "user_abandoned":
            return CommandLine(classification, "not run", command, audit_id,
                               "the investigation was cancelled before anyone decided")
        if str(reason or "").startswith("Modification blocked"):  # an edit the gate refused
            return CommandLine(classification, "not run", command, audit_id,
                               f"the edit was refused: {refusal_reason(str(reason))}")
        return CommandLine(classification, "denied", command, audit_id,
                           f'reason: "{reason}"' if reason else "")
    if error == "forbidden_command":
        return CommandLine("FORBIDDEN", "blocked", command, audit_id, "never offered for approval")
    if status == "error":
        verdict, meaning = error_words(str(error or "unknown"), command)
        return CommandLine(classification, verdict, command, audit_id, meaning, failed=True)
    label = {"auto_approved": "ran", "user_approved": "ran after approval",
             "user_modified": "ran as modified"}.get(str(action), str(action))
    code = result.get("exit_code")
    return CommandLine(classification, label, command, audit_id,
                       "" if code in (0, None) else f"exit {code}")
