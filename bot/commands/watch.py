"""`ghost watch SID [--jsonl] [--until-waiting] [--timeout S]`: follow an investigation.

Exit 0 when it completed, 1 when it failed, was cancelled or (``--until-waiting``) waits for a
person, 6 when ``--timeout`` ran out; the investigation itself is never touched.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bot.contract.codes import Code, ContractError, ErrorInfo, Exit
from bot.contract.envelope import envelope
from bot.contract.events import Cursor, collect, end_event, waiting_event
from bot.contract.output import dumps
from bot.contract.views import FINISHED
from bot.state import state_of

#: what a person must give for it to go on (``bot.state``): ``--until-waiting`` ends there
PERSON = ("approval", "instruction", "turn_limit_decision", "resume")


class _Out:
    """Writes events as JSON lines (``--jsonl``) or one readable line each."""

    def __init__(self, sid: str, jsonl: bool, limit: int | None) -> None:
        self.sid, self.jsonl, self.limit, self.count = sid, jsonl, limit, 0

    @property
    def full(self) -> bool:
        return self.limit is not None and self.count >= self.limit

    def write(self, event: dict[str, Any]) -> None:
        if self.full:
            return
        self.count += 1
        if self.jsonl:
            sys.stdout.write(dumps(envelope(event, session_id=self.sid)) + "\n")
        else:  # one line for a person: time, kind, a sentence (bot/terminal/events.py)
            from bot.terminal.events import event_line, indent
            from bot.terminal.style import wrapped

            sys.stdout.write("\n".join(wrapped(event_line(event), sys.stdout,
                                                indent=indent())) + "\n")
        sys.stdout.flush()


def watch(args: argparse.Namespace) -> int:
    from bot.bootstrap import build_store

    if args.interval <= 0 or (args.timeout is not None and args.timeout <= 0):
        raise ContractError(Code.INVALID_ARGUMENT, "--interval and --timeout must be positive "
                            "numbers of seconds.")
    store = build_store(read_only=True)
    sid = store.get_investigation(args.session_id).session_id
    out = _Out(sid, args.jsonl, args.limit)
    cursor = Cursor()
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    while True:
        inv = store.get_investigation(sid)
        events = collect(store, inv, cursor)
        if not args.jsonl:  # for a person, in the order things happened
            from bot.terminal.events import in_time_order

            events = in_time_order(events)
        for event in events:
            out.write(event)
        if out.full:
            return int(Exit.OK)
        if inv.status in FINISHED:
            out.write(end_event(inv))
            return int(Exit.OK if inv.status == "completed" else Exit.ATTENTION)
        now = datetime.now(UTC)
        state = state_of(inv, now=now)
        if args.until_waiting and state.waiting_for in PERSON and not state.worker_active:
            out.write(waiting_event(inv, store.approvals(sid, statuses=("pending",)), now))
            return int(Exit.ATTENTION)
        if deadline is not None and time.monotonic() >= deadline:
            info = ErrorInfo(Code.TIMEOUT, f"Stopped watching after {args.timeout:g} s; the "
                             f"investigation is {inv.status}.", True,
                             f"Watch again with `ghost watch {sid} --jsonl`.")
            if args.jsonl:
                out.write({"event": "error", "error": info.as_dict()})
            else:
                print(f"ghost: {info.message} {info.recovery_action}", file=sys.stderr)
            return info.exit_code
        time.sleep(args.interval)
