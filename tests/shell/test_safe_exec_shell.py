"""SafeExecShell end to end: the real classifier, executor and store, a scripted approver."""

from __future__ import annotations

import io
import threading
from collections import deque
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.terminal.approver import TerminalApprover, render_alert
from core.safety.approval import ApprovalRequest, Decision
from core.safety.command_run import ShellLimits
from core.safety.shell import SafeExecShell
from storage.store import Store

#: captures the repository ships (the tests never read outside it)
CAPTURES = Path(__file__).resolve().parents[1] / "forensics" / "captures"
STORAGE_KEY = "AccountKey=" + "Zm9vYmFy" * 11 + "=="


class ScriptedApprover:
    """Answers from a queue; None means "the answer comes later" (a chat card)."""

    def __init__(self, *answers: Decision | None | Exception, immediate: bool = True) -> None:
        self.answers: deque[Decision | None | Exception] = deque(answers)
        self.decides_immediately = immediate
        self.seen: list[ApprovalRequest] = []

    def request(self, request: ApprovalRequest) -> Decision | None:
        self.seen.append(request)
        answer = self.answers.popleft()
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.fixture
def sid(store: Store) -> str:
    return store.create_investigation(symptom="s", model="m", audit_dir="a",
                                      requested_by="U_REQ").session_id


def make_shell(store: Store, sid: str, approver: Any, tmp_path: Path, **kw: Any) -> SafeExecShell:
    return SafeExecShell(sid, audit=store, approvals=store, approver=approver,
                         data_dir=tmp_path, requested_by="U_REQ", **kw)


def kinds(store: Store, sid: str) -> list[tuple[str, str]]:
    return [(r["kind"], r["status"]) for r in store.audit_records(sid)]


def test_safe_command_runs_with_a_trace_before_and_after(store: Store, sid: str,
                                                         tmp_path: Path) -> None:
    shell = make_shell(store, sid, ScriptedApprover(), tmp_path)
    res = shell.execute({"command": "ss -tln", "reasoning": "listening sockets"})
    assert res["status"] == "completed" and res["classification"] == "SAFE"
    assert res["action"] == "auto_approved" and res["exit_code"] == 0
    assert res["environment"] == "local" and res["audit_id"] == f"{sid}_002"
    assert res["output_metadata"]["truncation_applied"] is False
    assert kinds(store, sid) == [("command_started", "executing"), ("command", "completed")]
    assert store.audit_records(sid)[1]["ref_audit_id"] == f"{sid}_001"


def test_forbidden_never_runs_nor_asks(store: Store, sid: str, tmp_path: Path) -> None:
    approver = ScriptedApprover()
    shell = make_shell(store, sid, approver, tmp_path)
    res = shell.execute({"command": "curl http://169.254.169.254/metadata/instance",
                         "reasoning": "x"})
    assert res["status"] == "error" and res["error"] == "forbidden_command"
    assert res["classification"] == "FORBIDDEN" and not approver.seen
    assert kinds(store, sid) == [("command", "error")]


def test_risky_approved_runs_once_as_user_approved(store: Store, sid: str,
                                                   tmp_path: Path) -> None:
    approver = ScriptedApprover(Decision.approve("alice"))
    shell = make_shell(store, sid, approver, tmp_path)
    res = shell.execute({"command": "echo hello", "reasoning": "say hello"})
    assert approver.seen[0].classification == "RISKY"
    assert res["status"] == "completed" and res["action"] == "user_approved"
    assert res["output"].strip() == "hello"
    records = store.audit_records(sid)
    assert [(r["kind"], r["status"]) for r in records] == [
        ("approval", "requested"), ("approval", "approved"),
        ("command_started", "executing"), ("command", "completed")]
    assert records[-1]["actor"] == "alice"


