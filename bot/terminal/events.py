"""`ghost watch SID` for a person: one line per event — the time, the kind, one sentence.

The same events as ``--jsonl`` (bot/contract/events.py), said in words: what the model said or
asked for, which command ran and how it ended, who must decide what, and how it finished. On a
terminal a long line wraps at spaces under its sentence (never inside a command, an id or a
path); on a pipe each event stays one line, so ``grep`` and ``tail`` work on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

#: the kinds as shown, padded to one width so the sentences line up (a user turn shows as
#: ``results`` — tool results going back to the model — or ``engineer``)
KINDS = {"state": "state", "turn": "model", "command": "command", "approval": "approval",
         "task": "capture", "end": "end", "waiting": "waiting", "error": "error"}
KIND_WIDTH = max(len(k) for k in (*KINDS.values(), "results", "engineer"))
#: the most of a model's words one line shows (the whole turn is in `--jsonl` / the RCA)
TEXT_CHARS = 240


def event_line(event: Mapping[str, Any], now: datetime | None = None) -> str:
    """``HH:MM:SS  kind      sentence`` (UTC) for one watch event."""
    kind = str(event.get("event") or "?")
    sentence = _SAY.get(kind, _other)(event)
    return f"{_clock(event, now)}  {_kind(event):<{KIND_WIDTH}}  {sentence}"


def _kind(event: Mapping[str, Any]) -> str:
    kind = str(event.get("event") or "?")
    if kind == "turn" and event.get("role") == "user":  # not the model: what it was given
        return "results" if event.get("function_responses") else "engineer"
    return KINDS.get(kind, kind)


def in_time_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One poll's events in the order they happened (the JSON stream groups them by kind);
    an event without a time keeps the place of the one before it."""
    keyed = []
    last = ""
    for position, event in enumerate(events):
        stamp = event.get("at") or event.get("requested_at")
        last = stamp if isinstance(stamp, str) and stamp else last
        keyed.append((_utc(last), position, event))
    return [event for _stamp, _pos, event in sorted(keyed, key=lambda k: (k[0], k[1]))]


def _utc(stamp: str) -> str:
    """A sortable UTC form of a stored time (``…Z`` or with an offset); "" when unknown."""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return ""
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC) \
        .strftime("%Y-%m-%dT%H:%M:%S.%f")


def indent() -> str:
    """The continuation indent of a wrapped line: under the sentence."""
    return " " * (8 + 2 + KIND_WIDTH + 2)


def _clock(event: Mapping[str, Any], now: datetime | None) -> str:
    stamp = event.get("at") or event.get("requested_at")
    if isinstance(stamp, str):
        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)) \
                .astimezone(UTC).strftime("%H:%M:%S")
        except ValueError:
            pass
    return (now or datetime.now(UTC)).strftime("%H:%M:%S")


def _words(text: object, limit: int = TEXT_CHARS) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _state(e: Mapping[str, Any]) -> str:
    waiting = {"approval": "waiting for an approval",
               "instruction": "waiting for an instruction (Continue or Done)",
               "turn_limit_decision": "at the turn limit, waiting for a decision"}
    phase = f", phase {e['phase']}" if e.get("phase") else ""
    tail = f"; {waiting.get(str(e.get('waiting_for')), e.get('waiting_for'))}" \
        if e.get("waiting_for") else ""
    return f"now {e.get('state')} (turn {e.get('turn', 0)}{phase}){tail}."


def _call(call: Mapping[str, Any]) -> str:
    args = call.get("args") or {}
    if call.get("name") == "run_shell_cmd" and isinstance(args, Mapping) and \
            args.get("command"):
        return f"to run `{args['command']}`"
    return f"for {call.get('name')}"


def _turn(e: Mapping[str, Any]) -> str:
    calls = list(e.get("function_calls") or [])
    if e.get("role") == "user":
        answered = list(e.get("function_responses") or [])
        if answered:
            return f"{len(answered)} result(s) went back to the model " \
                   f"({', '.join(sorted(set(map(str, answered))))})."
        return _words(e.get("text")) if e.get("text") else "a turn for the model (no text)."
    said = f"Ghost: {_words(e.get('text'))}" if e.get("text") else "Ghost"
    if calls:
        asks = "; ".join(_call(c) for c in calls)
        return f"{said} — asks {asks}." if e.get("text") else f"Ghost asks {asks}."
    return said


