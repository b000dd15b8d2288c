"""Every message Ghost owes a thread, recorded before it is sent and delivered until it arrives.

A post (the model's text, a command line, a notice, an approval card, a Continue / Done prompt)
is first written to the investigation's ``conversation_ref["outbox"]`` under the row lock, keyed
by what it says (a second record of the same message is a no-op), then sent. Whoever holds or
reconciles the investigation sends what is due, oldest first:

- at once, by the process that recorded it;
- by the worker holding the investigation, before and after each advance;
- by the periodic ``reconcile`` (every process schedules it; one runs it), so an investigation
  nobody holds (waiting for an approval) still gets its card.

A send is claimed first (``sending`` with a deadline): two processes never send the same item at
the same time. A transient error (HTTP 5xx, 429 after the client's retries, a dropped
connection) puts the item back with a backoff; the thread's later items wait behind it, so the
thread keeps its order. A definite refusal (``not_in_channel``, ``invalid_blocks``...) is
recorded as ``dead`` with the error and logged; the items after it go on. None of it ever fails
the investigation. A claim whose process died is taken over after its deadline.

Exactly once on Slack: each post carries its outbox key in its message metadata, and an item
whose earlier attempt may have arrived (its claim lapsed: the sender died between Slack's
answer and the ``sent`` record; or it failed with a 5xx or a timeout) is first looked up in
the thread by that key: found, it is recorded as sent with that message, not posted again
(``KeyedPosts``). A port without keys (Teams), or a look-up that fails, posts again: there a
kill between the platform's answer and the record can still show a message twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any, cast

from bot.chat.approval_cards import ApprovalCard, DecisionOutcome
from bot.chat.command_lines import CommandLine
from bot.chat.endings import RcaSummary
from bot.chat.ports import ChatPort, KeyedPosts, Thread
from bot.chat.prompt_wording import Prompt
from bot.chat.status import StatusView
from core.session_state import iso_utc, utc_now

log = logging.getLogger(__name__)

KEY = "outbox"
#: a ``sending`` claim older than this belongs to a process that died (or hung)
CLAIM_S = 120.0
#: seconds before the n-th retry of a transient failure (the last one repeats)
BACKOFF_S = (2.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0)
#: after this many transient failures (about 3 hours) the item is given up as ``dead``
MAX_ATTEMPTS = 40
#: sent items whose keys are kept (a re-run of a step must not post them again)
KEEP_SENT = 300
#: seconds between tries of recording ``sent`` when the database fails right after a post
SETTLE_RETRY_S = (0.5, 2.0)

DUE, SENDING, SENT, DEAD = "due", "sending", "sent", "dead"

#: Slack's ``error`` codes that mean "try again later", not "this message is wrong"
TRANSIENT_ERRORS = frozenset({
    "ratelimited", "rate_limited", "internal_error", "fatal_error", "service_unavailable",
    "request_timeout", "team_added_to_org", "timeout"})

#: ``(investigation, port, payload)`` → sends one item; raises when it did not arrive
Sender = Callable[[Any, ChatPort, Mapping[str, Any]], None]
#: a claimed item: its key, a copy of it, the claim's token
Claim = tuple[str, dict[str, Any], str]


class NothingSent(Exception):  # noqa: N818 - it says what happened, not that it is an error
    """The platform refused or failed before anything reached the thread (safe to retry)."""


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries (slack_sdk, msrest), if any."""
    response = getattr(exc, "response", None)
    for name in ("status_code", "status"):
        value = getattr(response, name, None)
        if isinstance(value, int):
            return value
    return None


