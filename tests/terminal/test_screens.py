"""The real screen: `ghost demo` in tmux at 60 and 120 columns (the approval box fits, names are
never split, Modify edits the pre-filled command with the arrow keys), and the same run piped has
no control codes (issue 17)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len

GHOST = [sys.executable, "-m", "bot.cli"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GHOST_", "GEMINI_", "GOOGLE_")) and k != "NO_COLOR"}
    env["GHOST_DATA_DIR"] = str(tmp_path / "data")
    return env


class Tmux:
    """One tmux server of our own (its own socket), one pane of a fixed size."""

    def __init__(self, width: int, command: str, cwd: Path) -> None:
        self.socket = f"ghost-test-{uuid.uuid4().hex[:8]}"
        self._tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", "50", "-c", str(cwd),
                   command)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-f", "/dev/null", "-L", self.socket, *args],
                              capture_output=True, text=True, timeout=20, check=True).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.3)
        raise AssertionError(f"{text!r} never appeared:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=20, check=False)


def _shell_command(tmp_path: Path, *args: str) -> str:
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in _env(tmp_path).items()
                   if k in ("GHOST_DATA_DIR", "PATH", "HOME", "PYTHONPATH"))
    # tmux settles the pane at its requested size just after it starts: wait for that first
    return f"sleep 1; env {env} {shlex.join([*GHOST, *args])}; sleep 60"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
@pytest.mark.parametrize("width", [60, 120])
def test_the_box_fits_and_modify_edits_the_command_on_screen(tmp_path: Path,
                                                             width: int) -> None:
    tmux = Tmux(width, _shell_command(tmp_path, "demo", "service-down"),
                Path(__file__).resolve().parents[2])
    try:
        screen = tmux.wait_for("Your choice:")
        box = [line for line in screen.splitlines() if line[:1] in "╭│╰"]
        assert box and all(cell_len(line) <= width for line in box), screen
        # as wide as the terminal allows, widened past the usual 100 only when one word needs it
        assert max(cell_len(line) for line in box) == min(width, 112)
        # the capture's storage account is never split at a hyphen or inside the name
        assert any("stghostlabcaptures" in line.split() for line in box)
        if width >= 120:  # room enough: the 97-column storage URL is shown on one line
            assert any(w.startswith("https://") and w.endswith(".pcap")
                       for line in box for w in line.split()), screen
        tmux.keys("m", "Enter")
        tmux.wait_for("New command (edit, then Enter): az network watcher")
        tmux.keys("End", *["Left"] * 27, "BSpace", "BSpace", "30")
        edited = tmux.wait_for("--time-limit 30 --capture-limit")
        assert "^[" not in edited  # the arrow keys moved the cursor, they typed nothing
    finally:
        tmux.close()


def test_piped_output_has_the_same_content_without_control_codes(tmp_path: Path) -> None:
    run = subprocess.run([*GHOST, "demo", "service-down", "--yes"], env=_env(tmp_path),
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "\x1b" not in run.stdout and "\r" not in run.stdout
    assert "SAFETY SHELL ALERT" in run.stdout and "[Shell] running: " in run.stdout
    assert "GHOST " in run.stdout and "Session: ghost_" in run.stdout


@pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("ping") is None,
                    reason="needs tmux and ping")
@pytest.mark.parametrize("width", [60, 120])
def test_a_running_ping_shows_a_live_line_with_the_elapsed_time(
        fake_gemini: Any, tmp_path: Path, width: int) -> None:
    from tests.fakes.gemini_server import call, function_call_turn

    fake_gemini.enqueue(
        function_call_turn(call("run_shell_cmd", {"command": "ping -c 4 127.0.0.1",
                                                  "reasoning": "is the stack answering?"}),
                           text="**Hypothesis H1:** the stack drops ICMP."),
        function_call_turn(call("complete_investigation", {
            "confidence": "low", "root_cause_summary": "Loopback answers."})),
    )
    env = {"GEMINI_API_KEY": "test-key", "GHOST_MODEL": "gemini-test",
           "GOOGLE_GEMINI_BASE_URL": os.environ["GOOGLE_GEMINI_BASE_URL"]}
    extra = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    command = _shell_command(tmp_path, "investigate", "ping loss").replace(
        "; env ", f"; env {extra} ", 1)
    tmux = Tmux(width, command, Path(__file__).resolve().parents[2])
    try:
        live = tmux.wait_for("running ping -c 4 127.0.0.1  ", timeout=60)
        assert "[Shell] running: ping -c 4 127.0.0.1" in live
        assert "**" not in live and "Hypothesis H1: the stack drops ICMP." in live
        time.sleep(1.5)
        ticking = tmux.screen()
        assert any(line.rstrip().endswith(("1s", "2s", "3s")) for line in ticking.splitlines()
                   if "running ping" in line), ticking
        done = tmux.wait_for("RCA REPORT WRITTEN", timeout=60)
        assert "[Shell] SAFE — auto-approved: ping -c 4 127.0.0.1" in done
        assert "[Shell] running:" not in done  # replaced by its outcome
        assert all(cell_len(line.rstrip()) <= width for line in done.splitlines())
    finally:
        tmux.close()
