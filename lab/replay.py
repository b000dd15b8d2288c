"""ReplayBrain: a scenario's reference investigation served as the model's turns.

The replay file (lab-scenario-format.md "Replay files") is a list of model turns in the Gemini
REST shape. Turn *k* is the answer to the *k*-th model call of the investigation, counted from
the model turns already in the history, so a replay resumes correctly in any process (a chat
worker picks it up after an approval). Placeholders in any string are filled from what this
investigation produced, read from the history alone (docs/lab.md, "The replay"):

- ``{{task:N}}``: the task id of the N-th capture task created (the format's own placeholder);
- ``{{audit:N}}`` / ``{{audit:last}}`` (lab extension): the audit id of the N-th (or latest)
  ``run_shell_cmd`` result, so a replay can cite evidence (``evidence_audit_ids``);
- ``{{report:N}}`` / ``{{summary:N}}`` (lab extension): the forensic report / executive summary
  path of capture task N, as the latest orchestrator answer gave it, shell-quoted, so a replay
  can ``cat`` it wherever the data directory is;
- ``{{data_dir}}`` (lab extension): Ghost's data directory (resolved, shell-quoted), the one
  folder the gate lets a download or an analysis write to, so a replay can name where flow-log
  blobs go on any machine. It is configuration, not history: every process of one deployment
  fills it the same way.

A turn may declare what it depends on (``expects``) and where to go when that did not happen
as scripted (``on_denied``, ``on_changed``): ``lab.replay_format`` reads those fields,
``lab.replay_follow`` checks them against the history and ``lab.replay_end`` ends a replay that
cannot follow what ran without narrating what did not happen.

Everything else (gate, approvals, audit, captures, RCA) runs for real.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.engine.brain import BrainError, FunctionCall, ModelReply
from lab.replay_end import honest_end
from lab.replay_follow import Divergence, check, responses
from lab.replay_format import ReplayError as ReplayError
from lab.replay_format import Script, Turn, load_script

if TYPE_CHECKING:
    from lab.scenario import Scenario

_REF = re.compile(r"\{\{(?:(task|report|summary):(\d+)|(audit):(\d+|last)|(data_dir))\}\}")
#: the stored form of a run_shell_cmd response (core.engine.history.AUDIT_REF), in case a
#: history reaches the brain without being rebuilt
_AUDIT_REF = "_audit_ref"
_PATH_KEYS = {"report": "report_path", "summary": "executive_summary_path"}


def load_replay(path: Path) -> list[dict[str, Any]]:
    """The turns of a replay file, checked for shape (branches and dependencies included)."""
    return [dict(turn) for turn in load_script(path).raw]


_responses = responses


def capture_task_ids(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """Task ids of the capture tasks in the history, in the order they were created."""
    ids: list[str] = []
    for name, body in _responses(history):
        if name != "capture_traffic":
            continue
        # a dual-end capture creates two tasks: the source's, then its partner's ("tasks")
        tasks = body.get("tasks")
        pair: list[Any] = tasks if isinstance(tasks, list) else []
        for task in (body, *pair):
            task_id = task.get("task_id") if isinstance(task, Mapping) else None
            if task_id and str(task_id) not in ids:
                ids.append(str(task_id))
    return ids


def shell_audit_ids(history: Sequence[Mapping[str, Any]]) -> list[str | None]:
    """The audit id of every ``run_shell_cmd`` result in the history, in order.

    Denied and blocked commands have one too (the shell audits them); a result whose outcome
    was never recorded has None, so the positions still follow the replay's calls.
    """
    ids: list[str | None] = []
    for name, body in _responses(history):
        if name == "run_shell_cmd":
            audit_id = body.get("audit_id") or body.get(_AUDIT_REF)
            ids.append(str(audit_id) if audit_id else None)
    return ids


def capture_paths(history: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """task id -> {report_path, executive_summary_path}, from the latest answer giving them."""
    paths: dict[str, dict[str, str]] = {}
    for _, body in _responses(history):
        tasks = body.get("tasks")
        for task in (body, *(tasks if isinstance(tasks, list) else [])):
            if not isinstance(task, Mapping) or not task.get("task_id"):
                continue
            result = task.get("result")
            if not isinstance(result, Mapping):
                continue
            found = {key: str(result[key]) for key in _PATH_KEYS.values() if result.get(key)}
            if found:
                paths.setdefault(str(task["task_id"]), {}).update(found)
    return paths


@dataclass(frozen=True)
class ReplayContext:
    """What the placeholders stand for at one model call, read from the history."""

    task_ids: Sequence[str] = ()
    audit_ids: Sequence[str | None] = ()
    paths: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    data_dir: Path | None = None

    @classmethod
    def of(cls, history: Sequence[Mapping[str, Any]],
           data_dir: Path | None = None) -> ReplayContext:
        return cls(capture_task_ids(history), shell_audit_ids(history), capture_paths(history),
                   data_dir)

    def task(self, n: int, ref: str) -> str:
        if n >= len(self.task_ids):
            raise _misfit(f"refers to capture task {n} ({ref}) but this investigation created "
                          f"{len(self.task_ids)}")
        return self.task_ids[n]

    def audit(self, which: str, ref: str) -> str:
        count = len(self.audit_ids)
        if which == "last":
            if not count:
                raise _misfit(f"cites the latest command ({ref}) but no run_shell_cmd has "
                              "answered yet")
            n = count - 1
        else:
            n = int(which)
            if n >= count:
                raise _misfit(f"cites run_shell_cmd result {n} ({ref}) but this investigation "
                              f"has {count}")
        audit_id = self.audit_ids[n]
        if audit_id is None:
            raise _misfit(f"cites run_shell_cmd result {n} ({ref}) but its outcome was never "
                          "recorded, so it has no audit id")
        return audit_id

    def path(self, kind: str, n: int, ref: str) -> str:
        task_id = self.task(n, ref)
        key = _PATH_KEYS[kind]
        path = self.paths.get(task_id, {}).get(key)
        if not path:
            raise _misfit(f"reads the {key} of capture task {n} ({ref}, {task_id}) but no "
                          "check_task answer has given it yet (the capture is not analysed)")
        return shlex.quote(path)

    def data_directory(self) -> str:
        if self.data_dir is None:
            raise _misfit("names Ghost's data directory ({{data_dir}}) but none was given to "
                          "the replay brain")
        return shlex.quote(str(self.data_dir.resolve()))

    def fill(self, match: re.Match[str]) -> str:
        kind, n, audit, which, data_dir = match.groups()
        ref = match.group(0)
        if data_dir:
            return self.data_directory()
        if audit:
            return self.audit(which, ref)
        if kind == "task":
            return self.task(int(n), ref)
        return self.path(kind, int(n), ref)


MISFIT = "; the replay does not fit what ran"


def _misfit(what: str) -> BrainError:
    return BrainError(f"the replay {what}{MISFIT}", transient=False)


def substitute(value: Any, context: ReplayContext | Sequence[str]) -> Any:
    """``value`` with every placeholder in its strings filled in (a sequence: task ids only)."""
    if not isinstance(context, ReplayContext):
        context = ReplayContext(task_ids=tuple(context))
    if isinstance(value, str):
        return _REF.sub(context.fill, value)
    if isinstance(value, list):
        return [substitute(v, context) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, context) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class _Step:
    """Where the script stands at one model call: the sequence, the position, and what it
    serves there (a scripted turn, or the honest end)."""

    turns: tuple[Turn, ...]
    position: int
    content: dict[str, Any] | None = None
    end: Divergence | None = None


def _model_positions(history: Sequence[Mapping[str, Any]]) -> list[int]:
    return [i for i, turn in enumerate(history) if turn.get("role") == "model"]


def scripted_commands(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """The commands of the replay's own run_shell_cmd calls, in order (placeholders filled)."""
    commands: list[str] = []
    for turn in history:
        if turn.get("role") != "model":
            continue
        for part in turn.get("parts") or []:
            call = part.get("functionCall") if isinstance(part, Mapping) else None
            if isinstance(call, Mapping) and call.get("name") == "run_shell_cmd":
                args = call.get("args")
                commands.append(str(args.get("command") or "") if isinstance(args, Mapping)
                                else "")
    return commands


