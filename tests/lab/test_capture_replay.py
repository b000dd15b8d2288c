"""ReplayBrain: the replay's turns in order, whatever Ghost sent, with {{task:N}} filled in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.engine.brain import BrainError
from lab.replay import ReplayBrain, ReplayError, capture_task_ids
from lab.scenario import load_scenario

from .wiring_fixtures import REPLAY, scenario_data, write_scenario


def model(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "model", "parts": parts}


def response(name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"name": name, "response": body}}]}


def brain(tmp_path: Path, replay: list[dict[str, Any]] = REPLAY) -> ReplayBrain:
    return ReplayBrain(load_scenario(write_scenario(tmp_path, scenario_data(), replay)))


def generate(b: ReplayBrain, history: list[dict[str, Any]]) -> Any:
    return b.generate(system_prompt="ignored", tools=[], history=history)


def test_turns_are_served_in_order_counted_from_the_model_turns_in_the_history(
        tmp_path: Path) -> None:
    b = brain(tmp_path)
    assert b.model == "replay:wiring-test"
    first = generate(b, [{"role": "user", "parts": [{"text": "symptom"}]}])
    assert first.text.startswith("Hypotheses") and first.function_calls[0].name == \
        "run_shell_cmd"
    history = [{"role": "user", "parts": [{"text": "symptom"}]}, first.content,
               response("run_shell_cmd", {"status": "denied"})]
    second = generate(b, history)  # a denial does not change what comes next
    assert second.function_calls[0].name == "capture_traffic"
    assert second.content["role"] == "model"


def test_task_references_become_this_investigations_capture_task_ids(tmp_path: Path) -> None:
    b = brain(tmp_path)
    history = [
        {"role": "user", "parts": [{"text": "symptom"}]},
        model(REPLAY[0]["parts"]), response("run_shell_cmd", {"status": "completed"}),
        model(REPLAY[1]["parts"]),
        response("capture_traffic", {"status": "task_pending", "task_id": "ghost_app-1_X"}),
    ]
    reply = generate(b, history)
    assert reply.function_calls[0].args == {"task_id": "ghost_app-1_X"}
    assert json.dumps(REPLAY).count("ghost_app-1_X") == 0, "the replay file is not changed"


def test_a_reference_to_a_capture_that_was_never_created_is_a_clear_error(
        tmp_path: Path) -> None:
    b = brain(tmp_path)
    history = [{"role": "user", "parts": [{"text": "s"}]}, model([{"text": "a"}]),
               model([{"text": "b"}])]
    with pytest.raises(BrainError) as err:
        generate(b, history)
    assert "capture task 0" in str(err.value) and err.value.transient is False


def test_running_out_of_turns_is_not_retried(tmp_path: Path) -> None:
    b = brain(tmp_path, [{"parts": [{"text": "only one"}]}])
    with pytest.raises(BrainError) as err:
        generate(b, [model([{"text": "only one"}])])
    assert err.value.transient is False and "no turn 2" in str(err.value)


def test_capture_task_ids_are_read_in_creation_order_once_each() -> None:
    history = [response("capture_traffic", {"task_id": "a"}),
               response("check_task", {"task_id": "a"}),
               response("capture_traffic", {"status": "error"}),
               response("capture_traffic", {"task_id": "b"}),
               response("capture_traffic", {"task_id": "a"})]
    assert capture_task_ids(history) == ["a", "b"]


def test_a_broken_replay_file_is_one_line_naming_it(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, scenario_data(), [{"parts": []}])
    with pytest.raises(ReplayError) as err:
        brain_of(path)
    assert "wiring-test.replay.json" in str(err.value) and "\n" not in str(err.value)


def brain_of(path: Path) -> ReplayBrain:
    return ReplayBrain(load_scenario(path))