def _seconds(ms: object) -> str:
    return f" in {int(ms) / 1000:.1f} s" if isinstance(ms, int | float) else ""


def _command(e: Mapping[str, Any]) -> str:
    verdict = e.get("classification") or "?"
    action = {"auto_approved": "ran (auto-approved)", "user_approved": "ran, approved",
              "user_modified": "ran as modified", "denied": "was denied",
              "user_denied": "was denied", "blocked": "was blocked"}.get(
        str(e.get("action")), str(e.get("action") or e.get("status")))
    who = f" by {e['actor']}" if e.get("actor") and e.get("action") in (
        "user_approved", "user_modified", "denied", "user_denied") else ""
    # errors that only repeat how a decision ended: said in words instead of the code
    undecided = {"approval_expired": "the approval expired",
                 "user_abandoned": "the approval was abandoned"}
    if e.get("error") in undecided:
        return (f"{verdict} `{e.get('command')}` did not run: {undecided[str(e['error'])]} "
                f"[{e.get('audit_id')}].")
    if e.get("error") == "user_denied":
        ended = f" (\"{e['denial_reason']}\")" if e.get("denial_reason") else ""
    elif e.get("error"):
        ended = f": {e['error']}"
    elif e.get("exit_code") is not None:
        ended = f", exit {e['exit_code']}{_seconds(e.get('duration_ms'))}"
    else:
        ended = ""
    return f"{verdict} `{e.get('command')}` {action}{who}{ended} [{e.get('audit_id')}]."


def _approval(e: Mapping[str, Any]) -> str:
    status, ident = e.get("status"), e.get("approval_id")
    if status == "closed" and e.get("closed_from"):  # closed once its audit record exists
        status = e["closed_from"]
    command = f"`{e.get('command')}`"
    if status == "pending":
        until = f" until {_clock({'at': e['expires_at']}, None)} UTC" \
            if e.get("expires_at") else ""
        return f"{e.get('classification')} {command} waits for a decision{until}: " \
               f"{e.get('decide_command')}"
    if status == "denied":
        why = f" (\"{e['denial_reason']}\")" if e.get("denial_reason") else ""
        return f"{command} denied by {e.get('decided_by') or 'someone'}{why} [{ident}]."
    if status == "expired":
        return f"{command} expired without a decision; it did not run [{ident}]."
    by = f" by {e['decided_by']}" if e.get("decided_by") else ""
    return f"{command} {status}{by} [{ident}]."


def _task(e: Mapping[str, Any]) -> str:
    target = f" on {e['target']}" if e.get("target") else ""
    outcome = f" ({e['outcome']})" if e.get("outcome") else ""
    return f"{e.get('intent') or 'task'} {e.get('task_id')}{target}: {e.get('state')}{outcome}."


def _end(e: Mapping[str, Any]) -> str:
    rca = f" RCA: {e['rca_path']}" if e.get("rca_path") else \
        (" The RCA is stored (ghost status SID --json --fields rca)."
         if e.get("rca_available") else "")
    return f"the investigation is {e.get('state')} after {e.get('turn', 0)} turn(s).{rca}"


def _waiting(e: Mapping[str, Any]) -> str:
    what = {"approval": "an approval", "instruction": "an instruction",
            "turn_limit_decision": "a decision at the turn limit"}
    need = what.get(str(e.get("waiting_for")), "a person")
    go_on = f": {e['resume_command']}" if e.get("resume_command") else "."
    return f"it waits for {need}{go_on}"


def _error(e: Mapping[str, Any]) -> str:
    error = e.get("error") or {}
    if isinstance(error, Mapping):
        return " ".join(str(x) for x in (error.get("message"), error.get("recovery_action"))
                        if x)
    return str(error)


def _other(e: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in e.items() if k != "event" and v not in
                     (None, [], ""))


_SAY = {"state": _state, "turn": _turn, "command": _command, "approval": _approval,
        "task": _task, "end": _end, "waiting": _waiting, "error": _error}
