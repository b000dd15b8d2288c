"""The fake Gemini server itself: loud when the script runs out, scripts from JSON, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.gemini_brain import GeminiBrain, decode_signature
from core.engine.brain import BrainError, ModelReply
from core.engine.tools import TOOL_DECLARATIONS
from tests.fakes.gemini_server import FakeGemini, load_script, script_entry, text_turn

REPO = Path(__file__).resolve().parents[2]
SYMPTOM = {"role": "user", "parts": [{"text": "DNS fails"}]}


def ask(base_url: str) -> ModelReply:
    return GeminiBrain("gemini-test", "test-key", base_url=base_url).generate(
        system_prompt="p", tools=TOOL_DECLARATIONS, history=[SYMPTOM])


def test_an_empty_queue_fails_loudly_and_is_not_retryable() -> None:
    with FakeGemini([text_turn("only one")]) as fake:
        ask(fake.base_url)
        with pytest.raises(BrainError, match="no scripted response is left") as err:
            ask(fake.base_url)
    assert err.value.transient is False
    assert len(fake.failures) == 1 and "request #2" in fake.failures[0]


def test_unexpected_paths_are_failures() -> None:
    import urllib.error
    import urllib.request

    with FakeGemini() as fake:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{fake.base_url}/v1/models/x:streamGenerateContent",
                                   data=b"{}", timeout=5)
        assert err.value.code == 404
    assert fake.failures and "streamGenerateContent" in fake.failures[0]
    with pytest.raises(AssertionError, match="never requested"):
        FakeGemini([text_turn("unused")]).assert_drained()


def test_auto_signatures_are_issued_and_enforced() -> None:
    script = [script_entry({"calls": [{"name": "check_task", "args": {"task_id": "t"}}]})]
    with FakeGemini(script, auto_signatures=True) as fake:
        reply = GeminiBrain("m", "test-key", base_url=fake.base_url).generate(
            system_prompt="p", tools=TOOL_DECLARATIONS, history=[SYMPTOM])
        part = reply.content["parts"][0]
        assert decode_signature(part["thoughtSignature"]).startswith(b"\xfb\xff\xfe")
        unsigned = {"role": "model", "parts": [{"functionCall": part["functionCall"]}]}
        answer = {"role": "user", "parts": [{"functionResponse": {
            "name": "check_task", "response": {"status": "task_pending"}}}]}
        with pytest.raises(BrainError, match="missing a thought_signature"):
            GeminiBrain("m", "test-key", base_url=fake.base_url).generate(
                system_prompt="p", tools=TOOL_DECLARATIONS, history=[SYMPTOM, unsigned, answer])
    assert fake.failures and "missing a thought_signature" in fake.failures[0]


def test_script_entries_cover_calls_text_errors_and_raw(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([
        {"calls": [{"name": "run_shell_cmd", "args": {"command": "dig x", "reasoning": "r"},
                    "id": "c1"}], "text": "checking", "thought_signature": "AAEC"},
        {"text": "done", "comment": "a text turn"},
        {"error": 503, "message": "overloaded"},
        {"body": {"candidates": []}, "status": 200, "delay_s": 0.1},
    ]))
    first, second, third, fourth = load_script(path)
    parts = first.body["candidates"][0]["content"]["parts"]
    assert parts[0] == {"text": "checking"}
    assert parts[1]["functionCall"]["id"] == "c1" and parts[1]["thoughtSignature"] == "AAEC"
    assert second.body["candidates"][0]["content"]["parts"] == [{"text": "done"}]
    assert (third.status, third.body["error"]["status"]) == (503, "UNAVAILABLE")
    assert fourth.delay_s == 0.1
    with pytest.raises(ValueError, match="unknown keys"):
        script_entry({"txt": "typo"})


def test_the_cli_serves_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "hello from the script"}]))
    record = tmp_path / "requests"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.gemini_server", "--port", "0", "--script",
         str(script), "--record", str(record)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "FakeGemini listening on http://127.0.0.1:" in first, first
        base_url = first.split(" on ")[1].split()[0]
        reply = ask(base_url)
        assert reply.text == "hello from the script"
        sent = json.loads((record / "request-001.json").read_text())
        assert sent["contents"] == [SYMPTOM]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
