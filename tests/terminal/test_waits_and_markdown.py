"""A Gemini that fails is not a silent console: each retried attempt names the endpoint, the
attempt and the wait; the model's Markdown is rendered on a terminal and left as written on a
pipe (issue 17)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.terminal.console import TerminalNotifier
from tests.fakes.gemini_server import call, error_response, function_call_turn

GHOST = [sys.executable, "-m", "bot.cli"]
MARKDOWN = "**Hypothesis H1:** the NSG rule `deny-6379` blocks Redis.\n\n- check the NSG\n"


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_retried_gemini_failure_names_the_endpoint_and_the_attempt(
        fake_gemini: Any, cli_env: dict[str, str], tmp_path: Path) -> None:
    fake_gemini.enqueue(
        error_response(503, "The model is overloaded."),
        function_call_turn(call("complete_investigation", {
            "confidence": "low", "root_cause_summary": "Not found.",
            "recommended_actions": ["Look again"]})),
    )
    env = {**cli_env, "GHOST_MODEL": "gemini-test", "GEMINI_API_KEY": "test-key",
           "GOOGLE_GEMINI_BASE_URL": os.environ["GOOGLE_GEMINI_BASE_URL"]}
    run = subprocess.run([*GHOST, "investigate", "redis unreachable"], env=env, cwd=tmp_path,
                         input="", capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    endpoint = f"{fake_gemini.base_url}/v1beta/models/gemini-test:generateContent"
    [line] = [x for x in run.stdout.splitlines() if x.startswith("[Gemini]")]  # told once
    assert line.startswith("[Gemini] Gemini is unavailable; retrying until ")
    assert "What failed: Gemini is unavailable (503" in line
    assert endpoint in line and line.endswith("The model is overloaded.")
    assert "RCA REPORT WRITTEN" in run.stdout  # the second attempt went on
    assert "\x1b" not in run.stdout  # piped: no live line


def test_an_unreachable_gemini_is_named_in_the_error(cli_env: dict[str, str],
                                                     tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    from bot.gemini_brain import GeminiBrain
    from core.engine.brain import BrainError

    brain = GeminiBrain("gemini-test", "k", base_url=f"http://127.0.0.1:{port}", timeout_s=5)
    with pytest.raises(BrainError) as err:
        brain.generate(system_prompt="s", tools=[], history=[
            {"role": "user", "parts": [{"text": "hi"}]}])
    assert err.value.transient
    assert f"http://127.0.0.1:{port}/v1beta/models/gemini-test:generateContent" in str(err.value)
    assert brain.host() == f"127.0.0.1:{port}"


def test_markdown_is_rendered_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = FakeTty()
    TerminalNotifier(out).model_text("s", MARKDOWN)
    screen = out.getvalue()
    assert "**" not in screen and "`deny-6379`" not in screen
    assert "\x1b[1mHypothesis H1:" in screen  # bold, not asterisks
    assert " • \x1b[0mcheck the NSG" in screen  # a list item, not a "-"


@pytest.mark.parametrize("no_color", [None, "1"])
def test_markdown_is_left_as_written_on_a_pipe_or_with_no_color(
        monkeypatch: pytest.MonkeyPatch, no_color: str | None) -> None:
    out: io.StringIO = io.StringIO()
    if no_color:
        monkeypatch.setenv("NO_COLOR", no_color)
        out = FakeTty()
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    TerminalNotifier(out).model_text("s", MARKDOWN)
    assert out.getvalue() == "\n[Ghost Agent] " + MARKDOWN.strip() + "\n"
