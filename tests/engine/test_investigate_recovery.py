"""`ghost investigate` when things go wrong, end to end: the real CLI process and google-genai
client against the local fake Gemini. Each test is a defect found by driving the CLI by hand:
Ctrl-C at an approval or symptom prompt, a bad key, a blank symptom, a model that calls tools
that do not exist or returns shapes the happy path never sees."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from tests.engine.test_investigate_cli import (
    GHOST,
    _read_until,
    env_for,
    ghost,
    session_id_of,
    shell,
)
from tests.fakes.gemini_server import call, function_call_turn, raw_response, text_turn

DONE = call("complete_investigation", {"confidence": "medium",
                                       "root_cause_summary": "Redis is not listening."})


def _interrupt_at(env: dict[str, str], cwd: Path, marker: str, *args: str) -> str:
    """Start `ghost investigate`, press Ctrl-C once ``marker`` is on screen; the output."""
    proc = subprocess.Popen([*GHOST, "investigate", *args], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    seen = _read_until(proc, marker)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    return seen + rest


def _exported(env: dict[str, str], sid: str, where: Path) -> list[dict[str, Any]]:
    run = ghost(env, "audit", "export", sid, "--dir", str(where))
    assert run.returncode == 0, run.stderr
    lines = (where / f"shell_audit_{sid}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_ctrl_c_at_an_approval_prompt_then_resume_asks_again_and_runs_once(
        fake_gemini: Any, cli_env: dict[str, str], tmp_path: Path) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo resumed-ok", "is the box alive?")))
    env = env_for(cli_env) | {"PYTHONUNBUFFERED": "1"}
    first = _interrupt_at(env, tmp_path, "Your choice:", "redis is down")
    sid = session_id_of(first)
    assert f"Resume with: ghost investigate --resume {sid}" in first

    # before the fix the resumed run printed "decide it in chat" and exited: nobody could
    # ever decide a terminal approval left open by Ctrl-C
    fake_gemini.enqueue(function_call_turn(DONE))
    resumed = ghost(env, "investigate", "--resume", sid, stdin="y\n", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    out = resumed.stdout
    assert "SAFETY SHELL ALERT" in out and "echo resumed-ok" in out
    assert "RISKY — approved: echo resumed-ok" in out
    assert "RCA REPORT WRITTEN" in out and "decide it in chat" not in out

    [response] = fake_gemini.last_request.function_responses()
    assert response["response"]["status"] == "completed"
    assert response["response"]["output"].strip() == "resumed-ok"
    commands = [r for r in _exported(env, sid, tmp_path / "x") if r["kind"] == "command"]
    assert [(r["command"], r["action"]) for r in commands] == \
        [("echo resumed-ok", "user_approved")]
    assert ghost(env, "audit", "verify", sid).returncode == 0


def test_ctrl_c_at_the_symptom_prompt_then_resume_asks_for_it(
        fake_gemini: Any, cli_env: dict[str, str], tmp_path: Path) -> None:
    env = env_for(cli_env) | {"PYTHONUNBUFFERED": "1"}
    first = _interrupt_at(env, tmp_path, "investigate?\n> ")
    sid = session_id_of(first)
    fake_gemini.enqueue(function_call_turn(DONE))
    resumed = ghost(env, "investigate", "--resume", sid, stdin="redis on 6379 refuses\n",
                    cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # before the fix Gemini was sent an empty conversation
    [request] = fake_gemini.requests
    assert request.contents[0]["parts"][0]["text"] == "redis on 6379 refuses"


def test_a_blank_symptom_is_refused_without_calling_gemini(
        fake_gemini: Any, cli_env: dict[str, str], tmp_path: Path) -> None:
    run = ghost(env_for(cli_env), "investigate", "   ", stdin="", cwd=tmp_path)
    assert run.returncode == 1
    assert "No symptom given" in run.stderr and "Traceback" not in run.stderr
    assert fake_gemini.requests == []
    listed = ghost(env_for(cli_env), "session", "list")
    # refused before anything is created: no empty "cancelled" row, nothing left "queued"
    assert "No investigations yet." in listed.stdout


def test_a_wrong_key_is_reported_once_with_the_fix_and_the_resume_command(
        fake_gemini: Any, cli_env: dict[str, str], tmp_path: Path) -> None:
    env = env_for(cli_env) | {"GEMINI_API_KEY": "not-the-key"}
    run = ghost(env, "investigate", "dns fails", cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    sid = session_id_of(run.stdout)
    assert "[ERROR] Gemini rejected the API key" in run.stdout
    assert "GEMINI_API_KEY" in run.stdout
    assert "did not answer (" not in run.stdout  # not wrapped in a second message
    assert f"Resume with: ghost investigate --resume {sid}" in run.stdout
    assert len(fake_gemini.requests) == 1, "a bad key is not retried"


def test_a_confused_model_is_answered_and_the_investigation_goes_on(
        fake_gemini: Any, cli_env: dict[str, str], tmp_path: Path) -> None:
    """Unknown tool, a call without its required argument, no candidates at all (retried), a
    finish reason newer than the SDK and no usageMetadata: the loop carries on."""
    newer = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Checking sockets."},
        {"functionCall": {"name": "run_shell_cmd",
                          "args": {"command": "ss -tln", "reasoning": "sockets"}}}]},
        "finishReason": "SOME_NEWER_REASON"}]}
    fake_gemini.enqueue(
        function_call_turn(call("frobnicate", {"x": 1})),
        function_call_turn(call("run_shell_cmd", {"reasoning": "forgot the command"})),
        raw_response({"candidates": []}),
        raw_response(newer),
        text_turn("Sockets look fine. Done?"),
    )
    run = ghost(env_for(cli_env), "investigate", "redis refuses", stdin="d\n", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RCA REPORT WRITTEN" in run.stdout
    assert "Traceback" not in run.stderr and "Warning" not in run.stderr
    assert "tool that does not exist (frobnicate)" in run.stdout
    reqs = fake_gemini.requests
    [unknown] = reqs[1].function_responses()
    assert unknown["response"]["error"] == "unknown_tool"
    assert "run_shell_cmd" in unknown["response"]["message"]
    [empty] = reqs[2].function_responses()
    assert empty["response"]["error"] == "empty_command"
    assert reqs[3].body == reqs[2].body, "no candidates: the same request is sent again"
    [ss] = reqs[4].function_responses()
    assert ss["response"]["status"] == "completed"


def test_an_edited_command_is_shown_and_sent_as_what_really_ran(
        fake_gemini: Any, cli_env: dict[str, str], tmp_path: Path) -> None:
    fake_gemini.enqueue(function_call_turn(shell("echo original")),
                        function_call_turn(DONE))
    run = ghost(env_for(cli_env), "investigate", "redis refuses", stdin="m\necho edited\n",
                cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "modified and approved: echo edited (edited from: echo original)" in run.stdout
    [response] = fake_gemini.last_request.function_responses()
    body = response["response"]
    # the model asked for `echo original`: it must know the output is another command's
    assert body["action"] == "user_modified" and body["command"] == "echo edited"
    assert body["output"].strip() == "edited"
