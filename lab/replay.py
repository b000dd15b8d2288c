"""ReplayBrain: a scenario's reference investigation served as the model's turns.

The replay file (lab-scenario-format.md "Replay files") is a list of model turns in the Gemini
REST shape. Turn *k* is the answer to the *k*-th model call of the investigation, counted from
the model turns already in the history, so a replay resumes correctly in any process (a chat
worker picks it up after an approval). ``{{task:N}}`` in any string becomes the task id of the
N-th capture task this investigation created, read from the orchestrator's responses in the
history. Everything else (gate, approvals, audit, captures, RCA) runs for real.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.engine.brain import BrainError, FunctionCall, ModelReply

if TYPE_CHECKING:
    from lab.scenario import Scenario

_TASK_REF = re.compile(r"\{\{task:(\d+)\}\}")


class ReplayError(Exception):
    """The replay file is missing or not a list of model turns (one line, for the engineer)."""


def load_replay(path: Path) -> list[dict[str, Any]]:
    """The turns of a replay file, checked for shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ReplayError(f"{path}: replay file not found") from exc
    except (OSError, ValueError) as exc:
        raise ReplayError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, list) or not data:
        raise ReplayError(f"{path}: a replay is a non-empty JSON list of model turns")
    for i, turn in enumerate(data):
        parts = turn.get("parts") if isinstance(turn, dict) else None
        if not isinstance(parts, list) or not parts or not all(isinstance(p, dict)
                                                               for p in parts):
            raise ReplayError(f"{path}: [{i}]: a turn is {{\"parts\": [...]}} with at least "
                              "one part")
    return data


def capture_task_ids(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """Task ids of the capture tasks in the history, in the order they were created."""
    ids: list[str] = []
    for turn in history:
        for part in turn.get("parts") or []:
            response = part.get("functionResponse") if isinstance(part, Mapping) else None
            if not isinstance(response, Mapping) or response.get("name") != "capture_traffic":
                continue
            body = response.get("response")
            if not isinstance(body, Mapping):
                continue
            # a dual-end capture creates two tasks: the source's, then its partner's ("tasks")
            tasks = body.get("tasks")
            pair: list[Any] = tasks if isinstance(tasks, list) else []
            for task in (body, *pair):
                task_id = task.get("task_id") if isinstance(task, Mapping) else None
                if task_id and str(task_id) not in ids:
                    ids.append(str(task_id))
    return ids


def substitute(value: Any, task_ids: Sequence[str]) -> Any:
    """``value`` with every ``{{task:N}}`` in its strings replaced by ``task_ids[N]``."""
    if isinstance(value, str):
        def task(match: re.Match[str]) -> str:
            n = int(match.group(1))
            if n >= len(task_ids):
                raise BrainError(
                    f"the replay refers to capture task {n} ({match.group(0)}) but this "
                    f"investigation created {len(task_ids)}; the replay does not fit what ran",
                    transient=False)
            return task_ids[n]
        return _TASK_REF.sub(task, value)
    if isinstance(value, list):
        return [substitute(v, task_ids) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, task_ids) for k, v in value.items()}
    return value


class ReplayBrain:
    """``core.engine.brain.Brain`` that answers with a scenario's scripted turns."""

    def __init__(self, scenario: Scenario) -> None:
        path = scenario.replay_path()
        if path is None:
            raise ReplayError(f"scenario {scenario.name} has no replay; set GEMINI_API_KEY to "
                              "let Gemini investigate it")
        self.turns = load_replay(path)
        self.model = f"replay:{scenario.name}"
        self.path = path

    def generate(self, *, system_prompt: str, tools: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]]) -> ModelReply:
        index = sum(1 for turn in history if turn.get("role") == "model")
        if index >= len(self.turns):
            raise BrainError(f"the replay {self.path.name} has no turn {index + 1} (it has "
                             f"{len(self.turns)}); it should end with complete_investigation",
                             transient=False)
        content = substitute(copy.deepcopy(self.turns[index]), capture_task_ids(history))
        content["role"] = "model"
        calls = []
        text = []
        for part in content["parts"]:
            call = part.get("functionCall")
            if isinstance(call, dict):
                calls.append(FunctionCall(name=str(call.get("name") or ""),
                                          args=dict(call.get("args") or {}), id=call.get("id")))
            elif isinstance(part.get("text"), str) and not part.get("thought"):
                text.append(part["text"])
        return ModelReply(content=content, function_calls=tuple(calls), text="".join(text),
                          finish_reason="STOP")