def transient(exc: BaseException) -> bool:
    """Whether trying the same post again later may work: 5xx, 429, timeouts, connections.

    Platform-neutral: it reads the HTTP status and Slack's ``error`` from the exception rather
    than importing a chat SDK. An error that names no status (a dropped connection, an HTML
    page instead of JSON from a proxy) counts as transient; a 4xx answer does not.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = http_status(current)
        if status is not None:
            if status >= 500 or status == 429:
                return True
            error = ""
            response = getattr(current, "response", None)
            getter = getattr(response, "get", None)
            if callable(getter):
                error = str(getter("error") or "")
            return error in TRANSIENT_ERRORS
        if type(current).__name__ in ("TeamsRateLimited", "SlackRequestError"):
            return True
        if isinstance(current, (OSError, TimeoutError, json.JSONDecodeError)):
            return True  # connection refused / reset, timeouts, an HTML page for JSON
        current = current.__cause__ or current.__context__
    return False


def backoff(attempts: int) -> float:
    return BACKOFF_S[min(max(attempts, 1), len(BACKOFF_S)) - 1]


def message_key(kind: str, turn: int, payload: Mapping[str, Any]) -> str:
    """The same message for the same turn has the same key: a re-run step posts it once."""
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode())
    return f"{kind}:{turn}:{digest.hexdigest()[:16]}"


class Outbox:
    """Records owed messages and delivers them (any process, any number of times)."""

    def __init__(self, store: Any, port_for: Callable[[str], ChatPort | None], *,
                 clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.port_for = port_for
        self.clock = clock
        #: when set (``ghost serve`` / ``ghost worker``: ``bot.chat.pump``), what is owed is
        #: sent by background threads and the caller never waits on the chat's pace; unset
        #: (tests, one-off commands) it is sent in the caller's thread
        self.pump: Callable[[str], None] | None = None
        self.senders: dict[str, Sender] = {
            "text": lambda inv, port, p: port.post_text(inv, str(p["text"]),
                                                         notice=bool(p.get("notice"))),
            "command": lambda inv, port, p: port.post_command(inv, CommandLine(**p["line"])),
        }

    def register(self, kind: str, sender: Sender) -> None:
        self.senders[kind] = sender

    # ------------------------------------------------------------------ recording
    def owe(self, session_id: str, kind: str, payload: Mapping[str, Any],
            key: str | None = None) -> str:
        """Record a message owed to the thread (once per key); its key."""
        if key is None:
            inv = self.store.get_investigation(session_id)
            key = message_key(kind, int((inv.state or {}).get("turn_count") or 0), payload)
        self.store.change_conversation_ref(session_id, self._adder(kind, payload, key))
        return key

    def _adder(self, kind: str, payload: Mapping[str, Any], key: str
               ) -> Callable[[dict[str, Any]], None]:
        item = {"kind": kind, "payload": dict(payload), "state": DUE, "attempts": 0,
                "at": iso_utc(self.clock())}

        def add(ref: dict[str, Any]) -> None:
            box = ref.setdefault(KEY, {})
            items = box.setdefault("items", {})
            if key in items:
                return
            box["next"] = int(box.get("next") or 0) + 1
            items[key] = {**item, "seq": box["next"]}
        return add

    def send(self, session_id: str, kind: str, payload: Mapping[str, Any],
             key: str | None = None) -> str:
        """Record, then deliver what is due in this thread now; a chat error is never raised
        (it is retried). Recording and claiming the first item due are one transaction (the
        common case: one post, two transactions in all)."""
        inv = self.store.get_investigation(session_id)
        if key is None:
            key = message_key(kind, int((inv.state or {}).get("turn_count") or 0), payload)
        if self.port_for(inv.platform) is None or not inv.channel_ref or not inv.thread_ref:
            return self.owe(session_id, kind, payload, key)  # no thread yet: kept for later
        if self.pump is not None:  # recorded now, sent by a background thread
            self.owe(session_id, kind, payload, key)
            self.pump(session_id)
            return key
        add = self._adder(kind, payload, key)

        def add_and_claim(ref: dict[str, Any]) -> Any:
            add(ref)
            return self._claim(ref)

        # a database error propagates: unrecorded, the message would be lost silently
        first = self.store.change_conversation_ref(session_id, add_and_claim)
        if first is not None:  # else: backing off, or another process sends the first one
            self._deliver(session_id, first)
        return key

    def items(self, session_id: str) -> dict[str, dict[str, Any]]:
        ref = self.store.get_investigation(session_id).conversation_ref or {}
        return dict((ref.get(KEY) or {}).get("items") or {})

    def waiting(self, session_id: str) -> list[dict[str, Any]]:
        """What is owed and not delivered yet, oldest first (``ghost status``, tests)."""
        items = self.items(session_id)
        return sorted(({"key": k, **v} for k, v in items.items() if v["state"] in (DUE, SENDING)),
                      key=lambda v: int(v["seq"]))

    # ------------------------------------------------------------------ delivering
    def deliver(self, session_id: str, limit: int = 50) -> int:
        """Send what is due in one thread, in order; how many arrived (0 when handed to the
        background pump). Never raises."""
        if self.pump is not None:
            self.pump(session_id)
            return 0
        return self._deliver(session_id, None, limit)

    def deliver_now(self, session_id: str, limit: int = 50) -> int:
        """:meth:`deliver` in this thread (what the pump runs)."""
        return self._deliver(session_id, None, limit)

    def _deliver(self, session_id: str, claimed: Claim | None, limit: int = 50) -> int:
        """``claimed``: the first item, when the caller claimed it already."""
        sent = 0
        try:
            inv = self.store.get_investigation(session_id)
            port = self.port_for(inv.platform)
            if port is None or not inv.channel_ref or not inv.thread_ref:
                return 0  # no thread yet: the root message comes first (open_thread)
            for _ in range(limit):
                if claimed is None:
                    claimed = self.store.change_conversation_ref(session_id, self._claim)
                if claimed is None:
                    break
                state, more = self._send_one(session_id, port, *claimed)
                claimed = None
                if state == SENT:
                    sent += 1
                elif state == DUE:
                    break  # transient: the rest waits behind it, keeping the thread's order
                if not more:
                    break
        except Exception:  # noqa: BLE001 - delivery is retried; it never stops the caller
            log.exception("could not deliver the messages owed to %s", session_id)
        return sent

    def _claim(self, ref: dict[str, Any]) -> Claim | None:
        items = ((ref.get(KEY) or {}).get("items") or {})
        open_ = sorted(((k, v) for k, v in items.items() if v.get("state") in (DUE, SENDING)),
                       key=lambda kv: int(kv[1].get("seq") or 0))
        if not open_:
            return None
        key, item = open_[0]
        now = iso_utc(self.clock())
        if item["state"] == DUE and str(item.get("not_before") or "") > now:
            return None
        if item["state"] == SENDING and str(item.get("until") or "") > now:
            return None  # another process is sending it right now
        if item["state"] == SENDING:
            item["unsure"] = True  # its sender died (or hung) after it may have posted it
        token = uuid.uuid4().hex
        item.update(state=SENDING, token=token, attempts=int(item.get("attempts") or 0) + 1,
                    until=iso_utc(self.clock() + timedelta(seconds=CLAIM_S)))
        return key, dict(item), token

    def _send_one(self, session_id: str, port: ChatPort, key: str, item: dict[str, Any],
                  token: str) -> tuple[str, bool]:
        """Send one claimed item and record how it went; its new state, and whether more
        items are open in the thread."""
        sender = self.senders.get(str(item["kind"]))
        error: BaseException | None = None
        if sender is None:
            error = LookupError(f"no sender for {item['kind']!r} messages")
        else:
            try:
                sender(self.store.get_investigation(session_id),
                       keyed_port(port, key, bool(item.get("unsure"))), item["payload"])
            except Exception as exc:  # noqa: BLE001 - classified below
                error = exc
        attempts = int(item["attempts"])
        if error is None:
            state = SENT
        elif transient(error) and attempts < MAX_ATTEMPTS:
            state = DUE
            wait = backoff(attempts)
            log.warning("could not post a %s message into the thread of %s (%s: %s); "
                        "trying again in %.0fs (attempt %d)", item["kind"], session_id,
                        type(error).__name__, error, wait, attempts)
        else:
            state = DEAD
            log.error("gave up posting a %s message into the thread of %s after %d "
                      "attempt(s): %s: %s", item["kind"], session_id, attempts,
                      type(error).__name__, error)
        at = self.clock()

        def settle(ref: dict[str, Any]) -> bool:
            box = ref.setdefault(KEY, {})
            items = box.setdefault("items", {})
            current = items.get(key)
            if current is None:
                pass
            elif state == SENT:  # the payload is not needed any more; the key stays
                items[key] = {"kind": current["kind"], "seq": current["seq"], "state": SENT,
                              "attempts": attempts, "at": iso_utc(at)}
                _trim(items)
            elif current.get("token") == token:  # else taken over; the new holder settles
                current.update(state=state, error=f"{type(error).__name__}: {error}"[:300])
                if state == DUE and error is not None and not nothing_sent(error):
                    current["unsure"] = True  # a 5xx or a timeout: it may be in the thread
                current.pop("until", None)
                if state == DUE:
                    current["not_before"] = iso_utc(at + timedelta(seconds=backoff(attempts)))
            return any(v.get("state") in (DUE, SENDING) for v in items.values())

        return state, bool(self._settle(session_id, settle, state))

    def _settle(self, session_id: str, settle: Callable[[dict[str, Any]], bool],
                state: str) -> bool:
        """Record how the send went, right after the platform's answer. A database error
        when recording ``sent`` is tried again at once (a duplicate post is what it would
        cost); it still propagates after that (the claim lapses, the look-up finds it)."""
        for wait in (*SETTLE_RETRY_S, None):
            try:
                return bool(self.store.change_conversation_ref(session_id, settle))
            except Exception:
                if state != SENT or wait is None:
                    raise
                log.warning("could not record a message of %s as sent; trying again in "
                            "%.1fs", session_id, wait, exc_info=True)
                time.sleep(wait)
        raise AssertionError("unreachable")

    def port(self, port: ChatPort) -> ChatPort:
        """``port`` with its new posts recorded and delivered through this outbox."""
        return OwedPort(self, port)


def nothing_sent(exc: BaseException) -> bool:
    """Whether the failed post certainly did not reach the thread (a 429, a refusal before
    the post): then a retry need not look for it first."""
    if isinstance(exc, NothingSent) or http_status(exc) == 429:
        return True
    getter = getattr(getattr(exc, "response", None), "get", None)
    return callable(getter) and str(getter("error") or "") in ("ratelimited", "rate_limited")


def keyed_port(port: ChatPort, key: str, check: bool) -> ChatPort:
    """``port`` with its posts carrying the outbox key (and, with ``check``, looking for it
    first) when the platform can (``KeyedPosts``); else ``port`` as it is."""
    keyed = getattr(port, "keyed", None)
    if not callable(keyed):
        return port
    return cast(KeyedPosts, port).keyed(key, check=check)


def owes(inv: Any) -> bool:
    """Whether the investigation's thread is owed a post that was not delivered yet."""
    items = (((inv.conversation_ref or {}).get(KEY) or {}).get("items") or {})
    return any(v.get("state") in (DUE, SENDING) for v in items.values())


