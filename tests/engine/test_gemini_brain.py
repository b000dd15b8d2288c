"""The real google-genai client, through ``GeminiBrain``, against the local fake Gemini server."""

from __future__ import annotations

import base64
import copy
import json
import socket
from typing import Any

import pytest

from bot.gemini_brain import GeminiBrain, decode_signature
from core.engine.brain import BrainError
from core.engine.models import DEFAULT_MODEL
from core.engine.prompt import build_system_prompt
from core.engine.tools import TOOL_DECLARATIONS, TOOL_NAMES
from tests.fakes.gemini_server import (
    FakeGemini,
    Scripted,
    call,
    error_response,
    function_call_turn,
    raw_response,
    text_turn,
)

PROMPT = build_system_prompt(is_resume=False, audit_dir="/data/audit")
SYMPTOM = {"role": "user", "parts": [{"text": "VMs in prod-subnet cannot reach Redis on 6379"}]}
# Bytes whose standard and URL-safe base64 differ ("+//+..." vs "-__-..."), plus a NUL.
SIGNATURE = b"\xfb\xff\xfe\x00signed-by-gemini\xff"
PING = {"command": "ping -c 4 10.0.1.5", "reasoning": "Baseline reachability of the Redis VM."}


def brain(model: str = DEFAULT_MODEL, **kw: Any) -> GeminiBrain:
    return GeminiBrain(model, "test-key", **kw)


def ask(b: GeminiBrain, history: list[dict[str, Any]]) -> Any:
    return b.generate(system_prompt=PROMPT, tools=TOOL_DECLARATIONS, history=history)


def response_turn(name: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"name": name, "response": response}}]}


# ── parsing replies ────────────────────────────────────────────────────────────────────────────

def test_function_calls_are_parsed_in_order(fake_gemini: FakeGemini) -> None:
    hyps = [{"id": "h1", "description": "NSG denies 6379", "state": "ACTIVE"}]
    fake_gemini.enqueue(function_call_turn(
        call("run_shell_cmd", {**PING, "hypotheses": hyps}, id="c1"),
        call("check_task", {"task_id": "t-1"}, id="c2"),
        text="Two hypotheses; starting locally."))
    reply = ask(brain(), [SYMPTOM])
    assert [(c.name, c.id) for c in reply.function_calls] == [("run_shell_cmd", "c1"),
                                                               ("check_task", "c2")]
    assert reply.function_calls[0].args == {**PING, "hypotheses": hyps}
    assert reply.text == "Two hypotheses; starting locally."
    assert reply.finish_reason == "STOP"
    assert reply.usage["totalTokenCount"] > 0
    assert reply.content["role"] == "model"
    assert [next(iter(p)) for p in reply.content["parts"]] == ["text", "functionCall",
                                                               "functionCall"]


