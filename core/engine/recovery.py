"""Taking over a half-finished turn, and the check that no broken conversation reaches Gemini.

A model turn's function calls are dispatched one at a time, each behind a durable mark
(``pending["in_flight"]``: the call's index and how long the audit log and the task log were
before it started). A process that takes an investigation over finds that mark and learns from
the logs what became of the call, so that every call gets exactly one response:

- no record of it: it never started, and runs now (SAFE) or is asked for approval (RISKY);
- an approval request for it: that request is waited on (or its decision carried out);
- a started command with no outcome: ``recover_interrupted`` closed it as ``interrupted`` (its
  outcome is unknown and it is not run again), and that record is the response;
- an outcome: that is the response (the command is not run again);
- a capture whose task was created: the task is checked instead of a second capture started.

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
    requested = [r for r in newer if r.get("kind") == "approval"
                 and r.get("status") == "requested"]
    if requested:
        approval_id = str((requested[-1].get("details") or {}).get("approval_id"))
        return shell.resume(approval_id)
    return None


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