def _trim(items: dict[str, Any]) -> None:
    sent = sorted((k for k, v in items.items() if v.get("state") in (SENT, DEAD)),
                  key=lambda k: int(items[k].get("seq") or 0))
    for key in sent[:-KEEP_SENT]:
        del items[key]


class OwedPort:
    """A ``ChatPort`` whose new posts into a thread go through the outbox (recorded, then sent,
    retried); an approved card closed from here is best-effort (a stale button is refused
    on click). Everything else is the platform's port as it is."""

    def __init__(self, outbox: Outbox, port: ChatPort) -> None:
        self.outbox = outbox
        self.inner = port

    def post_root(self, channel: str, view: StatusView) -> str:
        return self.inner.post_root(channel, view)

    def update_status(self, thread: Thread, view: StatusView) -> None:
        self.inner.update_status(thread, view)  # the caller decides (refresh_status logs)

    def post_text(self, thread: Thread, text: str, *, notice: bool = False) -> None:
        self.outbox.send(thread.session_id, "text", {"text": text, "notice": notice})

    def post_command(self, thread: Thread, line: CommandLine) -> None:
        self.outbox.send(thread.session_id, "command", {"line": asdict(line)})

    def post_card(self, thread: Thread, card: ApprovalCard) -> dict[str, Any]:
        return self.inner.post_card(thread, card)

    def close_card(self, ref: Mapping[str, Any], card: ApprovalCard,
                   outcome: DecisionOutcome) -> None:
        try:
            self.inner.close_card(ref, card, outcome)
        except Exception as exc:  # noqa: BLE001 - a stale button is refused on click
            log.warning("could not close the approval card at %s: %s: %s", dict(ref),
                        type(exc).__name__, exc)

    def post_prompt(self, thread: Thread, prompt: Prompt) -> dict[str, Any] | None:
        return self.inner.post_prompt(thread, prompt)

    def close_prompt(self, ref: Mapping[str, Any], prompt: Prompt, by: str | None,
                     choice: str) -> None:
        self.inner.close_prompt(ref, prompt, by, choice)

    def post_rca(self, thread: Thread, filename: str, markdown: str, summary: RcaSummary,
                 *, noted: Callable[[str], None] | None = None) -> str | None:
        return self.inner.post_rca(thread, filename, markdown, summary, noted=noted)

    def tell(self, channel: str, user: str, text: str, thread_ref: str | None = None) -> None:
        self.inner.tell(channel, user, text, thread_ref)
