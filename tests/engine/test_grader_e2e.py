"""Issue 6's private-script run, rehearsed with an independent, memoryless fake Gemini
(``grader_gemini``): SAFE, RISKY approved / denied with a reason / modified (to SAFE and to
FORBIDDEN), FORBIDDEN, a capture without Azure, an unknown tool, Ctrl-C at a prompt and during a
command, ``--resume`` against a *new* fake instance each time, a text answer and Continue,
``complete_investigation`` together with another call, then the RCA, ``ghost audit verify``,
``ghost audit export`` and ``ghost session show --json``. Answers are typed one line at a time
after each prompt appears, as pexpect would."""

from __future__ import annotations

import hashlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.engine.grader_gemini import GraderGemini, fcall, last_responses, model_turns, text

GHOST = [sys.executable, "-m", "bot.cli"]
REASON = "use the jump host instead"
AZ_EXEC = "az vm run-command invoke -g rg -n vm --command-id RunShellScript --scripts id"


def _r(responses: list[dict[str, Any]], i: int = -1) -> dict[str, Any]:
    return dict(responses[i].get("response") or {}) if responses else {}


def policy(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The script, chosen by how many model turns the request carries (no memory)."""
    n, got = model_turns(body), last_responses(body)
    steps: dict[int, list[dict[str, Any]]] = {
        0: [text("Hypothesis H1: NSG rule blocks TCP 6379. Hypothesis H2: a UDR sends it to a "
                 "dead NVA. Starting locally."),
            fcall("run_shell_cmd", command="ping -c 1 127.0.0.1", reasoning="loopback")],
        1: [fcall("run_shell_cmd", command="ss -tn", reasoning="sockets"),
            fcall("run_shell_cmd", command="uname -a", reasoning="kernel")],
        2: [fcall("run_shell_cmd", command="hostname", reasoning="which host")],
        3: [fcall("run_shell_cmd", command="curl -X POST http://127.0.0.1:9/", reasoning="p")],
        4: [fcall("run_shell_cmd", command="ip route add 10.0.0.0/8 via 127.0.0.1",
                  reasoning="route")],
        5: [fcall("run_shell_cmd", command="rm -rf /", reasoning="x"),
            fcall("run_shell_cmd", command=AZ_EXEC, reasoning="y")],
        6: [fcall("capture_traffic", target="vm-a", resource_group="rg",
                  storage_account="ghostcap01", duration_seconds=30)],
        7: [fcall("check_task", task_id=str(_r(got).get("task_id") or "none")),
            fcall("list_tasks")],
        8: [fcall("run_shell_cmd", command="sleep 30", reasoning="wait")],
        9: [text("I believe the NSG rule is the cause. H1 CONFIRMED.")],
        10: [text("Wrapping up."), fcall("run_shell_cmd", command="ss -s", reasoning="summary"),
             fcall("complete_investigation", confidence="high",
                   root_cause_summary="NSG deny rule on 6379.", confirmed_hypotheses=["H1"],
                   recommended_actions=["Fix the NSG rule."])],
    }
    return steps[n]


class Typist:
    """Runs ghost with a pipe on stdin and answers each prompt when it appears."""

    def __init__(self, env: dict[str, str], cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen([*GHOST, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env, cwd=cwd)
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.buf = self.transcript = ""

    def expect(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.buf)
            if found:
                self.buf = self.buf[found.end():]
                return found
            assert time.monotonic() < deadline, f"no {pattern!r} in:\n{self.transcript}"
            if self.sel.select(timeout=0.2):
                assert self.proc.stdout is not None
                chunk = os.read(self.proc.stdout.fileno(), 65536).decode()
                assert chunk, f"ghost exited before {pattern!r}:\n{self.transcript}"
                self.buf += chunk
                self.transcript += chunk

    def answer(self, pattern: str, line: str) -> None:
        self.expect(pattern)
        time.sleep(0.2)
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        self.expect(r"Resume with: ghost investigate --resume ghost_\S+")
        return self.proc.wait(timeout=30)

    def finish(self) -> int:
        assert self.proc.stdout is not None
        self.transcript += self.buf + self.proc.stdout.read().decode()
        return self.proc.wait(timeout=30)


def _env(cli_env: dict[str, str], url: str) -> dict[str, str]:
    env = {k: v for k, v in cli_env.items()
           if not k.startswith(("GOOGLE_", "GEMINI_"))}
    return env | {"GEMINI_API_KEY": "grader-key", "GOOGLE_GEMINI_BASE_URL": url}


def _ghost(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GHOST, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_private_script_run_with_an_independent_memoryless_fake(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    requests: list[dict[str, Any]] = []
    # run 1: everything up to an approval prompt, then Ctrl-C there
    with GraderGemini(policy) as fake:
        t = Typist(_env(cli_env, fake.url), tmp_path, "investigate", "Redis 6379 unreachable")
        sid = t.expect(r"Session: (ghost_\S+)").group(1)
        t.answer(r"Your choice: ", "a")                               # uname -a
        t.answer(r"Your choice: ", "d")                               # hostname
        t.answer(r"Denial reason \(optional, press Enter to skip\): ", REASON)
        t.answer(r"Your choice: ", "m")                               # curl -X POST
        t.answer(r"New command: ", "ss -s")                           # → SAFE
        t.answer(r"Your choice: ", "m")                               # ip route add
        t.answer(r"New command: ", "rm -rf /")                        # → FORBIDDEN
        t.expect(r"COMMAND:\s+sleep 30")
        t.expect(r"Your choice: ")
        assert t.interrupt() == 130
        requests += fake.requests
    first = t.transcript
    assert "[Shell] SAFE — modified and approved: ss -s" in first
    assert f'denied: hostname (reason: "{REASON}")' in first
    assert "FORBIDDEN — blocked: rm -rf /" in first
    assert "GHOST_AZURE_SUBSCRIPTION_ID" in first
    assert "does not exist (list_tasks)" in first

    # run 2: a new fake; the same request is asked again; Ctrl-C while the command runs
    with GraderGemini(policy) as fake:
        t = Typist(_env(cli_env, fake.url), tmp_path, "investigate", "--resume", sid)
        t.expect(r"COMMAND:\s+sleep 30")
        t.answer(r"Your choice: ", "y")
        time.sleep(1.5)
        assert t.interrupt() == 130
        assert fake.requests == []            # nothing new was asked of the model
    # run 3: a new fake; the command is reported interrupted; text → Continue → completion
    with GraderGemini(policy) as fake:
        t = Typist(_env(cli_env, fake.url), tmp_path, "investigate", "--resume", sid)
        t.expect(r"\[Shell\] ERROR \(interrupted\): sleep 30")
        t.answer(r"Continue investigation\? \[C\]ontinue / \[D\]one > ", "c")
        t.answer(r"Your next instruction > ", "please wrap up")
        path = t.expect(r"RCA REPORT WRITTEN: (\S+)").group(1)
        assert t.finish() == 0
        assert re.search(r"Confidence: high  \|  Turns: 11  \|  Duration: \d+m \d\ds",
                         t.transcript)
        requests += fake.requests
        assert not fake.problems

    # what the model was sent
    assert all(re.fullmatch(r"/v1beta/models/[^/:]+:generateContent", r["path"])
               for r in requests)
    by_turn = {model_turns(r["body"]): last_responses(r["body"]) for r in requests}
    assert _r(by_turn[1])["classification"] == "SAFE" and _r(by_turn[1])["audit_id"]
    assert _r(by_turn[2])["action"] == "user_approved"
    assert _r(by_turn[3])["_meta"]["denial_reason"] == REASON
    assert _r(by_turn[4])["action"] == "user_modified" and _r(by_turn[4])["command"] == "ss -s"
    assert _r(by_turn[5])["status"] == "denied"           # the forbidden edit ran nothing
    assert [_r(by_turn[6], i)["error"] for i in (0, 1)] == ["forbidden_command"] * 2
    assert _r(by_turn[7])["status"] == "task_failed"
    assert _r(by_turn[8], 1)["error"] == "unknown_tool"
    assert _r(by_turn[9])["error"] == "interrupted"
    assert "is_resume = True" in json.dumps(requests[-1]["body"]["systemInstruction"])

    # the RCA, the audit chain, the export, the session document
    rca = Path(path).read_text()
    assert Path(path).name == f"ghost_rca_{sid}.md"
    for heading in ("Investigation Summary", "Hypotheses Log", "Command Evidence",
                    "Capture Evidence", "Recommended Actions", "Integrity Statement"):
        assert f"## {heading}" in rca
    assert REASON in rca and f"`{sid}_" in rca and "`rm -rf /`" in rca
    assert "| h2 | a UDR sends it to a dead NVA |" in rca
    env = _env(cli_env, "http://127.0.0.1:9")
    assert _ghost(env, tmp_path, "audit", "verify", sid).returncode == 0
    assert _ghost(env, tmp_path, "audit", "export", sid, "--dir", "x").returncode == 0
    shell_rows = [json.loads(x) for x in
                  (tmp_path / "x" / f"shell_audit_{sid}.jsonl").read_text().splitlines()]
    assert {"audit_id", "command", "classification", "action", "status", "exit_code",
            "environment", "timestamp"} <= set(shell_rows[0])
    task_rows = [json.loads(x) for x in
                 (tmp_path / "x" / f"orchestrator_tasks_{sid}.jsonl").read_text().splitlines()]
    assert task_rows and {"task_id", "state", "intent"} <= set(task_rows[-1])
    shown = _ghost(env, tmp_path, "session", "show", sid, "--json")
    doc = json.loads(shown.stdout)
    checksum = doc.pop("_checksum")
    assert checksum == hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    assert doc["rca_report_path"] == path and doc["is_resume"] is True


def test_resume_at_continue_done_shows_the_answer_it_asks_about(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    def chatty(body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [text("Interim view: the NSG blocks 6379.")]

    with GraderGemini(chatty) as fake:
        t = Typist(_env(cli_env, fake.url), tmp_path, "investigate", "Redis unreachable")
        sid = t.expect(r"Session: (ghost_\S+)").group(1)
        t.expect(r"\[D\]one > ")
        assert t.interrupt() == 130
    with GraderGemini(chatty) as fake:
        t = Typist(_env(cli_env, fake.url), tmp_path, "investigate", "--resume", sid)
        t.expect(r"\[Ghost Agent\] Interim view: the NSG blocks 6379\.\s+Continue")
        t.answer(r"\[D\]one > ", "d")
        t.expect(r"RCA REPORT WRITTEN: \S+")
        assert t.finish() == 0 and "Confidence: low" in t.transcript
        assert fake.requests == []
