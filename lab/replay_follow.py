"""Did a replay's earlier call happen as scripted? Read from the history alone.

Each dependency (``lab.replay_format.Expect``) is checked against the function responses the
engine put in the history: a ``run_shell_cmd`` response rebuilt from its audit record (status,
action, exit code, output, and the command that really ran after an edit), and the
orchestrator's task answers (state, report paths, cleanup status, ``denied``). The answer is
None when it did, or a :class:`Divergence` that says what happened instead, in words an
engineer reads in the model's last message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lab.replay_format import Expect

#: a shell response for a command that did not run because someone (or the gate) said no
_REFUSED_ERRORS = ("user_denied", "user_abandoned", "approval_expired", "forbidden_command")
_FAILED_TASK = ("FAILED", "TIMED_OUT", "CANCELLED", "ABANDONED")
#: a task that ended without a capture (cleaned up to DONE afterwards, so the state says DONE)
_FAILED_STATUS = ("task_failed", "task_timed_out", "task_cancelled")


@dataclass(frozen=True)
class Divergence:
    """What ran differs from the script: ``kind`` picks the branch, ``what`` says why."""

    kind: str  # "denied" | "changed"
    what: str  # "the engineer denied `az vm run-command invoke …` (reason: not now)"
    audit_id: str | None = None
    task_id: str | None = None


def responses(history: Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """Every function response in the history, in order: (tool name, response body)."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    for turn in history:
        for part in turn.get("parts") or []:
            response = part.get("functionResponse") if isinstance(part, Mapping) else None
            if not isinstance(response, Mapping):
                continue
            body = response.get("response")
            found.append((str(response.get("name") or ""),
                          body if isinstance(body, Mapping) else {}))
    return found


def shell_results(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [body for name, body in responses(history) if name == "run_shell_cmd"]


def task_answers(history: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """task id -> every orchestrator answer about it, in order (a pair's partner included)."""
    answers: dict[str, list[Mapping[str, Any]]] = {}
    for name, body in responses(history):
        if name not in ("capture_traffic", "check_task", "cancel_task", "cleanup_task"):
            continue
        tasks = body.get("tasks")
        for task in (body, *(tasks if isinstance(tasks, list) else [])):
            if isinstance(task, Mapping) and task.get("task_id"):
                answers.setdefault(str(task["task_id"]), []).append(task)
    return answers


def short(command: object, width: int = 300) -> str:
    text = " ".join(str(command or "").split())
    return f"`{text if len(text) <= width else text[: width - 1] + '…'}`"


def check(expects: Sequence[Expect], history: Sequence[Mapping[str, Any]],
          scripted: Sequence[str], task_ids: Sequence[str]) -> Divergence | None:
    """The first dependency that did not happen as scripted, or None.

    ``scripted``: the commands of the replay's own ``run_shell_cmd`` calls so far, in order
    (what the replay asked for); ``task_ids``: this investigation's capture tasks, in order.
    """
    results = shell_results(history)
    answers = task_answers(history)
    for expect in expects:
        if expect.kind == "audit":
            found = _check_shell(expect, results, scripted)
        else:
            found = _check_task(expect, answers, task_ids)
        if found is not None:
            return found
    return None


def _check_shell(expect: Expect, results: Sequence[Mapping[str, Any]],
                 scripted: Sequence[str]) -> Divergence | None:
    n = len(results) - 1 if expect.index is None else expect.index
    if n < 0 or n >= len(results):
        return Divergence("changed", f"the replay reads run_shell_cmd result {expect.label} "
                          f"but this investigation has {len(results)}")
    body = results[n]
    asked = scripted[n] if n < len(scripted) else body.get("command")
    audit_id = str(body.get("audit_id") or body.get("_audit_ref") or "") or None
    status, error = body.get("status"), body.get("error")
    if status == "denied" or error in _REFUSED_ERRORS:
        reason = body.get("denial_reason")
        if error == "forbidden_command":
            what = f"the safety gate refused {short(asked)}"
        elif error == "approval_expired":
            what = f"nobody decided on {short(asked)} before the approval expired"
        else:
            what = f"the engineer denied {short(asked)}"
        if reason and error != "approval_expired":
            what += f" (reason: {' '.join(str(reason).split())[:200]})"
        return Divergence("denied", what, audit_id)
    if body.get("action") == "user_modified":
        ran = body.get("command")
        return Divergence("changed", f"the engineer edited {short(asked)} and ran "
                          f"{short(ran)} instead", audit_id)
    if status != "completed":
        return Divergence("changed", f"{short(asked)} did not finish ({error or status})",
                          audit_id)
    code = body.get("exit_code")
    if expect.exit_code is not None and code != expect.exit_code:
        return Divergence("changed", f"{short(asked)} exited with {code}, where the script "
                          f"expected {expect.exit_code}", audit_id)
    output = str(body.get("output") or "").lower()
    missing = [h for h in expect.output_has if h.lower() not in output]
    if missing:
        return Divergence("changed", f"{short(asked)} answered without {missing[0]!r}, which "
                          "the script reads next", audit_id)
    return None


def _check_task(expect: Expect, answers: Mapping[str, list[Mapping[str, Any]]],
                task_ids: Sequence[str]) -> Divergence | None:
    n = expect.index or 0
    if n >= len(task_ids):
        return Divergence("changed", f"the replay follows capture task {expect.label} but "
                          f"this investigation created {len(task_ids)}")
    task_id = task_ids[n]
    seen = answers.get(task_id) or []
    latest = seen[-1] if seen else {}
    denied = next((a for a in seen if a.get("denied")), None)
    state = str(latest.get("state") or "")
    result = latest.get("result")
    analysed = isinstance(result, Mapping) and bool(
        result.get("report_path") or result.get("executive_summary_path"))
    label = f"capture {task_id}"
    if expect.cleaned:
        if latest.get("cleanup_status") in ("completed", "skipped"):
            return None
        return _task_divergence(label, "was not cleaned up", latest, denied, task_id)
    if expect.analysed:
        if analysed:
            return None
        return _task_divergence(label, "has no forensic report", latest, denied, task_id)
    if (state in _FAILED_TASK or latest.get("status") in _FAILED_STATUS) and not analysed:
        return _task_divergence(label, "did not run", latest, denied, task_id)
    return None


def _task_divergence(label: str, effect: str, latest: Mapping[str, Any],
                     denied: Mapping[str, Any] | None, task_id: str) -> Divergence:
    if denied is not None:
        reason = denied.get("denial_reason")
        what = f"the engineer denied {short(denied.get('denied_command'))}"
        if reason:
            what += f" (reason: {' '.join(str(reason).split())[:200]})"
        return Divergence("denied", f"{what}, so {label} {effect}",
                          str(denied.get("audit_id") or "") or None, task_id)
    detail = latest.get("error_detail") or latest.get("message") or latest.get("state")
    return Divergence("changed", f"{label} {effect} ({' '.join(str(detail).split())[:200]})",
                      task_id=task_id)
