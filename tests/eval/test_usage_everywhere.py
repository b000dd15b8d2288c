"""Usage outside eval: with the fake Gemini returning ``usageMetadata``, `ghost demo` (the
terminal loop) shows the sums in its closing banner and its RCA, `ghost session show` shows
them too, and so do the Slack status message and the RCA posted in the thread."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bot.cli import main
from lab.scenario import find_scenario, load_scenario
from storage.store import Store
from tests.eval.helpers import isolate, settings
from tests.eval.test_usage import replay_as_gemini, usage_of
from tests.fakes.gemini_server import FakeGemini, call, function_call_turn, raw_response
from tests.fakes.slack_api import FakeSlack
from tests.lab.test_chat_lab import lab_slack
from tests.slack.conftest import CHANNEL

MODEL = "gemini-usage-test"
CHAT_MODEL = "gemini-test"  # the Slack harness's GHOST_MODEL


def test_banner_and_session_show_give_the_sums_gemini_returned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gemini: FakeGemini,
        capsys: pytest.CaptureFixture[str]) -> None:
    from bot.commands.demo import run

    isolate(monkeypatch, tmp_path, keep=("GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"))
    monkeypatch.setenv("GHOST_PRICES", json.dumps({MODEL: {"prompt": 1.0, "output": 4.0,
                                                           "thinking": 2.0}}))
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "ghost-data"))
    scenario = load_scenario(find_scenario("nsg-deny-redis"))
    turns = json.loads((scenario.replay_path() or Path()).read_text(encoding="utf-8"))
    fake_gemini.enqueue(*(replay_as_gemini(turns, n) for n in range(len(turns))))
    out = io.StringIO()
    assert run(settings(tmp_path, model=MODEL), scenario="nsg-deny-redis", yes=True,
               stdin=io.StringIO(), stdout=out) == 0, out.getvalue()[-2000:]

    sent = [usage_of(n) for n in range(len(turns))]
    prompt = sum(u["promptTokenCount"] for u in sent)
    output = sum(u["candidatesTokenCount"] for u in sent)
    thinking = sum(u["thoughtsTokenCount"] for u in sent)
    cost = (prompt * 1.0 + output * 4.0 + thinking * 2.0) / 1e6
    expected = (f"{prompt + output + thinking:,} tokens (prompt {prompt:,}, output {output:,}, "
                f"thinking {thinking:,}) in {len(turns)} model calls, est. ${cost:.4f}")
    assert f"  Usage: {expected}\n" in out.getvalue()

    session_id = out.getvalue().split("Lab session ", 1)[1].split()[0]
    capsys.readouterr()
    assert main(["session", "show", session_id]) == 0
    assert f"usage:       {expected}\n" in capsys.readouterr().out
    rca = Path(out.getvalue().split("RCA REPORT WRITTEN: ", 1)[1].split()[0])
    assert f"\n- Cost: {expected}\n" in rca.read_text(encoding="utf-8")


def test_the_slack_status_message_shows_tokens_cost_and_time(
        store: Store, slack_api: FakeSlack, fake_gemini: FakeGemini, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A lab investigation in Slack with the fake Gemini: the status message that Ghost edits
    in place ends with the sums of what Gemini returned and the estimated cost."""
    monkeypatch.setenv("GHOST_PRICES", json.dumps({CHAT_MODEL: {"prompt": 2.0,
                                                                 "output": 10.0}}))
    slack = lab_slack(store, slack_api, tmp_path, monkeypatch, replay=None)
    usages = [{"promptTokenCount": 1200, "candidatesTokenCount": 80, "thoughtsTokenCount": 30},
              {"promptTokenCount": 1900, "candidatesTokenCount": 60, "thoughtsTokenCount": 0}]
    turns = [function_call_turn(call("run_shell_cmd", {
        "command": "az network watcher test-ip-flow -g rg-data --vm db-1 --direction Inbound "
                   "--protocol TCP --local 10.20.2.4:6380 --remote 10.20.1.4:50000",
        "reasoning": "which rule decides"})),
        function_call_turn(call("complete_investigation", {
            "confidence": "high", "root_cause_summary": "deny-app-6380 on nsg-db."}))]
    fake_gemini.enqueue(*(raw_response({**t.body, "usageMetadata": u})
                          for t, u in zip(turns, usages, strict=True)))
    assert slack.slash("investigate app-1 cannot reach db-1 on 6380").status == 200
    slack.worker.run_until_idle()
    inv = slack.only_investigation()
    assert inv.status == "completed"
    tokens = sum(sum(u.values()) for u in usages)
    cost = (3100 * 2.0 + 140 * 10.0 + 30 * 10.0) / 1e6  # thinking at the output price
    assert {u["model"] for u in inv.engine_state["usage"]} == {CHAT_MODEL}
    status = str(slack.fake.message(CHANNEL, str(inv.thread_ref))["blocks"])
    assert f"{tokens:,} tokens · est. ${cost:.4f} · " in status, status
    assert "min so far" in status
    (rca,) = slack.fake.uploads.values()  # the RCA posted in the thread
    assert f"- Cost: {tokens:,} tokens (prompt 3,100, output 140, thinking 30) in 2 model " \
        f"calls, est. ${cost:.4f}" in rca.decode()
