"""`ghost investigate` end to end, as an engineer (or a script) runs it: the real CLI process,
the real google-genai client against the local fake Gemini, the real store, shell and gate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fakes.gemini_server import call, function_call_turn, text_turn

GHOST = [sys.executable, "-m", "bot.cli"]


def env_for(cli_env: dict[str, str]) -> dict[str, str]:
    env = dict(cli_env)
    env["GEMINI_API_KEY"] = os.environ["GEMINI_API_KEY"]
    env["GOOGLE_GEMINI_BASE_URL"] = os.environ["GOOGLE_GEMINI_BASE_URL"]
    env["GHOST_MODEL"] = "gemini-test"
    return env


def ghost(env: dict[str, str], *args: str, stdin: str = "",
          cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GHOST, *args], input=stdin, env=env, capture_output=True,
                          text=True, timeout=120, cwd=cwd, check=False)


def shell(command: str, reasoning: str = "diagnose", **extra: Any) -> Any:
    return call("run_shell_cmd", {"command": command, "reasoning": reasoning, **extra})


def session_id_of(output: str) -> str:
    for line in output.splitlines():
        if "Session: " in line:
            return line.split("Session: ")[1].strip()
    raise AssertionError(f"no session id in:\n{output}")


def test_a_whole_investigation_driven_through_a_pipe(fake_gemini: Any, cli_env: dict[str, str],
                                                     tmp_path: Path) -> None:
    h1 = [{"id": "h1", "description": "NSG blocks 6379", "state": "ACTIVE"}]
    fake_gemini.enqueue(
        function_call_turn(shell("ss -tln", hypotheses=h1), thought_signature=b"\x01sig",
                           text="Hypothesis H1: NSG blocks 6379."),
        function_call_turn(shell("echo approved-run")),                 # RISKY, approved
        function_call_turn(shell("echo denied-run")),                   # RISKY, denied
        function_call_turn(shell("echo original")),                     # RISKY, modified
        function_call_turn(shell("curl http://169.254.169.254/metadata")),  # FORBIDDEN
        function_call_turn(call("complete_investigation", {
            "confidence": "high", "root_cause_summary": "NSG rule deny-6379 blocks Redis.",
            "confirmed_hypotheses": ["h1"], "recommended_actions": ["Remove deny-6379"]})),
    )
    env = env_for(cli_env)
    answers = "a\n" "d\nwrong resource group\n" "m\necho edited\n"
    run = ghost(env, "investigate", "web-01 cannot reach redis on 6379", stdin=answers,
                cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    sid = session_id_of(out)
    assert "[Shell] SAFE — auto-approved: ss -tln" in out
    assert "SAFETY SHELL ALERT" in out
    assert "denied: echo denied-run (reason: \"wrong resource group\")" in out
    assert "FORBIDDEN — blocked" in out
    assert "RCA REPORT WRITTEN" in out and "Confidence: high" in out

    # what Gemini was sent: the denial reason and count in _meta, the signature returned
    requests = fake_gemini.requests
    denied = requests[3].function_responses()[0]["response"]
    assert denied["status"] == "denied" and denied["_meta"]["denial_reason"] == \
        "wrong resource group"
    assert denied["_meta"]["denial_count"] == 1
    modified = requests[4].function_responses()[0]["response"]
    assert modified["action"] == "user_modified" and "edited" in modified["output"]
    forbidden = requests[5].function_responses()[0]["response"]
    assert forbidden["error"] == "forbidden_command"

    rca_path = Path(cli_env["GHOST_DATA_DIR"]) / "audit" / f"ghost_rca_{sid}.md"
    rca = rca_path.read_text()
    assert "NSG rule deny-6379 blocks Redis." in rca and f"{sid}_" in rca

    verify = ghost(env, "audit", "verify", sid, cwd=tmp_path)
    assert verify.returncode == 0, verify.stderr
    export = ghost(env, "audit", "export", sid, "--dir", str(tmp_path / "x"), cwd=tmp_path)
    assert export.returncode == 0
    records = [json.loads(line) for line in
               (tmp_path / "x" / f"shell_audit_{sid}.jsonl").read_text().splitlines()]
    # captures are not configured: the orphan scan calls (and audits) nothing on Azure
    commands = [r for r in records if r["kind"] == "command"]
    assert not any(r["command"].startswith("az ") for r in commands)
    actions = [r["action"] for r in commands]
    assert actions == ["auto_approved", "user_approved", "user_denied", "user_modified",
                       "blocked"]


def _read_until(proc: subprocess.Popen[str], marker: str, timeout: float = 60) -> str:
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    seen = ""
    deadline = time.monotonic() + timeout
    while marker not in seen and time.monotonic() < deadline:
        if sel.select(timeout=0.5):
            chunk = os.read(proc.stdout.fileno(), 65536).decode()
            if not chunk:
                break
            seen += chunk
    assert marker in seen, seen
    return seen


def test_ctrl_c_saves_and_resume_continues(fake_gemini: Any, cli_env: dict[str, str],
                                           tmp_path: Path) -> None:
    fake_gemini.enqueue(
        function_call_turn(shell("ss -tln"), thought_signature=b"\x02sig"),
        text_turn("Which resource group holds the Redis cache?"),
    )
    env = env_for(cli_env) | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*GHOST, "investigate", "redis timeouts from web-01"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    seen = _read_until(proc, "Continue investigation?")
    sid = session_id_of(seen)
    proc.send_signal(signal.SIGINT)  # the engineer presses Ctrl-C at the prompt
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"Resume with: ghost investigate --resume {sid}" in rest

    fake_gemini.enqueue(function_call_turn(call("complete_investigation", {
        "confidence": "medium", "root_cause_summary": "Probably the NSG."})))
    resumed = ghost(env, "investigate", "--resume", sid, stdin="c\nIt is cache-rg.\n",
                    cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "RCA REPORT WRITTEN" in resumed.stdout
    last = fake_gemini.requests[-1]
    # the history was rebuilt from the database: symptom, model turn with its signature, the
    # command's result from the audit row, the text answer, the engineer's instruction
    roles = [c["role"] for c in last.contents]
    assert roles == ["user", "model", "user", "model", "user"]
    assert last.contents[-1]["parts"][0]["text"] == "It is cache-rg."
    assert last.contents[2]["parts"][0]["functionResponse"]["response"]["status"] == \
        "completed"
    assert "re-validat" in last.system_text.lower() or "resum" in last.system_text.lower()


def test_missing_api_key_exits_before_anything_starts(cli_env: dict[str, str],
                                                      tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env.items()
           if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    run = ghost(env, "investigate", "anything", cwd=tmp_path)
    assert run.returncode == 1 and "GEMINI_API_KEY" in run.stderr
    assert "Traceback" not in run.stderr


def test_checksum_mismatch_offers_continue_fresh_abort(fake_gemini: Any, cli_env: dict[str, str],
                                                       store: Any, tmp_path: Path) -> None:
    sid = store.create_investigation(symptom="dns", model="m", audit_dir="a").session_id
    from sqlalchemy import text

    with store.db.engine.begin() as conn:  # edited behind Ghost's back
        conn.execute(text("UPDATE investigations SET checksum = :c WHERE session_id = :s"),
                     {"c": "0" * 64, "s": sid})
    env = env_for(cli_env)
    aborted = ghost(env, "investigate", "--resume", sid, stdin="a\n", cwd=tmp_path)
    assert aborted.returncode == 1 and "checksum mismatch" in aborted.stdout
    fake_gemini.enqueue(function_call_turn(call("complete_investigation", {
        "confidence": "low", "root_cause_summary": "Not enough evidence."})))
    store.append_turn(sid, "user", {"role": "user", "parts": [{"text": "dns"}]})
    cont = ghost(env, "investigate", "--resume", sid, stdin="c\n", cwd=tmp_path)
    assert cont.returncode == 0, cont.stdout + cont.stderr
    rca = store.get_investigation(sid).rca_markdown
    assert "checksum" in rca.lower()


def test_corrupted_state_offers_fresh_or_abort(fake_gemini: Any, cli_env: dict[str, str],
                                               store: Any, tmp_path: Path) -> None:
    """E4/S7: a state that is not a session document: [F]resh starts a new investigation."""
    sid = store.create_investigation(symptom="dns", model="m", audit_dir="a").session_id
    from sqlalchemy import text

    with store.db.engine.begin() as conn:
        conn.execute(text("UPDATE investigations SET state = :s WHERE session_id = :i"),
                     {"s": '{"garbage": true}', "i": sid})
    env = env_for(cli_env)
    aborted = ghost(env, "investigate", "--resume", sid, stdin="a\n", cwd=tmp_path)
    assert aborted.returncode == 1 and "corrupted" in aborted.stdout + aborted.stderr
    fake_gemini.enqueue(function_call_turn(call("complete_investigation", {
        "confidence": "low", "root_cause_summary": "Started over."})))
    fresh = ghost(env, "investigate", "--resume", sid, stdin="f\nDNS lookups fail\n",
                  cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    new_sid = session_id_of(fresh.stdout)
    assert new_sid != sid and "RCA REPORT WRITTEN" in fresh.stdout


def test_tasks_of_live_investigations_are_not_orphans(store: Any, tmp_path: Path) -> None:
    from bot.bootstrap import session_is_live

    live = store.create_investigation(symptom="a", model="m", audit_dir="a", platform="slack",
                                      status="awaiting_approval").session_id
    done = store.create_investigation(symptom="b", model="m", audit_dir="a").session_id
    store.set_status(done, "completed")
    assert session_is_live(store, live).live is True
    assert session_is_live(store, done).live is False
    # a terminal run is live while its process holds the lease, not because of its status
    term = store.create_investigation(symptom="c", model="m", audit_dir="a",
                                      status="running").session_id
    assert session_is_live(store, term).live is False  # killed -9: nobody renews it
    assert store.take_lease(term, "terminal:host:1", lease_seconds=60)
    assert session_is_live(store, term).live is True  # another host's: may still run
    assert not store.take_lease(term, "terminal:host:2", lease_seconds=60)  # one holder
    store.release_lease(term, "terminal:host:1")
    assert session_is_live(store, term).live is False
    assert session_is_live(store, "ghost_19990101_000000").live is False


def test_a_terminal_run_keeps_its_lease_alive_while_it_lives(store: Any) -> None:
    """The lease outlives its own length while the process renews it, and is handed back at
    the end; a second run of the same session is refused meanwhile."""
    from bot.bootstrap import session_is_live
    from bot.terminal import TerminalLease

    sid = store.create_investigation(symptom="c", model="m", audit_dir="a",
                                     status="running").session_id
    lease = TerminalLease(store, sid, seconds=3, owner="terminal:test:1")
    assert lease.acquire()
    try:
        assert not TerminalLease(store, sid, seconds=3, owner="terminal:test:2").acquire()
        time.sleep(4.5)  # longer than the lease: only the renewals keep it
        assert session_is_live(store, sid).live is True
    finally:
        lease.release()
    assert session_is_live(store, sid).live is False
    assert store.get_investigation(sid).lease_owner is None


def test_a_lease_left_by_a_killed_run_on_this_host_is_taken_over_at_once(store: Any) -> None:
    """Resuming right after a kill -9 does not wait for the dead run's lease to lapse; a
    holder that is alive (or on another host) still keeps it."""
    import socket

    from bot.terminal import TerminalLease

    sid = store.create_investigation(symptom="c", model="m", audit_dir="a",
                                     status="running").session_id
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = socket.gethostname()
    assert store.take_lease(sid, f"terminal:{host}:{dead.pid}", lease_seconds=600)
    lease = TerminalLease(store, sid, seconds=60, owner="terminal:test:new")
    assert lease.acquire()
    lease.release()
    assert store.take_lease(sid, f"terminal:{host}:{os.getpid()}", lease_seconds=600)
    assert not TerminalLease(store, sid, seconds=60, owner="terminal:test:2").acquire()
    store.release_lease(sid, f"terminal:{host}:{os.getpid()}")
    assert store.take_lease(sid, "terminal:other-host:1", lease_seconds=600)
    assert not TerminalLease(store, sid, seconds=60, owner="terminal:test:3").acquire()
