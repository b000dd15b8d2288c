"""``ghost-forensics CAPTURE`` for a person (issues #17, #31): into the current directory or
``--out`` (created when missing), never beside the capture unless asked, the top findings on
the terminal; the engine's directories are never created behind its back."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli import main
from forensics.terminal import top_findings

from .pipes import run_reader_gone
from .test_cli import REPO, _capture

NAMES = ("web-vm-01_semantic.json", "web-vm-01_forensic_report.md",
         "web-vm-01_executive_summary.md")


def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "forensics", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=60)


def test_capture_alone_writes_into_the_current_directory(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    cap = _capture(shared)
    shared.chmod(0o555)  # a folder the user may not write to (as root this is only a sign)
    work = tmp_path / "work"
    work.mkdir()
    try:
        done = _cli(str(cap), cwd=work)
    finally:
        shared.chmod(0o755)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in work.iterdir()) == sorted(NAMES)
    assert sorted(p.name for p in shared.iterdir()) == ["web-vm-01.pcap"]  # nothing beside it
    lines = done.stdout.splitlines()
    assert lines[0].startswith("web-vm-01.pcap: ") and " packets, " in lines[0]
    assert lines[1].startswith(" 1. ") and "next:" in lines[2]  # ranked, with the next step
    assert "Written to the current directory:" in lines
    assert f"executive summary: {work / NAMES[2]}" in lines
    assert "\x1b" not in done.stdout  # not a terminal: plain text


def test_out_dir_takes_all_three_files(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    out = tmp_path / "reports"
    out.mkdir()
    done = _cli(str(cap), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(NAMES)
    assert not (tmp_path / NAMES[0]).exists()
    assert f"Written to {out}:" in done.stdout.splitlines()


def test_out_dir_is_created_when_missing_and_said_so(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    out = tmp_path / "new" / "reports"
    done = _cli(str(cap), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(NAMES)
    assert f"Written to {out} (created):" in done.stdout.splitlines()


def test_out_that_is_a_file_is_one_line_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    cap = _capture(tmp_path)
    (tmp_path / "taken").write_text("x")
    assert main([str(cap), "--out", str(tmp_path / "taken")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is not a directory" in err and "--out" in err


def test_a_missing_capture_creates_no_out_dir(tmp_path: Path) -> None:
    assert main([str(tmp_path / "nope.pcap"), "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", ["--semantic-dir", "--report-dir"])
def test_missing_output_dir_is_one_line_exit_2_and_nothing_created(
        flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = _capture(tmp_path)
    missing = tmp_path / "no" / "such"
    assert main([str(cap), flag, str(missing)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(missing) in err and flag in err
    assert not (tmp_path / "no").exists()
    assert not (tmp_path / NAMES[0]).exists()  # nothing written elsewhere either


def test_engine_flags_print_only_the_three_paths(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    done = _cli(str(cap), "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(tmp_path / n) for n in NAMES]


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _doc() -> dict[str, object]:
    findings = [{"rank": i, "severity": s, "title": f"finding {i}", "next_step": "look"}
                for i, s in enumerate(["high", "medium", "low", "info", "info", "info"], 1)]
    return {"capture": {"file": "/x/c.pcap", "packets": 1234}, "findings": findings}


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = _Tty()
    top_findings(_doc(), ["a", "b", "c"], tty)
    assert "\x1b[31mHIGH" in tty.getvalue()
    assert "… 1 more in the report" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = _Tty()
    top_findings(_doc(), ["a", "b", "c"], plain)
    assert "\x1b" not in plain.getvalue()
    assert plain.getvalue().startswith("c.pcap: 1,234 packets, 6 findings\n")


def test_every_argument_has_help() -> None:
    done = _cli("--help")
    assert done.returncode == 0
    for flag in ("--out", "--semantic-dir", "--report-dir", "--compare", "--frame-flags",
                 "--jobs", "--version", "capture"):
        assert flag in done.stdout
    from forensics.cli import _parser

    assert all(a.help for a in _parser()._actions)


def test_a_reader_that_goes_away_is_no_error(tmp_path: Path) -> None:
    """``ghost-forensics CAPTURE | head -1``: the files are written, nothing on stderr."""
    cap = _capture(tmp_path)
    code, err = run_reader_gone([str(cap), "--out", str(tmp_path / "out")], cwd=REPO)
    assert code == 0 and err == b""
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(NAMES)