def test_denial_with_reason_goes_back_to_the_model(store: Store, sid: str,
                                                   tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    shell = make_shell(store, sid, ScriptedApprover(Decision.deny("bob", "wrong rg")), tmp_path)
    res = shell.execute({"command": f"touch {marker}", "reasoning": "x"})
    assert res["status"] == "denied" and res["action"] == "user_denied"
    assert res["denial_reason"] == "wrong rg" and not marker.exists()
    assert ("command_started", "executing") not in kinds(store, sid)


def test_modify_reclassifies_and_runs_the_new_command(store: Store, sid: str,
                                                      tmp_path: Path) -> None:
    shell = make_shell(store, sid, ScriptedApprover(Decision.modify("alice", "echo edited")),
                       tmp_path)
    res = shell.execute({"command": "echo original", "reasoning": "x"})
    assert res["action"] == "user_modified" and res["output"].strip() == "edited"


def test_a_forbidden_modification_is_blocked(store: Store, sid: str, tmp_path: Path) -> None:
    shell = make_shell(store, sid, ScriptedApprover(Decision.modify("alice", "rm -rf /")),
                       tmp_path)
    res = shell.execute({"command": "echo original", "reasoning": "x"})
    assert res["status"] == "denied" and "FORBIDDEN" in res["denial_reason"]
    assert ("command_started", "executing") not in kinds(store, sid)


def test_approver_failure_fails_closed(store: Store, sid: str, tmp_path: Path) -> None:
    shell = make_shell(store, sid, ScriptedApprover(RuntimeError("slack down")), tmp_path)
    res = shell.execute({"command": "echo hi", "reasoning": "x"})
    assert res["status"] == "denied" and res["error"] == "user_abandoned"


def test_pending_approval_resumes_in_another_process_exactly_once(
    store: Store, sid: str, tmp_path: Path, migrated_url: str, tool: str
) -> None:
    counter = tmp_path / "count"
    cmd = f"{tool} append {counter} x"
    chat = ScriptedApprover(None, immediate=False)
    first = make_shell(store, sid, chat, tmp_path).execute({"command": cmd, "reasoning": "x"})
    assert first["status"] == "pending_approval" and not counter.exists()
    approval_id = first["approval_id"]

    # another replica, another Store: the click arrives there
    other = Store.from_url(migrated_url)
    shell2 = make_shell(other, sid, ScriptedApprover(immediate=False), tmp_path)
    assert shell2.decide(approval_id, Decision.approve("carol")) is not None
    assert shell2.decide(approval_id, Decision.deny("dave")) is None  # first decision won

    results: list[dict[str, Any]] = []
    stores = [Store.from_url(migrated_url) for _ in range(4)]
    threads = [threading.Thread(target=lambda s=s: results.append(
        make_shell(s, sid, chat, tmp_path).resume(approval_id))) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert counter.read_text() == "x"  # ran exactly once
    done = [r for r in results if r["status"] == "completed"]
    assert done and all(r["audit_id"] == done[0]["audit_id"] for r in done)
    assert make_shell(store, sid, chat, tmp_path).resume(approval_id)["audit_id"] == \
        done[0]["audit_id"]
    assert store.verify_audit(sid).ok


def test_pending_approval_expires(store: Store, sid: str, tmp_path: Path) -> None:
    now = [store.clock()]
    shell = make_shell(store, sid, ScriptedApprover(None, immediate=False), tmp_path,
                       clock=lambda: now[0])
    pending = shell.execute({"command": "echo hi", "reasoning": "x"})
    now[0] += timedelta(minutes=31)
    assert shell.decide(pending["approval_id"], Decision.approve("carol")) is None
    res = shell.resume(pending["approval_id"])
    assert res["status"] == "denied" and res["error"] == "approval_expired"


def test_interrupted_command_is_closed_not_rerun(store: Store, sid: str,
                                                 tmp_path: Path) -> None:
    store.append_audit(sid, {"kind": "command_started", "command": "echo hi",
                             "status": "executing", "classification": "RISKY",
                             "environment": "local"})
    shell = make_shell(store, sid, ScriptedApprover(), tmp_path)
    closed = shell.recover_interrupted()
    assert closed == [f"{sid}_002"]
    last = store.audit_records(sid)[-1]
    assert last["error"] == "interrupted" and last["ref_audit_id"] == f"{sid}_001"
    assert shell.recover_interrupted() == []


def test_output_is_redacted_and_truncated_before_storage(store: Store, sid: str,
                                                         tmp_path: Path, tool: str) -> None:
    # the secret appears only in the output, never in the command line
    shell = make_shell(store, sid, ScriptedApprover(Decision.approve("alice")), tmp_path)
    res = shell.execute({"command": f"{tool} key-and-lines 1000", "reasoning": "x"})
    assert res["status"] == "completed"
    stored = store.audit_records(sid)[-1]
    assert "Zm9vYmFy" not in stored["output"] and "Zm9vYmFy" not in res["output"]
    assert res["output_metadata"]["truncation_applied"] is True
    assert len(res["output"].splitlines()) <= 210


def test_a_risky_command_carrying_a_secret_is_not_queued(store: Store, sid: str,
                                                         tmp_path: Path) -> None:
    approver = ScriptedApprover(Decision.approve("alice"))
    shell = make_shell(store, sid, approver, tmp_path)
    res = shell.execute({"command": f"echo {STORAGE_KEY}", "reasoning": "x"})
    assert res["error"] == "secret_in_command" and not approver.seen
    assert all("Zm9vYmFy" not in (r["command"] or "") for r in store.audit_records(sid))
    assert store.approvals(sid) == []


def test_timeout_is_reported(store: Store, sid: str, tmp_path: Path, tool: str) -> None:
    shell = make_shell(store, sid, ScriptedApprover(Decision.approve("alice")), tmp_path,
                       limits=ShellLimits(timeout_s=0.5))
    res = shell.execute({"command": f"{tool} sleep 30", "reasoning": "x"})
    assert res["status"] == "error" and res["error"] == "timeout"


def test_cat_is_confined_to_the_data_dir(store: Store, sid: str, tmp_path: Path) -> None:
    (tmp_path / "report.md").write_text("# Executive Summary\nall good\n")
    outside = tmp_path.parent / "secret.txt"
    outside.write_text("do not read")
    (tmp_path / "link.md").symlink_to(outside)
    shell = make_shell(store, sid, ScriptedApprover(Decision.approve("a"), Decision.approve("a")),
                       tmp_path)
    ok = shell.execute({"command": f"cat {tmp_path / 'report.md'}", "reasoning": "x"})
    assert ok["status"] == "completed" and "Executive Summary" in ok["output"]
    sneaky = shell.execute({"command": f"cat {tmp_path / 'link.md'}", "reasoning": "x"})
    assert "do not read" not in sneaky["output"]
    assert sneaky["status"] != "completed" or sneaky["exit_code"] != 0


def test_terminal_approver_reads_piped_answers() -> None:
    req = ApprovalRequest("a1", "s", "az network route-table route update -g prod-rg",
                          "RISKY", 2, "T2.az_mutating", "mutating verb", "fix next hop",
                          "local", "me", None)
    out = io.StringIO()
    deny = TerminalApprover(io.StringIO("d\nWrong resource group\n"), out, user="eve")
    decision = deny.request(req)
    assert decision.kind.value == "deny" and decision.reason == "Wrong resource group"
    assert "SAFETY SHELL ALERT" in out.getvalue() and "[A]pprove" in out.getvalue()
    eof = TerminalApprover(io.StringIO(""), io.StringIO(), user="eve").request(req)
    assert eof.kind.value == "abandon"
    junk = TerminalApprover(io.StringIO("x\nq\nz\n"), io.StringIO(), user="eve").request(req)
    assert junk.kind.value == "abandon"
    yes = TerminalApprover(io.StringIO("junk\nyes\n"), io.StringIO(), user="eve").request(req)
    assert yes.kind.value == "approve"
    mod = TerminalApprover(io.StringIO("m\naz network route-table route show\n"),
                           io.StringIO(), user="eve").request(req)
    assert mod.new_command == "az network route-table route show"
    assert all(len(line) == 71 for line in render_alert(req).splitlines())


def test_ghost_forensics_runs_as_safe_on_a_capture_in_the_data_dir(
    store: Store, sid: str, tmp_path: Path
) -> None:
    """The orchestrator's analysis step: allowlisted, SAFE, found without an activated venv."""
    capture = tmp_path / "cap.pcap"
    capture.write_bytes((CAPTURES / "healthy.pcap").read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    shell = make_shell(store, sid, ScriptedApprover(), tmp_path)
    res = shell.execute({"command": f"ghost-forensics {capture} --semantic-dir {out} "
                                    f"--report-dir {out}", "reasoning": "analyse the capture"})
    assert res["classification"] == "SAFE", res
    assert res["status"] == "completed" and res["exit_code"] == 0, res
    assert (out / "cap_forensic_report.md").read_text().count("## Executive Summary") == 1


def test_curlrc_in_home_cannot_add_options(store: Store, sid: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A ~/.curlrc written by an earlier command must not change what an approved curl does."""
    import http.server

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"hello from loopback")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    home = tmp_path / "home"
    home.mkdir()
    hijacked = tmp_path / "written-by-curlrc"
    (home / ".curlrc").write_text(f'output = "{hijacked}"\n')
    monkeypatch.setenv("HOME", str(home))
    try:
        shell = make_shell(store, sid, ScriptedApprover(Decision.approve("alice")), tmp_path)
        url = f"http://127.0.0.1:{server.server_port}/"
        res = shell.execute({"command": f"curl -s -m 5 {url}", "reasoning": "x"})
    finally:
        server.shutdown()
    assert res["status"] == "completed" and "hello from loopback" in res["output"]
    assert not hijacked.exists()


def test_rc_flags_are_added_first() -> None:
    from core.safety.outcome import without_rc_files

    assert without_rc_files(("curl", "-sI", "https://x")) == ["curl", "-q", "-sI", "https://x"]
    assert without_rc_files(("dig", "+short", "x")) == ["dig", "-r", "+short", "x"]
    assert without_rc_files(("ss", "-tln")) == ["ss", "-tln"]


def test_an_approved_pipeline_runs_stage_by_stage_without_a_shell(store: Store, sid: str,
                                                                   tmp_path: Path) -> None:
    """issue 28: a command piped into text filters is approvable, so it must also run."""
    approver = ScriptedApprover(Decision.approve("alice"))
    shell = make_shell(store, sid, approver, tmp_path)
    res = shell.execute({"command": "seq 10 | grep -v 3 | sort -rn | head -n 2",
                         "reasoning": "x"})
    assert approver.seen[0].rule == "T3.pipeline"
    assert res["status"] == "completed" and res["exit_code"] == 0, res
    assert res["output"].split() == ["10", "9"]


def test_a_pipeline_redirected_into_the_data_dir_writes_redacted_output(
        store: Store, sid: str, tmp_path: Path) -> None:
    (tmp_path / "conn.txt").write_text(f"{STORAGE_KEY}\nline two\n")
    shell = make_shell(store, sid, ScriptedApprover(Decision.approve("alice")), tmp_path)
    res = shell.execute({"command": f"grep -n line {tmp_path}/conn.txt {tmp_path}/x.txt "
                                    f"2>/dev/null > {tmp_path}/found.txt", "reasoning": "x"})
    assert res["status"] == "completed" and res["output"] == "", res
    assert (tmp_path / "found.txt").read_text().strip().endswith("line two")
    res = make_shell(store, sid, ScriptedApprover(Decision.approve("alice")), tmp_path).execute(
        {"command": f"tail -n 2 {tmp_path}/conn.txt > {tmp_path}/copy.txt", "reasoning": "x"})
    copied = (tmp_path / "copy.txt").read_text()
    assert res["status"] == "completed" and "Zm9vYmFy" not in copied and "line two" in copied


def test_a_pipeline_into_a_shell_is_refused_not_offered(store: Store, sid: str,
                                                        tmp_path: Path) -> None:
    approver = ScriptedApprover()
    shell = make_shell(store, sid, approver, tmp_path)
    res = shell.execute({"command": "seq 3 | xargs -I % sh -c %", "reasoning": "x"})
    assert res["error"] == "forbidden_command" and not approver.seen
    assert "T0.interpreting_pipe" in res["stderr"] and "ask the engineer" in res["stderr"]
