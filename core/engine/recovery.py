"""Taking over a half-finished turn, and the check that no broken conversation reaches Gemini.

A model turn's function calls are dispatched one at a time, each behind a durable mark
(``pending["in_flight"]``: the call's index and how long the audit log and the task log were
before it started). A process that takes an investigation over finds that mark and learns from
the logs what became of the call, so that every call gets exactly one response:

- no record of it: it never started, and runs now (SAFE) or is asked for approval (RISKY);
- an approval request for it: that request is waited on (or its decision carried out); a request
  the dead process stored without the rest (or whose only record is the engineer's decision) is
  found by the shell by its command and adopted, never asked a second time;
- a started command with no outcome: ``recover_interrupted`` closed it as ``interrupted`` (its
  outcome is unknown and it is not run again), and that record is the response;
- an outcome: that is the response (the command is not run again);
- a capture whose task was created: the task is checked instead of a second capture started;
  that task is also found without the mark (:func:`unanswered_task`): an active task of this
  investigation for the same target that no stored response mentions.

Gemini rejects a conversation in which a function call has no response; :func:`check_history`
is run on the stored turns before every model call, so such a conversation is never sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.engine.ports import EngineStore, Orchestrator, Shell
from core.errors import GhostError
from core.safety.redact import redact
from core.safety.responses import response_from_record


class BrokenHistory(GhostError):
    """A stored model turn has a function call without exactly one response after it."""


def _calls(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p["functionCall"] for p in content.get("parts") or []
            if isinstance(p, Mapping) and isinstance(p.get("functionCall"), Mapping)]


def _responses(content: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p["functionResponse"] for p in content.get("parts") or []
            if isinstance(p, Mapping) and isinstance(p.get("functionResponse"), Mapping)]


def history_problem(turns: Sequence[Mapping[str, Any]]) -> str | None:
    """What is wrong with the stored conversation as Gemini would see it, or None.

    Every model turn with function calls must be followed by one user turn holding exactly one
    response per call, in order and with the same names (and ids, when the calls have ids).
    """
    for i, turn in enumerate(turns):
        content = turn.get("content") or {}
        calls = _calls(content)
        if not calls:
            continue
        names = ", ".join(str(c.get("name")) for c in calls)
        if i + 1 >= len(turns):
            return f"turn {i + 1} ({names}) has no responses yet"
        nxt = turns[i + 1].get("content") or {}
        answers = _responses(nxt)
        if nxt.get("role") != "user" or len(answers) != len(calls):
            return (f"turn {i + 1} has {len(calls)} function call(s) ({names}) but the next "
                    f"turn holds {len(answers)} response(s)")
        for call, answer in zip(calls, answers, strict=True):
            if call.get("name") != answer.get("name") or \
                    (call.get("id") and call.get("id") != answer.get("id")):
                return (f"turn {i + 1}: the call {call.get('name')} is answered by a response "
                        f"to {answer.get('name')}")
    return None


def check_history(session_id: str, turns: Sequence[Mapping[str, Any]]) -> None:
    """Raise :class:`BrokenHistory` rather than send Gemini a conversation it rejects."""
    problem = history_problem(turns)
    if problem:
        raise BrokenHistory(
            f"Investigation {session_id}: its stored conversation is broken ({problem}); "
            "Ghost will not send it to Gemini.",
            f"Nothing was run for it. Start a new investigation (`ghost investigate --resume "
            f"{session_id}` offers Fresh), and report this as a bug.")


def recover_in_flight(store: EngineStore, sid: str, shell: Shell,
                      orchestrator_for: Callable[[], Orchestrator],
                      pending: Mapping[str, Any]) -> dict[str, Any] | None:
    """What became of the call that was marked in flight when the last holder stopped.

    Returns its response from the logs, or the ``pending_approval`` answer of a request that is
    still waiting; None when the call never got as far as leaving a record (it may run now).
    """
    in_flight = pending["in_flight"]
    call = pending["calls"][in_flight["index"]]
    if call["name"] == "capture_traffic":
        return _recover_capture(store, sid, orchestrator_for, in_flight)
    if call["name"] != "run_shell_cmd":
        return None
    since = int(in_flight["audit_count"])
    # records of this call only: another writer (an orphan cleanup) may share the log
    command = redact(str((call.get("args") or {}).get("command") or ""))
    newer = [r for r in store.audit_records(sid)[since:] if r.get("command") == command]
    outcomes = [r for r in newer if r.get("kind") == "command"]
    if outcomes:
        return response_from_record(outcomes[-1])
    # any record of its request: `requested`, or only the engineer's decision when an older
    # process stored the request without its record (issue #23, F1)
    asked = [r for r in newer if r.get("kind") == "approval"
             and (r.get("details") or {}).get("approval_id")]
    if asked:
        return shell.resume(str((asked[-1].get("details") or {}).get("approval_id")))
    return None  # never asked, or asked with no record: the shell adopts such a request


def _recover_capture(store: EngineStore, sid: str, orchestrator_for: Callable[[], Orchestrator],
                     in_flight: Mapping[str, Any]) -> dict[str, Any] | None:
    """A capture whose task was created before Ghost stopped (say, Ctrl-C at its approval).

    Its task is checked (which continues the step that was waiting) instead of a second
    capture being started; None when the call never got as far as creating a task.
    """
    since = in_flight.get("task_count")
    if since is None:
        return None
    created: list[str] = []
    for record in store.task_events(sid)[int(since):]:
        task_id = str(record.get("task_id") or "")
        if task_id and task_id not in created:
            created.append(task_id)
    if not created:
        return None
    return orchestrator_for().orchestrate({"intent": "check_task", "task_id": created[0]})


#: task states in which a capture still has work to do (core.orchestrator.model.ACTIVE)
_ACTIVE_TASK_STATES = frozenset({"CREATED", "DETECTING", "APPROVED", "PROVISIONING", "WAITING",
                                 "DOWNLOADING", "ANALYZING"})


def unanswered_task(store: EngineStore, sid: str, target: object) -> str | None:
    """The task a dead process created for a ``capture_traffic`` call it never answered.

    An active task of this investigation, for (one of) the call's targets, that no stored
    function response names: the model never learned of it, so a capture call for that target
    is that same call again (issue #23, F1 b). It is continued, never a second task created.
    """
    # one target, or two for a dual-end capture ("vm-a to vm-b"; the orchestrator's syntax)
    targets = {t.strip() for t in str(target or "").split(" to ") if t.strip()}
    if not targets:
        return None
    latest: dict[str, Mapping[str, Any]] = {}
    for record in store.task_events(sid):
        task_id = str(record.get("task_id") or "")
        if task_id:
            latest[task_id] = record
    told: set[str] = set()
    for turn in store.turns(sid):
        _task_ids(_responses(turn.get("content") or {}), told)
    for task_id, task in latest.items():
        if task.get("state") in _ACTIVE_TASK_STATES and task.get("target") in targets \
                and task.get("pair_role") != "destination" and task_id not in told:
            return task_id
    return None


def _task_ids(value: object, into: set[str]) -> None:
    """Every ``task_id`` named anywhere in a response (tasks, paired tasks, lists)."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if key == "task_id" and isinstance(item, str):
                into.add(item)
            else:
                _task_ids(item, into)
    elif isinstance(value, list):
        for item in value:
            _task_ids(item, into)


def waited_on(store: EngineStore, sid: str) -> frozenset[str]:
    """Approval ids a capture task's step still waits on (its newest record says so)."""
    latest: dict[str, Mapping[str, Any]] = {}
    for record in store.task_events(sid):
        latest[str(record.get("task_id") or "")] = record
    return frozenset(str(step["approval_id"]) for task in latest.values()
                     if isinstance(step := task.get("pending_step"), Mapping)
                     and step.get("approval_id"))


def close_dangling(store: EngineStore, shell: Shell, sid: str) -> None:
    """The investigation is over: a request still pending or approved will never run (a dead
    process's, say); it is closed with a reason and an audit record, never left hanging. A
    capture task's step still waiting on its request keeps it (a cleanup, say)."""
    close = getattr(shell, "close_dangling", None)  # the Safe-Exec Shell's; fakes have none
    if callable(close):
        close("The investigation ended before this request was carried out; it will not run.",
              keep=waited_on(store, sid))
