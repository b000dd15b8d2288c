"""``ghost-forensics CAPTURE`` for a person (issue #17): next to the capture or ``--out``, the
top findings on the terminal, and no directory ever created behind the user's back."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli import main
from forensics.terminal import top_findings

from .test_cli import REPO, _capture

NAMES = ("web-vm-01_semantic.json", "web-vm-01_forensic_report.md",
         "web-vm-01_executive_summary.md")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "forensics", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=60)


def test_capture_alone_writes_next_to_it_and_prints_top_findings(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    done = _cli(str(cap))
    assert done.returncode == 0, done.stderr
    for name in NAMES:
        assert (tmp_path / name).is_file()
    lines = done.stdout.splitlines()
    assert lines[0].startswith("web-vm-01.pcap: ") and " packets, " in lines[0]
    assert lines[1].startswith(" 1. ") and "next:" in lines[2]  # ranked, with the next step
    assert f"executive summary: {tmp_path / NAMES[2]}" in lines
    assert "\x1b" not in done.stdout  # not a terminal: plain text


def test_out_dir_takes_all_three_files(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    out = tmp_path / "reports"
    out.mkdir()
    done = _cli(str(cap), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(NAMES)
    assert not (tmp_path / NAMES[0]).exists()


@pytest.mark.parametrize("flag", ["--out", "--semantic-dir", "--report-dir"])
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
