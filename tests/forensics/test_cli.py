"""The CLI contract: three files, their names, the summary size, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.cli import main
from lab.pcap import PcapWriter

from .scenario import ethernet_packets

REPO = Path(__file__).resolve().parents[2]


def _capture(tmp_path: Path, name: str = "web-vm-01.pcap") -> Path:
    w = PcapWriter()
    for t, p in ethernet_packets():
        w.add(t, p)
    path = tmp_path / name
    w.write(str(path))
    return path


def test_writes_three_files_and_prints_their_paths(tmp_path: Path) -> None:
    cap = _capture(tmp_path)
    (tmp_path / "sem").mkdir()
    (tmp_path / "rep").mkdir()
    out = subprocess.run([sys.executable, "-m", "forensics", str(cap), "--semantic-dir",
                          str(tmp_path / "sem"), "--report-dir", str(tmp_path / "rep")],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    paths = out.stdout.split()
    assert paths == [str(tmp_path / "sem" / "web-vm-01_semantic.json"),
                     str(tmp_path / "rep" / "web-vm-01_forensic_report.md"),
                     str(tmp_path / "rep" / "web-vm-01_executive_summary.md")]
    doc = json.loads(Path(paths[0]).read_text())
    assert doc["schema_version"] == 1
    assert doc["tcp_analysis"]["fast_retransmission"] == 1
    assert doc["tcp_resets"] == 1
    assert "frame_flags" not in doc
    flow = doc["flows"][0]
    assert (flow["src"], flow["dport"], flow["conn_state"]) == ("10.0.0.1", 443, "RSTR")
    assert flow["history"].startswith("ShA")
    assert flow["handshake_rtt_ms"] == 40.0
    report = Path(paths[1]).read_text().splitlines()
    assert "## Executive Summary" in report[:5]
    summary = Path(paths[2]).read_text().splitlines()
    assert len(summary) <= 50
    assert any("retransmission" in line for line in summary)
    top = doc["findings"][0]
    assert top["rank"] == 1 and top["evidence_frames"]


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"", "empty"),
        (b"this is a log file, not a capture\n" * 10, "not a packet capture"),
        (b"\xd4\xc3\xb2\xa1\x02\x00", "cut short"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, content: bytes, expect: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(content)
    rc = main([str(bad), "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and expect in err
    assert "Traceback" not in err


def test_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([str(tmp_path / "nope.pcap"), "--semantic-dir", str(tmp_path),
               "--report-dir", str(tmp_path)])
    assert rc == 2
    assert "not found" in capsys.readouterr().err


def test_truncated_capture_gives_partial_analysis_with_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = _capture(tmp_path)
    data = cap.read_bytes()
    cap.write_bytes(data[: len(data) - 30])  # cut inside the last record
    rc = main([str(cap), "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path)])
    assert rc == 0
    assert "truncated" in capsys.readouterr().err
    doc = json.loads((tmp_path / "web-vm-01_semantic.json").read_text())
    assert doc["capture"]["packets"] == 12
    assert doc["capture"]["warnings"]
    assert any(f["id"] == "capture_damaged" for f in doc["findings"])


def test_directory_instead_of_capture_says_so(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([str(tmp_path), "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path)])
    assert rc == 2
    assert "is a directory" in capsys.readouterr().err


def test_unknown_link_type_is_a_warning_not_a_clean_bill(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Packets nobody could decode must not end in 'no network problem visible'."""
    w = PcapWriter(linktype=4242)  # no such link type
    for t, p in ethernet_packets():
        w.add(t, p)
    cap = tmp_path / "odd.pcap"
    w.write(str(cap))
    rc = main([str(cap), "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path)])
    assert rc == 0
    assert "could not be decoded" in capsys.readouterr().err
    doc = json.loads((tmp_path / "odd_semantic.json").read_text())
    ids = [f["id"] for f in doc["findings"]]
    assert "capture_undecodable" in ids
    assert "no_problem_seen" not in ids and "capture_damaged" not in ids
