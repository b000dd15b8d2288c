"""While the engineer waits: the [Shell] line when a command starts, a live status line only on
a terminal, and a preview of what the command printed (issue 17)."""

from __future__ import annotations

import io
import time
from typing import Any

from bot.terminal.activity import Activity, ThinkingBrain, watch_commands
from bot.terminal.preview import output_preview


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Shell:
    """Only what watch_commands touches: the runner the gate calls once a command may run."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner


def _slow_runner(seconds: float, seen: list[str]) -> Any:
    def run(argv: Any, timeout_s: float, max_output_bytes: int) -> str:
        seen.append(" ".join(argv))
        time.sleep(seconds)
        return "the runner's result"
    return run


def test_the_shell_line_is_printed_before_the_command_runs() -> None:
    out = io.StringIO()
    printed_before: list[str] = []
    seen: list[str] = []
    runner = _slow_runner(0.0, seen)

    def spy(argv: Any, timeout_s: float, max_output_bytes: int) -> str:
        printed_before.append(out.getvalue())
        return str(runner(argv, timeout_s, max_output_bytes))

    shell = Shell(spy)
    watch_commands(shell, Activity(out))
    watch_commands(shell, Activity(out))  # wrapping twice must not print twice
    assert shell.runner(("ping", "-c", "20", "10.0.0.4"), 60.0, 1000) == "the runner's result"
    assert printed_before == ["[Shell] running: ping -c 20 10.0.0.4\n"]
    assert out.getvalue() == "[Shell] running: ping -c 20 10.0.0.4\n"


def test_a_pipe_gets_no_status_line_and_no_control_codes() -> None:
    out = io.StringIO()
    shell = Shell(_slow_runner(1.2, []))
    watch_commands(shell, Activity(out))
    shell.runner(("ping", "-c", "2", "10.0.0.4"), 60.0, 1000)
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()


def test_a_terminal_shows_the_elapsed_seconds_while_it_runs(monkeypatch: Any) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = FakeTty()
    shell = Shell(_slow_runner(2.3, []))
    watch_commands(shell, Activity(out))
    shell.runner(("ping", "-c", "20", "10.0.0.4"), 60.0, 1000)
    screen = out.getvalue()
    assert "running ping -c 20 10.0.0.4" in screen
    assert "2s" in screen  # the live line counted up while the command ran


def test_the_model_wait_is_shown_and_everything_else_passes_through(monkeypatch: Any) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)

    class Brain:
        model = "gemini-test"

        def generate(self, **kwargs: Any) -> str:
            time.sleep(1.1)
            return "reply"

    out = FakeTty()
    brain = ThinkingBrain(Brain(), Activity(out))
    assert brain.model == "gemini-test"
    assert brain.generate(history=[]) == "reply"
    assert "Ghost is thinking (gemini-test)" in out.getvalue()


def test_the_preview_is_a_few_redacted_lines_and_says_where_the_rest_is() -> None:
    output = "\n".join([f"line {i}" for i in range(12)] +
                       ["password=hunter2hunter2 AccountKey=" + "A" * 86 + "=="])
    rows = output_preview({"output": output, "audit_id": "ghost_1_004"}, lines=5)
    assert rows[:5] == [f"    │ line {i}" for i in range(5)]
    assert rows[5] == "    … 8 more lines: ghost audit show ghost_1_004"
    secret = output_preview({"output": output, "audit_id": "a"}, lines=20)
    assert not any("hunter2hunter2" in r or "A" * 86 in r for r in secret)
    assert output_preview({"output": "  \n", "audit_id": "a"}) == []
    short = output_preview({"output": "10.0.0.4\n", "audit_id": "a"})
    assert short == ["    │ 10.0.0.4"]  # all of it shown: no pointer to the rest


def test_on_a_terminal_the_running_line_gives_way_to_the_outcome(monkeypatch: Any) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "40")
    out = FakeTty()
    shell = Shell(_slow_runner(0.0, []))
    watch_commands(shell, Activity(out))
    shell.runner(("ping", "-c", "20", "rt-prod-spoke-app-westeurope-001"), 60.0, 1000)
    screen = out.getvalue()
    # wrapped at a space, never inside the name, then erased: both lines (cursor up 2, clear)
    assert screen.startswith("[Shell] running: ping -c 20\n    rt-prod-spoke-app-westeurope-001\n")
    assert screen.endswith("\x1b[2F\x1b[J")


def test_a_command_stopped_by_ctrl_c_keeps_its_running_line(monkeypatch: Any) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = FakeTty()

    def interrupted(argv: Any, timeout_s: float, max_output_bytes: int) -> str:
        raise KeyboardInterrupt

    shell = Shell(interrupted)
    watch_commands(shell, Activity(out))
    try:
        shell.runner(("ping", "-c", "20", "10.0.0.4"), 60.0, 1000)
    except KeyboardInterrupt:
        pass
    assert "[Shell] running: ping -c 20 10.0.0.4" in out.getvalue()
    assert "\x1b[1F" not in out.getvalue()
