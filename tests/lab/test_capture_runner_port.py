"""The shell's runner port with the lab's executor: the gate is unchanged before and after;
only running the argv is the lab's, and the capture analysis still runs for real."""

from __future__ import annotations

import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.safety.approval import ApprovalRequest, Decision
from core.safety.shell import SafeExecShell
from lab.executor import LabExecutor, runs_for_real
from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment
from lab.pcap import PcapWriter
from storage.store import Store

SECRET = "AccountKey=" + "Zm9vYmFy" * 11 + "=="


@dataclass(frozen=True)
class Answer:
    exit_code: int
    stdout: str
    stderr: str
    duration_s: float = 0.05


class Runner:
    """Stands in for the lab runner: records each argv and answers from a queue."""

    def __init__(self, *answers: Answer | Exception) -> None:
        self.answers: deque[Answer | Exception] = deque(answers)
        self.calls: list[list[str]] = []

    def run(self, argv: list[str]) -> Answer:
        self.calls.append(list(argv))
        answer = self.answers.popleft()
        if isinstance(answer, Exception):
            raise answer
        return answer


class Approver:
    decides_immediately = True

    def __init__(self, decision: Decision) -> None:
        self.decision = decision

    def request(self, request: ApprovalRequest) -> Decision:
        return self.decision


def shell(store: Store, tmp_path: Path, runner: Runner,
          decision: Decision | None = None) -> tuple[SafeExecShell, str]:
    sid = store.create_investigation(symptom="s", model="replay:x", audit_dir="a",
                                     lab="wiring-test").session_id
    return SafeExecShell(sid, audit=store, approvals=store,
                         approver=Approver(decision or Decision.deny("U_OTHER", "no")),
                         data_dir=tmp_path, runner=LabExecutor(runner)), sid


def test_a_safe_command_is_answered_by_the_lab_and_audited_like_production(
        store: Store, tmp_path: Path) -> None:
    runner = Runner(Answer(0, f"redis.internal. 300 IN A 10.1.2.4\n{SECRET}\n", "", 1.5))
    sh, sid = shell(store, tmp_path, runner)
    res = sh.execute({"command": "dig redis.internal", "reasoning": "resolve"})
    assert runner.calls == [["dig", "redis.internal"]], "as written (no rc-file flag)"
    assert res["status"] == "completed" and res["exit_code"] == 0
    assert "10.1.2.4" in res["output"] and SECRET not in res["output"], "redacted after"
    record = [r for r in store.audit_records(sid) if r["kind"] == "command"][-1]
    assert record["classification"] == "SAFE" and record["duration_ms"] == 1500
    assert SECRET not in str(record)


def test_forbidden_and_denied_commands_never_reach_the_lab(store: Store,
                                                          tmp_path: Path) -> None:
    runner = Runner()
    sh, sid = shell(store, tmp_path, runner)
    forbidden = sh.execute({"command": "curl http://169.254.169.254/metadata/instance",
                            "reasoning": "x"})
    denied = sh.execute({"command": "az network nsg rule delete -g rg --nsg-name n -n r",
                         "reasoning": "fix it"})
    assert forbidden["error"] == "forbidden_command" and denied["status"] == "denied"
    assert runner.calls == []
    approvals = [r for r in store.audit_records(sid) if r["kind"] == "approval"]
    assert [r["status"] for r in approvals] == ["requested", "denied"]


def test_an_approved_risky_command_is_answered_by_the_lab(store: Store,
                                                         tmp_path: Path) -> None:
    runner = Runner(Answer(0, "{}", ""))
    sh, _ = shell(store, tmp_path, runner, Decision.approve("U_OTHER"))
    res = sh.execute({"command": "az network nsg rule delete -g rg --nsg-name n -n r",
                      "reasoning": "fix it"})
    assert res["status"] == "completed" and res["action"] == "user_approved"
    assert runner.calls and runner.calls[0][:4] == ["az", "network", "nsg", "rule"]


def test_a_lab_failure_is_an_answer_not_a_crash(store: Store, tmp_path: Path) -> None:
    sh, _ = shell(store, tmp_path, Runner(RuntimeError("boom")))
    res = sh.execute({"command": "ping -c 1 10.0.0.1", "reasoning": "x"})
    assert res["exit_code"] == 2 and "lab could not answer" in res["stderr"]


def _pcap(path: Path) -> Path:
    w = PcapWriter()
    a, b = ip4("10.0.0.1"), ip4("10.0.0.2")
    syn = ethernet(ipv4_packet(a, b, 6, tcp_segment(40000, 80, 1, 0, 2, 64240)))
    for i in range(3):
        w.add(1_000_000_000 * (i + 1), syn)
    w.write(path)
    return path


def test_the_capture_analysis_runs_for_real_on_the_labs_pcap(store: Store,
                                                            tmp_path: Path) -> None:
    runner = Runner()
    sh, _ = shell(store, tmp_path, runner)
    pcap = _pcap(tmp_path / "cap.pcap")
    res = sh.execute({"command": f"ghost-forensics {pcap} --semantic-dir {tmp_path} "
                                 f"--report-dir {tmp_path}", "reasoning": "analyse"})
    assert res["exit_code"] == 0, res
    assert runner.calls == [] and (tmp_path / "cap_forensic_report.md").is_file()
    report = sh.execute({"command": f"cat {tmp_path / 'cap_executive_summary.md'}",
                         "reasoning": "read it"})
    assert "cap" in report["output"] and runner.calls == []


@pytest.mark.parametrize(("argv", "real"), [
    (["ghost-forensics", "x.pcap"], True),
    ([sys.executable, "-m", "forensics", "x.pcap"], True),
    (["python3", "-m", "forensics", "x.pcap"], True),
    (["python3", "-c", "print(1)"], False),
    (["./ghost-forensics", "x.pcap"], False),
    (["az", "vm", "list"], False),
    (["cat", "/data/report.md"], True),
])
def test_what_runs_for_real_in_a_lab_investigation(argv: list[str], real: bool) -> None:
    assert runs_for_real(argv) is real