def test_a_text_only_reply(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(text_turn("The NSG denies 6379. Shall I continue?"))
    reply = ask(brain(), [SYMPTOM])
    assert reply.function_calls == ()
    assert reply.text == "The NSG denies 6379. Shall I continue?"
    assert reply.content == {"role": "model",
                             "parts": [{"text": "The NSG denies 6379. Shall I continue?"}]}


def test_thought_parts_are_kept_in_the_turn_but_not_in_the_text(fake_gemini: FakeGemini) -> None:
    body = {"candidates": [{"content": {"role": "model", "parts": [
        {"text": "thinking about NSGs", "thought": True},
        {"text": "Checking the NSG.", "thoughtSignature": base64.b64encode(SIGNATURE).decode()},
    ]}, "finishReason": "STOP"}]}
    fake_gemini.enqueue(raw_response(body))
    reply = ask(brain(), [SYMPTOM])
    assert reply.text == "Checking the NSG."
    assert reply.content["parts"][0] == {"text": "thinking about NSGs", "thought": True}
    assert decode_signature(reply.content["parts"][1]["thoughtSignature"]) == SIGNATURE


# ── the thought-signature round trip ───────────────────────────────────────────────────────────

def test_a_thought_signature_goes_back_byte_identical(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(function_call_turn(("run_shell_cmd", PING), thought_signature=SIGNATURE),
                        text_turn("done"))
    b = brain()
    first = ask(b, [SYMPTOM])
    served = fake_gemini.requests[0]
    stored = first.content["parts"][0]["thoughtSignature"]
    assert stored == base64.b64encode(SIGNATURE).decode(), "stored as the server wrote it"

    # What the store does: JSON out, JSON in; then the next request rebuilds the history.
    history = json.loads(json.dumps([SYMPTOM, first.content, response_turn(
        "run_shell_cmd", {"status": "completed", "output": "4 received", "audit_id": "a-1"})]))
    ask(b, history)
    sent_turn = fake_gemini.last_request.contents[1]
    sent = sent_turn["parts"][0]["thoughtSignature"]
    # The SDK re-encodes bytes URL-safe; Gemini reads either alphabet. The bytes are what count.
    assert sent in (base64.b64encode(SIGNATURE).decode(),
                    base64.urlsafe_b64encode(SIGNATURE).decode())
    assert decode_signature(sent) == SIGNATURE
    assert sent_turn["parts"][0]["functionCall"] == {"name": "run_shell_cmd", "args": PING}
    assert served.contents == [SYMPTOM]
    assert fake_gemini.failures == []


def test_the_round_trip_survives_a_new_process_and_parallel_calls(
        fake_gemini: FakeGemini) -> None:
    sig2 = bytes(range(256))
    fake_gemini.enqueue(
        function_call_turn(("run_shell_cmd", PING), ("check_task", {"task_id": "t-9"}),
                           thought_signature=SIGNATURE),
        function_call_turn(("cleanup_task", {"task_id": "t-9"}), thought_signature=sig2),
        text_turn("finished"))
    first = ask(brain(), [SYMPTOM])
    h = [SYMPTOM, first.content,
         {"role": "user", "parts": [
             {"functionResponse": {"name": "run_shell_cmd", "response": {"status": "completed"}}},
             {"functionResponse": {"name": "check_task", "response": {"status": "task_pending"}}},
         ]}]
    second = ask(brain(), json.loads(json.dumps(h)))  # a new client, as after a restart
    h += [second.content, response_turn("cleanup_task", {"status": "task_completed"})]
    ask(brain(), json.loads(json.dumps(h)))
    model_turns = fake_gemini.last_request.model_turns
    assert decode_signature(model_turns[0]["parts"][0]["thoughtSignature"]) == SIGNATURE
    assert "thoughtSignature" not in model_turns[0]["parts"][1], "only the first call is signed"
    assert decode_signature(model_turns[1]["parts"][0]["thoughtSignature"]) == sig2


def test_a_dropped_signature_is_rejected_like_gemini_does(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(function_call_turn(("run_shell_cmd", PING), thought_signature=SIGNATURE))
    first = ask(brain(), [SYMPTOM])
    stripped = copy.deepcopy(first.content)
    del stripped["parts"][0]["thoughtSignature"]
    with pytest.raises(BrainError) as err:
        ask(brain(), [SYMPTOM, stripped, response_turn("run_shell_cmd", {"status": "completed"})])
    assert err.value.transient is False and err.value.status == 400
    assert "thought signature" in str(err.value)
    fake_gemini.clear_failures()


def test_a_changed_signature_is_rejected(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(function_call_turn(("run_shell_cmd", PING), thought_signature=SIGNATURE))
    first = ask(brain(), [SYMPTOM])
    changed = copy.deepcopy(first.content)
    changed["parts"][0]["thoughtSignature"] = base64.b64encode(SIGNATURE[:-1] + b"!").decode()
    with pytest.raises(BrainError, match="thought signature") as err:
        ask(brain(), [SYMPTOM, changed, response_turn("run_shell_cmd", {"status": "completed"})])
    assert err.value.transient is False
    fake_gemini.clear_failures()


def test_an_unreadable_stored_signature_is_a_clear_error(fake_gemini: FakeGemini) -> None:
    bad = {"role": "model", "parts": [{"text": "x", "thoughtSignature": "not base64!"}]}
    with pytest.raises(BrainError, match="history cannot be sent") as err:
        ask(brain(), [SYMPTOM, bad])
    assert err.value.transient is False
    assert fake_gemini.requests == []


# ── what is sent ───────────────────────────────────────────────────────────────────────────────

def test_the_request_carries_tools_system_instruction_and_meta(fake_gemini: FakeGemini) -> None:
    before = json.dumps(TOOL_DECLARATIONS, sort_keys=True)
    fake_gemini.enqueue(text_turn("ok"))
    meta = {"denial_count": 2, "approaching_threshold": True, "denial_reason": "wrong RG",
            "warning": "Second denial for hypothesis h1."}
    denied = {"status": "denied", "classification": "RISKY", "action": "user_denied",
              "audit_id": "ghost_20260101_000000_003", "_meta": meta}
    history = [SYMPTOM,
               {"role": "model", "parts": [{"functionCall": {"name": "run_shell_cmd",
                                                             "args": PING}}]},
               response_turn("run_shell_cmd", denied)]
    ask(brain(), history)
    req = fake_gemini.last_request
    assert req.model == DEFAULT_MODEL
    assert req.headers["x-goog-api-key"] == "test-key"
    assert req.system_text == PROMPT
    assert req.tool_names == list(TOOL_NAMES)
    assert len(req.body["tools"]) == 1
    sent = {d["name"]: d for d in req.function_declarations}
    assert sent["capture_traffic"]["parameters"]["properties"]["storage_auth_mode"]["enum"] == [
        "login", "key"]
    # the account defaults to GHOST_CAPTURE_STORAGE_ACCOUNT (issue 27)
    assert sent["capture_traffic"]["parameters"]["required"] == ["target", "resource_group"]
    assert "hypotheses" in sent["complete_investigation"]["parameters"]["properties"]
    assert req.contents == history
    assert req.function_responses() == [{"name": "run_shell_cmd", "response": denied}]
    assert req.function_responses()[0]["response"]["_meta"] == meta
    assert len(fake_gemini.requests) == 1, "no automatic function calling round trips"
    assert json.dumps(TOOL_DECLARATIONS, sort_keys=True) == before


def test_an_explicit_base_url_wins_over_the_environment(fake_gemini: FakeGemini,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    fake_gemini.enqueue(text_turn("hello"))
    assert ask(brain(base_url=fake_gemini.base_url), [SYMPTOM]).text == "hello"
    assert fake_gemini.last_request.path.endswith(f"/models/{DEFAULT_MODEL}:generateContent")


# ── errors ─────────────────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_overload_and_server_errors_are_transient(fake_gemini: FakeGemini, code: int) -> None:
    fake_gemini.enqueue(error_response(code, "try later"))
    with pytest.raises(BrainError) as err:
        ask(brain(), [SYMPTOM])
    assert err.value.transient is True and err.value.status == code
    assert "try later" in str(err.value)
    assert len(fake_gemini.requests) == 1, "the SDK does not retry behind the loop's back"


def test_a_429_then_success_is_the_loops_retry(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(error_response(429, "Resource has been exhausted"), text_turn("back"))
    b = brain()
    with pytest.raises(BrainError, match="rate limit") as err:
        ask(b, [SYMPTOM])
    assert err.value.transient
    assert ask(b, [SYMPTOM]).text == "back"


def test_a_bad_api_key_says_which_setting_to_fix(fake_gemini: FakeGemini) -> None:
    with pytest.raises(BrainError) as err:
        GeminiBrain(DEFAULT_MODEL, "wrong-key").generate(
            system_prompt=PROMPT, tools=TOOL_DECLARATIONS, history=[SYMPTOM])
    assert err.value.transient is False and err.value.status == 400
    assert "GEMINI_API_KEY" in str(err.value)


def test_an_unknown_model_names_the_model_and_the_setting(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(error_response(404, "models/gemini-2.0-flash is not found"))
    with pytest.raises(BrainError) as err:
        ask(brain("gemini-2.0-flash"), [SYMPTOM])
    assert err.value.transient is False and err.value.status == 404
    assert "'gemini-2.0-flash'" in str(err.value) and "--model" in str(err.value)
    assert DEFAULT_MODEL in str(err.value)


def test_the_documented_v1beta_is_spoken_unless_the_sdk_variable_says_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """google-genai 3.x defaults to /v1/, which has refused tools and systemInstruction; a
    fake written from the REST reference serves /v1beta/. The 404 names the URL it tried."""
    from tests.engine.grader_gemini import GraderGemini, text

    with GraderGemini(lambda body: [text("hello")], versions=("v1beta", "v1")) as fake:
        assert ask(brain("m", base_url=fake.url), [SYMPTOM]).text == "hello"
        monkeypatch.setenv("GOOGLE_GENAI_API_VERSION", "v1")
        ask(brain("m", base_url=fake.url), [SYMPTOM])
        assert [r["path"] for r in fake.requests] == ["/v1beta/models/m:generateContent",
                                                      "/v1/models/m:generateContent"]
        with pytest.raises(BrainError) as err:
            ask(brain("m", base_url=fake.url + "/nowhere"), [SYMPTOM])
    assert f"POST {fake.url}/nowhere/v1/models/m:generateContent" in str(err.value)
    assert "GOOGLE_GENAI_API_VERSION" in str(err.value)


@pytest.mark.parametrize("code", [400, 401, 403])
def test_client_errors_are_not_transient(fake_gemini: FakeGemini, code: int) -> None:
    fake_gemini.enqueue(error_response(code, "request is wrong"))
    with pytest.raises(BrainError) as err:
        ask(brain(), [SYMPTOM])
    assert err.value.transient is False and err.value.status == code
    assert "request is wrong" in str(err.value)


def test_a_timeout_is_transient(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(Scripted(200, text_turn("too late").body, delay_s=3))
    with pytest.raises(BrainError, match="did not answer within 0.5s") as err:
        ask(brain(timeout_s=0.5), [SYMPTOM])
    assert err.value.transient is True


def test_an_unreachable_server_is_transient() -> None:
    b = GeminiBrain(DEFAULT_MODEL, "test-key", base_url=f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(BrainError, match="could not reach Gemini") as err:
        ask(b, [SYMPTOM])
    assert err.value.transient is True


def test_a_blocked_prompt_is_not_transient(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(raw_response({"promptFeedback": {"blockReason": "SAFETY"}}))
    with pytest.raises(BrainError, match="prompt blocked: SAFETY") as err:
        ask(brain(), [SYMPTOM])
    assert err.value.transient is False


@pytest.mark.parametrize(("finish", "transient"), [("MALFORMED_FUNCTION_CALL", True),
                                                   ("STOP", True), ("SAFETY", False)])
def test_an_empty_candidate_is_an_error(fake_gemini: FakeGemini, finish: str,
                                        transient: bool) -> None:
    fake_gemini.enqueue(raw_response({"candidates": [{"finishReason": finish}]}))
    with pytest.raises(BrainError, match=finish) as err:
        ask(brain(), [SYMPTOM])
    assert err.value.transient is transient


def test_an_empty_api_key_is_refused_up_front() -> None:
    with pytest.raises(BrainError, match="GEMINI_API_KEY"):
        GeminiBrain(DEFAULT_MODEL, "")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ── ordinary replies the happy path rarely sees ────────────────────────────────────────────────

def test_a_reply_without_usage_metadata_or_ids_is_read(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(raw_response({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "run_shell_cmd", "args": PING}},
        {"functionCall": {"name": "complete_investigation"}}]}}]}))
    reply = ask(brain(), [SYMPTOM])
    assert reply.usage == {} and reply.finish_reason is None
    assert [(c.name, c.id, c.args) for c in reply.function_calls] == [
        ("run_shell_cmd", None, PING), ("complete_investigation", None, {})]


def test_a_finish_reason_newer_than_the_sdk_is_kept(fake_gemini: FakeGemini) -> None:
    """(That the SDK's warning stays off the terminal is checked through the CLI, where
    pytest's own warning capture does not override the filter: test_investigate_recovery.)"""
    fake_gemini.enqueue(raw_response({"candidates": [{
        "content": {"role": "model", "parts": [{"text": "partial"}]},
        "finishReason": "SOME_NEWER_REASON"}]}))
    reply = ask(brain(), [SYMPTOM])
    assert reply.text == "partial" and reply.finish_reason == "SOME_NEWER_REASON"


def test_no_candidates_without_a_reason_may_be_retried(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(raw_response({"candidates": []}))
    with pytest.raises(BrainError, match="no candidates and no reason") as err:
        ask(brain(), [SYMPTOM])
    assert err.value.transient is True and "blocked" not in str(err.value)


def test_a_blocked_prompt_says_retrying_will_not_help(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(raw_response({"promptFeedback": {
        "blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "policy"}}))
    with pytest.raises(BrainError, match="prompt blocked: PROHIBITED_CONTENT; policy") as err:
        ask(brain(), [SYMPTOM])
    assert err.value.transient is False and "will not help" in str(err.value)
