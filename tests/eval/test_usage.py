"""Tokens and cost: with the fake Gemini returning ``usageMetadata``, an eval run's tokens are
the sums of what it returned and its cost comes from the GHOST_PRICES table."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.eval.runner import EvalOptions, run_scenario
from core.engine.usage import PriceTableError, Usage, parse_prices
from lab.replay import ReplayContext, substitute
from lab.scenario import find_scenario, load_scenario
from tests.eval.helpers import isolate, settings
from tests.fakes.gemini_server import FakeGemini, RecordedRequest, Scripted, raw_response

MODEL = "gemini-eval-test"
PRICES = {MODEL: {"prompt": 0.5, "output": 3.0, "thinking": 2.0}}


def usage_of(n: int) -> dict[str, int]:
    return {"promptTokenCount": 1000 + 100 * n, "candidatesTokenCount": 40 + n,
            "thoughtsTokenCount": 7 * n, "totalTokenCount": 0}


def replay_as_gemini(turns: list[dict[str, Any]], n: int) -> Callable[[RecordedRequest],
                                                                         Scripted]:
    """Serve replay turn ``n`` as Gemini would, its placeholders filled from what Ghost sent."""
    def answer(request: RecordedRequest) -> Scripted:
        content = substitute(turns[n], ReplayContext.of(request.contents))
        return raw_response({"candidates": [{"content": {"role": "model", **content},
                                             "finishReason": "STOP", "index": 0}],
                             "usageMetadata": usage_of(n)})
    return answer


def test_tokens_and_cost_are_the_sums_of_what_gemini_returned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_gemini: FakeGemini) -> None:
    isolate(monkeypatch, tmp_path, keep=("GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"))
    path = find_scenario("nsg-deny-redis")
    scenario = load_scenario(path)
    turns = json.loads((scenario.replay_path() or Path()).read_text(encoding="utf-8"))
    fake_gemini.enqueue(*(replay_as_gemini(turns, n) for n in range(len(turns))))
    prices = parse_prices(json.dumps(PRICES))
    run = run_scenario(path, settings(tmp_path, model=MODEL), EvalOptions(prices=prices),
                       repeat=0, data_dir=tmp_path / "run")
    assert run.error is None and run.passed, (run.solved_reasons, run.evidence_reasons)
    assert run.model == MODEL and len(fake_gemini.requests) == len(turns)
    sent = [usage_of(n) for n in range(len(turns))]
    prompt = sum(u["promptTokenCount"] for u in sent)
    output = sum(u["candidatesTokenCount"] for u in sent)
    thinking = sum(u["thoughtsTokenCount"] for u in sent)
    assert (run.model_calls, run.prompt_tokens, run.output_tokens, run.thinking_tokens) == (
        len(turns), prompt, output, thinking)
    assert run.cost_usd == pytest.approx((prompt * 0.5 + output * 3.0 + thinking * 2.0) / 1e6)

    # the engine saved usageMetadata per model call with the investigation
    from bot.bootstrap import build_store

    store = build_store(settings(tmp_path, data_dir=tmp_path / "run"))
    saved = (store.get_investigation(run.session_id or "").engine_state or {})["usage"]
    assert [u["turn"] for u in saved] == list(range(1, len(turns) + 1))
    assert {u["model"] for u in saved} == {MODEL}
    assert [u["promptTokenCount"] for u in saved] == [u["promptTokenCount"] for u in sent]


def test_a_model_without_a_price_has_no_cost(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from core.engine.usage import cost_of

    table = parse_prices(json.dumps(PRICES))
    assert cost_of(table, "other-model", Usage(1, 10, 10, 0)) is None
    assert cost_of(table, f"models/{MODEL}", Usage(1, 2_000_000, 0, 0)) == 1.0
    assert cost_of({}, "replay:nsg-deny-redis", Usage()) == 0.0


@pytest.mark.parametrize("text, problem", [
    ("{not json", "not valid JSON"),
    ('["a"]', "must be a JSON object"),
    ('{"m": {"prompt": 1}}', "needs numeric prompt and output"),
    ('{"m": {"prompt": 1, "output": 2, "cached": 1}}', "prompt, output and (optionally)"),
    ('{"m": {"prompt": -1, "output": 2}}', "negative price"),
])
def test_a_bad_price_table_is_one_clear_line(text: str, problem: str) -> None:
    with pytest.raises(PriceTableError) as caught:
        parse_prices(text)
    assert problem in caught.value.message and "\n" not in str(caught.value)


def test_thinking_defaults_to_the_output_price() -> None:
    price = parse_prices('{"m": {"prompt": 1, "output": 4}}')["m"]
    assert price.thinking == 4.0
    assert Usage.of({"promptTokenCount": 3, "thoughtsTokenCount": 2}) == Usage(1, 3, 0, 2)
