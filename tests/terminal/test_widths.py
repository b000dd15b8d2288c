"""Every table and box at 60, 80 and 120 columns, on a real terminal (tmux): nothing wider
than the screen, and nothing split inside a word, an id or a path (issue 31).

The check is the same everywhere: each word on the screen must be a word Ghost meant to
print — taken from the same output on a pipe, where nothing is wrapped — so a word cut in two
("cha" / "nge", "/subscri" / "ption") shows up as two words nobody wrote. Lines the terminal
itself folds (a path wider than the whole screen, left whole by Ghost) are joined back with
``capture-pane -J``, as a copy from the terminal would see them.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from rich.cells import cell_len

from storage.store import Store

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
ROOT = Path(__file__).resolve().parents[2]
GHOST = [sys.executable, "-m", "bot.cli"]
WIDTHS = [60, 80, 120]
DONE = "__screen_done__"
#: box-drawing and table rules, and the words Ghost adds when it shortens (never a cut word)
FRAME = re.compile(r"^[─═│╭╮╰╯ ]*$")


def _screen(width: int, env: dict[str, str], *args: str, timeout: float = 120) -> str:
    """Run ``ghost ARGS`` in a tmux pane ``width`` columns wide; the whole scrollback, with
    the lines the terminal folded joined (-J), trailing spaces removed."""
    socket = f"ghost-w-{uuid.uuid4().hex[:8]}"
    keep = ("PATH", "HOME", "PYTHONPATH", "GHOST_DATA_DIR", "GHOST_DATABASE_URL", "LANG")
    assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k in keep)
    command = f"sleep 1; env {assigns} {shlex.join([*GHOST, *args])}; echo {DONE}; sleep 60"

    def tmux(*a: str) -> str:
        return subprocess.run(["tmux", "-f", "/dev/null", "-L", socket, *a], capture_output=True,
                              text=True, timeout=20, check=True).stdout

    tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", "50", "-c", str(ROOT), command)
    try:
        tmux("set-option", "-t", "t", "history-limit", "20000")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if DONE in tmux("capture-pane", "-p", "-t", "t"):
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"ghost {' '.join(args)} did not finish at {width} columns")
        raw = tmux("capture-pane", "-p", "-t", "t", "-S", "-")
        assert all(cell_len(line.rstrip()) <= width for line in raw.splitlines()), raw
        joined = tmux("capture-pane", "-p", "-J", "-t", "t", "-S", "-")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=20,
                       check=False)
    text = "\n".join(line.rstrip() for line in joined.splitlines())
    return text[: text.index(DONE)].strip("\n")


def _folded_by_the_terminal(screen: str, width: int) -> list[str]:
    """Lines Ghost wrote wider than the screen, which the terminal then folded wherever the
    width ran out (mid-word): allowed only for one word wider than the whole screen (a path
    or URL, left whole so that it copies as one)."""
    return [line for line in screen.splitlines()
            if cell_len(line) > width and len(line.split()) > 1]


def _piped(env: dict[str, str], *args: str) -> str:
    """The same output on a pipe: nothing wrapped, and boxes (which rich draws at COLUMNS on
    a pipe) wide enough that no word in them is folded."""
    run = subprocess.run([*GHOST, *args], env={**env, "COLUMNS": "400"}, cwd=ROOT,
                         capture_output=True, text=True, timeout=180, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


#: numbers: two runs differ in their dates and times (ghost_20261128_171024, …T171024), so
#: both sides compare every number as "#"
STAMP = re.compile(r"\d+")


def _words(text: str) -> set[str]:
    return set(_lengths(text))


def _lengths(text: str) -> dict[str, int]:
    """Each word (numbers as "#") with the length it had on the screen."""
    found: dict[str, int] = {}
    for word in text.split():
        word = word.strip("│╭╮╰╯─═")
        if word:
            key = STAMP.sub("#", word)
            found[key] = max(found.get(key, 0), cell_len(word))
    return found


#: words whose value changes between two runs (an age)
VARYING = re.compile(r"^#[smhd]$")


def _unwritten(screen_lines: list[str], vocabulary: set[str]) -> list[str]:
    """Words on the screen that Ghost never wrote whole (pieces of a cut word)."""
    return sorted(w for line in screen_lines if not FRAME.match(line) for w in _words(line)
                  if w not in vocabulary and not VARYING.match(w))


def _env(tmp_path: Path, url: str | None = None) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GHOST_", "GEMINI_", "GOOGLE_")) and k != "NO_COLOR"}
    env["GHOST_DATA_DIR"] = str(tmp_path / "data")
    if url:
        env["GHOST_DATABASE_URL"] = url
    return env


SYMPTOMS = [
    "Checkout calls from web-vm-01 to the pricing service on pricing-vm-01 (10.2.1.4:8080) "
    "are intermittently slow since this morning",
    "Redis 10.1.2.4:6379 unreachable from web-vm-01 since 14:05 UTC",
    "dns",
]


@pytest.mark.parametrize("width", WIDTHS)
def test_session_list_keeps_ids_status_and_age_whole(store: Store, migrated_url: str,
                                                     tmp_path: Path, width: int) -> None:
    sids = []
    for n, symptom in enumerate(SYMPTOMS):
        sids.append(store.create_investigation(
            symptom=symptom, model="m", audit_dir="a", requested_by="alice-oncall",
            platform="terminal", status="running" if n == 2 else "completed",
            lab="nsg-deny-redis" if n == 1 else None).session_id)
    env = _env(tmp_path, migrated_url)
    screen = _screen(width, env, "session", "list")
    assert not _folded_by_the_terminal(screen, width), screen
    lines = screen.splitlines()
    assert lines[0].split()[:3] == ["ID", "STATUS", "AGE"], screen
    for sid in sids:  # whole, with its status and age on its line
        [row] = [line for line in lines if sid in line.split()]
        assert row.split()[1] in ("completed", "interrupted") and \
            re.fullmatch(r"\d+[smhd]", row.split()[2]), row
    vocabulary = _words(_piped(env, "session", "list")) | {"…"}
    assert not _unwritten(lines, vocabulary), screen
    if width == 60:  # the symptom folds under its row instead of a sliver of a column
        assert "SYMPTOM" not in lines[0] and any(
            line.startswith("    Checkout calls from") for line in lines), screen
    else:
        assert "SYMPTOM" in lines[0].split()
    if width == 120:
        assert "REQUESTER" in lines[0] and "STARTED" in lines[0]


@pytest.mark.parametrize("width", WIDTHS)
def test_lab_list_has_a_header_for_every_column(tmp_path: Path, width: int) -> None:
    env = _env(tmp_path)
    screen = _screen(width, env, "lab", "list")
    assert not _folded_by_the_terminal(screen, width), screen
    lines = screen.splitlines()
    header = lines[0].split()
    assert header[0] == "SCENARIO" and header[-1] == "TITLE", screen
    rows = [line.split() for line in lines[2:] if line and not line.startswith(" ")]
    columns = len(header)  # every row's leading cells sit under a header: none without one
    names = [row[0] for row in rows if not row[0][0].isdigit()]
    assert "nsg-deny-redis" in names and "mtu-blackhole" in names
    if columns == 3:
        assert header[1] == "FAULT"
    vocabulary = _words(_piped(env, "lab", "list")) | {"…"}
    assert not _unwritten(lines, vocabulary), screen
    if width == 120:
        assert columns == 3


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demo_header_box_and_closing_banner(tmp_path: Path, width: int) -> None:
    env = _env(tmp_path)
    piped = _piped(env, "demo", "service-down", "--yes")
    vocabulary = _words(piped)
    screen = _screen(width, env, "demo", "service-down", "--yes")
    assert not _folded_by_the_terminal(screen, width)
    lines = screen.splitlines()
    # the header: from the banner to the rule that ends it
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("LAB RUN:"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("═"))
    header = lines[start:end]
    assert any(line.strip().startswith("Approvals:") for line in header)
    assert not _unwritten(header, vocabulary), "\n".join(header)
    # the approval box: inside the border, a word is folded only when it is wider than the box
    box = [line for line in lines if line[:1] in "╭│╰"]
    assert box and all(cell_len(line) <= width for line in box)
    room = max(cell_len(line) for line in box) - 6
    long = {w for w, n in _lengths(piped).items() if n > room}
    cut = [w for w in _unwritten(box, vocabulary) if not any(w in whole for whole in long)]
    assert not cut, "\n".join(box)
    # the closing banner: the RCA path whole, on the line with the words or one of its own
    path = next(w for w in vocabulary if w.endswith(".md") and "/audit/ghost_rca_" in w)
    banner = [i for i, line in enumerate(lines) if "RCA REPORT WRITTEN:" in line]
    assert banner, screen
    at = banner[-1]
    assert path in _words(lines[at]) or path in _words(lines[at + 1]), "\n".join(
        lines[at - 2: at + 4])
    closing = lines[at - 1:]
    assert not _unwritten(closing, vocabulary), "\n".join(closing)
    # the commands to copy are whole on one line, after their label or under it
    for command in (r"ghost audit verify ghost_\d+_\d+",
                    r"ghost audit export ghost_\d+_\d+ --dir \."):
        assert any(re.fullmatch(rf"\s*(\S.*: )?{command}", line) for line in closing), \
            "\n".join(closing)
