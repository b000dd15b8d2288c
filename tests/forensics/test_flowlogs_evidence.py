"""Flow-log evidence as the RCA cites it (issue 33): the analyser's stdout carries one key line
per finding (id, deciding rule, first and last minute), and the audit record's meaning reads
the top one, so the RCA's evidence table shows the rule and the window without the files.

The blobs are the lab's (`az storage blob download` answered by the lab runner) and the
analyser is the real CLI, as an investigation runs it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from core.engine.outcomes import meaning
from forensics.flowlogs_cli import main as flowlogs_main
from lab.runner import LabRunner
from lab.scenario import find_scenario, load_scenario

ACCOUNT = ["--account-name", "stflowweu01", "-c", "insights-logs-flowlogflowevent",
           "--auth-mode", "login"]


def _download(scenario: str, hour: str, folder: Path) -> list[str]:
    """Every blob of that hour, downloaded as the investigation does."""
    runner = LabRunner(load_scenario(find_scenario(scenario)))
    listed = runner.run(["az", "storage", "blob", "list", *ACCOUNT, "--query", "[].name",
                         "-o", "tsv"])
    assert listed.exit_code == 0, listed.stderr
    files = []
    for n, name in enumerate(n for n in listed.stdout.split() if f"/h={hour}/" in n):
        target = folder / f"blob-h{hour}-{n}.json"
        got = runner.run(["az", "storage", "blob", "download", *ACCOUNT, "-n", name, "--file",
                          str(target), "-o", "none"])
        assert got.exit_code == 0, got.stderr
        files.append(str(target))
    assert files, f"{scenario}: no blob for hour {hour}"
    return files


def _analyse(files: list[str], *question: str, out: Path) -> tuple[int, str]:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = flowlogs_main([*files, *question, "--out", str(out)])
    return code, stdout.getvalue()


@pytest.mark.parametrize(("scenario", "hours", "question", "expected"), [
    ("lb-probe-blocked", ["13"], ["--dst", "10.1.3.0/24", "--port", "8080"],
     "flow logs: flow_denied of 168.63.129.16 → 10.1.3.4:8080/TCP and others by "
     "UserRule_deny-all-inbound, 2026-11-22T13:02Z to 2026-11-22T13:40Z"),
    ("firewall-rule-deny", ["13", "14"], ["--src", "10.2.1.4"],
     "flow logs: flow_one_way of 10.2.1.4 → 203.0.113.60:5432/TCP by "
     "UserRule_allow-out-partner, 2026-11-29T13:50Z to 2026-11-29T14:19Z"),
    ("firewall-rule-deny", ["13"], ["--src", "10.2.1.9"], "flow logs: no_flows_seen"),
])
def test_the_top_finding_its_rule_and_window_are_the_runs_meaning(
        tmp_path: Path, scenario: str, hours: list[str], question: list[str],
        expected: str) -> None:
    files = [f for hour in hours for f in _download(scenario, hour, tmp_path)]
    code, out = _analyse(files, *question, out=tmp_path / "out")
    assert code == 0, out
    command = " ".join(["ghost-forensics", "flowlogs", *files, *question, "--out", "x"])
    assert meaning(command, 0, out) == expected


def test_no_meaning_for_a_capture_a_failed_run_or_output_without_a_key_line() -> None:
    line = ("             id flow_denied; rule R (aclID 1); window 2026-01-01T00:00Z to "
            "2026-01-01T00:05Z\n")
    assert meaning("ghost-forensics flowlogs d --out o", 0, line) == \
        "flow logs: flow_denied by R, 2026-01-01T00:00Z to 2026-01-01T00:05Z"
    two = line + "             id flow_one_way; flows a → b:1/TCP\n"
    assert meaning("ghost-forensics flowlogs d --out o", 0, two) == \
        "flow logs: flow_denied by R, 2026-01-01T00:00Z to 2026-01-01T00:05Z (+1 more)"
    assert meaning("ghost-forensics flowlogs d --out o", 2, line) is None
    assert meaning("ghost-forensics c.pcap --out o", 0, line) is None
    assert meaning("ghost-forensics flowlogs d --out o", 0, "1 finding\n") is None