class ReplayBrain:
    """``core.engine.brain.Brain`` that answers with a scenario's scripted turns.

    Where the script declares what a turn depends on (``expects``), the brain follows what
    ran: a denied or changed dependency takes the turn's ``on_denied`` / ``on_changed`` branch,
    or ends the investigation honestly (``lab.replay_end``). Which turn answers a model call
    is worked out again from the history at every call, so a chat worker in another process
    serves the same turn.
    """

    def __init__(self, scenario: Scenario, data_dir: Path | None = None) -> None:
        path = scenario.replay_path()
        if path is None:
            raise ReplayError(f"scenario {scenario.name} has no replay; set GEMINI_API_KEY to "
                              "let Gemini investigate it")
        self.script: Script = load_script(path)
        self.turns = list(self.script.raw)
        self.model = f"replay:{scenario.name}"
        self.path = path
        self.data_dir = data_dir

    def generate(self, *, system_prompt: str, tools: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]]) -> ModelReply:
        positions = _model_positions(history)
        turns, position = self.script.turns, 0
        step: _Step | None = None
        for n in range(len(positions) + 1):
            prefix = history[:positions[n]] if n < len(positions) else history
            step = self._resolve(turns, position, prefix, n, fill=n == len(positions))
            if step.end is not None:
                break  # the honest end was served: nothing of the script follows it
            turns, position = step.turns, step.position + 1
        assert step is not None
        if step.end is not None:
            content = honest_end(step.end, history)
        else:
            assert step.content is not None
            content = step.content
        return _reply(content)

    def _resolve(self, turns: tuple[Turn, ...], position: int,
                 history: Sequence[Mapping[str, Any]], call: int, *, fill: bool) -> _Step:
        """The turn that answers model call ``call`` (0-based), following branches."""
        while True:
            if position >= len(turns):
                raise BrainError(f"the replay {self.path.name} has no turn {call + 1} (it "
                                 f"has {call}); it should end with complete_investigation",
                                 transient=False)
            turn = turns[position]
            if not self.script.follows:
                return _Step(turns, position, self._fill(turn, history, call) if fill else None)
            divergence = check(turn.expects, history, scripted_commands(history),
                               capture_task_ids(history))
            content = None
            if divergence is None:
                try:
                    content = self._fill(turn, history, call)
                except BrainError as exc:  # a placeholder for something that never came
                    what = str(exc).split(": ", 1)[-1].replace(MISFIT, "")
                    divergence = Divergence("changed", what.removeprefix("the replay "))
            if divergence is None:
                return _Step(turns, position, content)
            branch = turn.branch(divergence.kind)
            if branch is None:
                return _Step(turns, position, end=divergence)
            turns, position = branch, 0

    def _fill(self, turn: Turn, history: Sequence[Mapping[str, Any]], call: int
              ) -> dict[str, Any]:
        try:
            return dict(substitute(copy.deepcopy(dict(turn.content)),
                                   ReplayContext.of(history, self.data_dir)))
        except BrainError as exc:
            raise BrainError(f"{self.path.name}, turn {call + 1}: {exc}",
                             transient=False) from exc


def _reply(content: dict[str, Any]) -> ModelReply:
    content = {**content, "role": "model"}
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
