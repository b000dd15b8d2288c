"""``ghost-forensics flowlogs``: files only under --out, short stdout, one-line errors, exit codes,
and the capture form left as it was (a capture named ``flowlogs`` included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forensics import flowlogs_cli
from forensics.cli import main
from lab.pcap import PcapWriter

from .flowlog_blobs import at, record, tup, write_blob
from .pipes import run_reader_gone
from .scenario import ethernet_packets

REPO = Path(__file__).resolve().parents[2]
WEB, DB = "10.1.1.4", "10.1.2.4"


def _blobs(root: Path, minutes: int = 12, deny_from: int = 6) -> Path:
    """Web → Redis each minute; from ``deny_from`` on, denied at the Redis NIC."""
    web, db = [], []
    allow = "DefaultRule_AllowVnetOutBound"
    for m in range(minutes):
        if m >= deny_from:
            web.append(record(m, "000D3A000001", [("nsg-web", [(allow, [
                tup(at(m), WEB, DB, 40000 + m, 6379, "B"),
                tup(at(m, 20), WEB, DB, 40000 + m, 6379, "E", ps=2, bs=120)])])]))
            db.append(record(m, "000D3A000002", [("nsg-db", [("UserRule_deny-web", [
                tup(at(m, 1), WEB, DB, 40000 + m, 6379, "D", direction="I")])])]))
        else:
            web.append(record(m, "000D3A000001", [("nsg-web", [(allow, [
                tup(at(m, 3), WEB, DB, 40000 + m, 6379, "E", ps=6, bs=600, pr=5,
                    br=900)])])]))
    write_blob(root, "000D3A000001", web)
    write_blob(root, "000D3A000002", db)
    return root


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    return subprocess.run([sys.executable, "-m", "forensics", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env=env)


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_writes_two_files_under_out_only(tmp_path: Path) -> None:
    blobs = _blobs(tmp_path / "blobs")
    before = _tree(blobs)
    out = tmp_path / "new" / "nested" / "out"
    r = _cli("flowlogs", str(blobs), "--src", WEB, "--dst", DB, "--port", "6379",
             "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert _tree(blobs) == before                  # nothing beside the input
    stem = "flowlogs_10.1.1.4-10.1.2.4-6379"
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}_report.md",
                                                     f"{stem}_semantic.json"]
    lines = r.stdout.splitlines()
    assert len(lines) <= 14
    assert "1 finding" in lines[0] and "10.1.1.4 → 10.1.2.4:6379" in lines[0]
    assert "CRITICAL" in lines[1] and "UserRule_deny-web" in lines[1]
    assert lines[-2] == f"semantic JSON: {out / (stem + '_semantic.json')}"
    doc = json.loads((out / f"{stem}_semantic.json").read_text())
    assert doc["kind"] == "vnet_flow_logs" and doc["schema_version"] == 1
    assert doc["query"] == {"src": WEB, "dst": DB, "port": 6379, "since": None,
                            "until": None}
    report = (out / f"{stem}_report.md").read_text()
    assert "## Findings" in report and "UserRule_deny-web" in report
    assert "\x1b[" not in r.stdout                 # no colour when piped


def test_default_output_is_the_current_directory(tmp_path: Path) -> None:
    blobs = _blobs(tmp_path / "blobs")
    work = tmp_path / "work"
    work.mkdir()
    r = _cli("flowlogs", str(blobs), cwd=work)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in work.iterdir()) == ["flowlogs_report.md",
                                                      "flowlogs_semantic.json"]
    # run again from inside the blob folder: its own outputs are never read as blobs
    r = _cli("flowlogs", ".", cwd=blobs)
    r = _cli("flowlogs", ".", cwd=blobs)
    assert r.returncode == 0, r.stderr
    doc = json.loads((blobs / "flowlogs_semantic.json").read_text())
    assert doc["inputs"]["blobs"] == 2 and "warning" not in r.stderr


def test_json_prints_one_object(tmp_path: Path) -> None:
    blobs = _blobs(tmp_path / "blobs")
    r = _cli("flowlogs", str(blobs), "--json", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    brief = json.loads(r.stdout)
    assert brief["kind"] == "vnet_flow_logs"
    assert Path(brief["semantic"]).is_file() and Path(brief["report"]).is_file()
    assert brief["findings"][0]["id"] == "flow_denied"
    assert brief["findings"][0]["window"]["from"] == "2026-03-02T09:06Z"


@pytest.mark.parametrize(("args", "expect"), [
    (["{tmp}/nope"], "not found: "),
    (["{tmp}/empty"], "no flow-log blobs (*.json) under"),
    (["{tmp}/foreign"], "no VNet flow-log records in 1 file"),
    (["{blobs}", "--src", "10.1.1.300"], "argument --src: '10.1.1.300' is not an IP address"),
    (["{blobs}", "--port", "70000"], "is not a port (0-65535)"),
    (["{blobs}", "--jobs", "0"], "must be a whole number from 1 to 256"),
    (["{blobs}", "--bogus"], "unrecognized arguments: --bogus"),
    ([], "the following arguments are required: PATH"),
    (["{blobs}", "--since", "2h", "--until", "3h"], "is not before --until"),
    (["{blobs}", "--since", "yesterday"], "give an ISO time (2026-03-02T09:20Z) or an age"),
    (["{blobs}", "--events", "{tmp}/missing.json"], "--events file not found"),
    (["{blobs}", "--events", "{tmp}/bad-events.json"], "has no eventTimestamp"),
    (["{blobs}", "--out", "{tmp}/a-file"], "is a file, not a directory"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], expect: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    blobs = _blobs(tmp_path / "blobs")
    (tmp_path / "empty").mkdir()
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "x.json").write_text('{"value": []}')
    (tmp_path / "bad-events.json").write_text('[{"caller": "x"}]')
    (tmp_path / "a-file").write_text("")
    argv = ["flowlogs"] + [a.replace("{tmp}", str(tmp_path)).replace("{blobs}", str(blobs))
                           for a in args]
    rc = main(argv)
    got = capsys.readouterr()
    assert rc == 2
    lines = got.err.splitlines()
    assert len(lines) == 1, got.err
    assert lines[0].startswith("ghost-forensics: error: ") and expect in lines[0]
    assert got.out == ""


def test_internal_error_is_one_line_and_exit_3(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    blobs = _blobs(tmp_path / "blobs")

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("boom")
    monkeypatch.setattr(flowlogs_cli, "build_document", broken)
    rc = main(["flowlogs", str(blobs), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 3
    assert err == "ghost-forensics: internal error: RuntimeError: boom\n"
    assert not (tmp_path / "o" / "flowlogs_semantic.json").exists()


def test_a_capture_named_flowlogs_is_still_a_capture(tmp_path: Path) -> None:
    """The subcommand is the first argument, spelt exactly; a capture of that name is
    reached as ./flowlogs (any path with a slash), or after an option or --."""
    w = PcapWriter()
    packets = list(ethernet_packets())
    for t, p in packets:
        w.add(t, p)
    w.write(str(tmp_path / "flowlogs"))
    for i, form in enumerate((["./flowlogs", "--out", "{out}"], ["--out", "{out}", "flowlogs"],
                              ["--out", "{out}", "--", "flowlogs"])):
        out = tmp_path / f"out{i}"
        out.mkdir()
        r = _cli(*[a.replace("{out}", str(out)) for a in form], cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        doc = json.loads((out / "flowlogs_semantic.json").read_text())
        assert doc["capture"]["packets"] == len(packets)
    r = _cli("flowlogs", cwd=tmp_path)
    assert r.returncode == 2
    assert "ghost-forensics ./flowlogs" in r.stderr and len(r.stderr.splitlines()) == 1


def test_help_names_the_subcommand(tmp_path: Path) -> None:
    r = _cli("--help", cwd=tmp_path)
    assert r.returncode == 0 and "ghost-forensics flowlogs PATH" in r.stdout.replace("\n", " ")
    r = _cli("flowlogs", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "--events FILE" in r.stdout and "./flowlogs" in r.stdout


def test_a_reader_that_goes_away_is_no_error(tmp_path: Path) -> None:
    """``ghost-forensics flowlogs … | head -1``: the files are written, nothing on stderr
    (it printed "error: Broken pipe" and exited 2)."""
    blobs = _blobs(tmp_path / "blobs")
    code, err = run_reader_gone(["flowlogs", str(blobs), "--out", str(tmp_path / "out")],
                                cwd=tmp_path)
    assert code == 0 and err == b""
    assert sorted(p.suffix for p in (tmp_path / "out").iterdir()) == [".json", ".md"]
