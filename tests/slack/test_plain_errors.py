"""Command lines say what went wrong in plain words (not the shell's error codes), with the
audit id kept for the details."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.chat.command_lines import command_line
from tests.fakes.gemini_server import function_call_turn, text_turn
from tests.slack.conftest import CHANNEL, SlackHarness
from tests.slack.test_investigation_flow import shell, start, texts


def test_a_missing_program_is_named_in_plain_words(slack: SlackHarness, fake_gemini: Any,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # dig is not installed on this "Ghost host"
    fake_gemini.enqueue(function_call_turn(shell("dig redis.internal")),
                        text_turn("dig is missing; which resolver should I use?"))
    inv = start(slack)
    line = next(m for m in slack.fake.thread(CHANNEL, str(inv.thread_ref))
                if "dig redis.internal" in str(m.get("blocks")))
    body = texts([line])
    assert "`dig` is not installed on the Ghost host" in body and "audit `" in body
    assert "command_not_found" not in body and "error:" not in body
    assert "❗ SAFE not run" in body and "✅" not in body


@pytest.mark.parametrize(("error", "verdict", "words"), [
    ("timeout", "stopped", "ran past Ghost's time limit"),
    ("unsupported_syntax", "not run", "without a shell"),
    ("file_not_permitted", "not run", "own data directory"),
    ("interrupted", "outcome unknown", "was not run again"),
    ("call_failed", "failed", "Azure call returned an error"),
    ("something_new", "failed", "Ghost could not run it (something new)"),
])
def test_every_shell_error_reads_as_words(error: str, verdict: str, words: str) -> None:
    line = command_line({"command": "ping -c 1 10.0.0.4"},
                        {"status": "error", "error": error, "classification": "SAFE",
                         "audit_id": "ghost_x_007"})
    assert line.verdict == verdict and words in line.note and line.failed
    assert line.audit_id == "ghost_x_007" and error not in line.verdict


def test_expired_and_cancelled_approvals_are_not_called_denials() -> None:
    expired = command_line({"command": "echo x"}, {"status": "denied", "classification":
                                                   "RISKY", "error": "approval_expired"})
    assert expired.verdict == "expired" and "nobody decided in time" in expired.note
    gone = command_line({"command": "echo x"}, {"status": "denied", "classification":
                                                "RISKY", "error": "user_abandoned"})
    assert gone.verdict == "not run" and "cancelled" in gone.note
