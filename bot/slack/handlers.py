"""Thin bolt listeners: ack at once, then hand over to the chat layer.

Every listener acknowledges before doing anything slow (Slack wants an answer within 3 s), and
opens a modal right after the ack (a ``trigger_id`` is valid for 3 s, once). Failures are left to
the app's one error handler (``bot/slack/app.py``).

What must survive a crash is written before the ack: a ``/ghost investigate``'s record (one
INSERT; the root message goes out right after the ack, ``ChatRuntime.opened``, or from the
worker that claims it, ``ChatRuntime.open_thread``); every button and modal that changes
something — Approve, Deny, Modify, Continue, Done, Extend, Generate RCA, Resume, the orphan
report's Clean up / Skip / Review each and a row's Clean up — and ``/ghost cancel`` and
``/ghost resume``: one entry in the investigation's ``inbox``; and an ``@ghost`` in a thread
(an ``inbox`` entry, in the same transaction as the event's dedup key). After the ack the
listener applies the entry (``apply``) and only then removes it; a process that died in
between leaves it to the ``reconcile`` job, which applies it once more. Applying is
idempotent: a decision finds the first decision; a prompt's answer carries the entry's key,
so a second application finishes what the first began and does nothing twice (exactly once,
``tests/slack/test_acked_then_crashed.py``). Requests in flight are counted
(``ChatRuntime.in_flight``) so that a shutdown answers them before the process exits.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bot.chat.approval_cards import outcome_of
from bot.chat.decisions import Decider, DecisionRequest
from bot.chat.help_text import HELP
from bot.chat.prompts import CONTINUED, MENTIONED, split_value
from bot.chat.runtime import ChatRuntime, NotWaiting
from bot.chat.status import list_lines, status_line, status_view
from bot.chat.steering import why_not_steer
from bot.slack import blocks
from bot.slack.failures import SLACK_HINTS
from bot.slack.port import SlackPort
from core.errors import GhostError, UnknownInvestigation
from core.session_state import iso_utc, utc_now
from storage.db import acking, transient_cause

log = logging.getLogger(__name__)
PLATFORM = "slack"
MENTION = re.compile(r"<@[A-Z0-9]+>")
#: An @ghost instruction is queued while the investigation is in one of these.
QUEUEABLE = ("queued", "running", "awaiting_approval", "awaiting_user")


class Handlers:
    """The listeners, holding the services they hand work to."""

    def __init__(self, runtime: ChatRuntime, decider: Decider, port: SlackPort) -> None:
        self.runtime = runtime
        self.decider = decider
        self.port = port
        self.store = runtime.store
        runtime.root_refused = self.root_refused
        runtime.appliers[PLATFORM] = self.reconcile_entry
        try:  # the first slash command's record must not pay the schema check (~0.4 s)
            self.store.db.ensure_ready()
        except GhostError:  # reported, one line, by the first request that needs it
            log.warning("the database is not ready yet", exc_info=True)

    def register(self, app: App) -> None:
        app.middleware(self.count_in_flight)
        app.middleware(self.record_mention)
        app.command("/ghost")(self.slash)
        app.action(blocks.APPROVE)(self.approve)
        app.action(blocks.DENY)(self.open_deny)
        app.action(blocks.MODIFY)(self.open_modify)
        app.view(blocks.DENY_VIEW)(self.submit_deny)
        app.view(blocks.MODIFY_VIEW)(self.submit_modify)
        app.action(blocks.CONTINUE)(self.open_continue)
        app.view(blocks.CONTINUE_VIEW)(self.submit_continue)
        app.action(blocks.DONE)(self.prompt_button)
        app.action(blocks.EXTEND)(self.prompt_button)
        app.action(blocks.RCA)(self.prompt_button)
        app.action(blocks.RESUME)(self.resume_button)
        app.event("app_mention")(self.mention)
        for action in (blocks.ORPHANS_CLEAN, blocks.ORPHANS_SKIP, blocks.ORPHANS_REVIEW,
                       blocks.ORPHAN_CLEAN_ONE):
            app.action(action)(self.orphan_button)

    # ------------------------------------------------------------------ /ghost
    def slash(self, ack: Ack, body: dict[str, Any], respond: Respond) -> None:
        text = str(body.get("text") or "").strip()
        verb, _, rest = text.partition(" ")
        verb, rest = verb.lower(), rest.strip()
        user, channel = str(body["user_id"]), str(body["channel_id"])
        if verb in ("", "help"):
            ack(text=HELP)
        elif verb == "list":  # ack first: the database may be busy with workers
            ack()
            respond(text="\n".join(list_lines(self.store.list_investigations(limit=10))),
                    response_type="ephemeral")
        elif verb == "status":
            ack()
            respond(text=self._status_text(rest), response_type="ephemeral")
        elif verb == "investigate":
            if not rest:
                ack(text="Tell me the symptom: `/ghost investigate web-01 cannot reach "
                         "redis on 6379`")
                return
            # recorded before the ack: a crash after it never loses the command
            sid = self.runtime.accept(platform=PLATFORM, channel=channel, user=user,
                                      symptom=rest, reply_to=body.get("response_url"))
            ack(text=f"🔎 Starting an investigation of: {rest[:200]}\nIt is `{sid}`; its "
                     "thread starts in this channel in a moment.")
            self.runtime.opened(sid)  # its root now, ahead of other posts
        elif verb in ("cancel", "resume"):
            if not rest:
                ack(text=f"Which one? `/ghost {verb} SID` (see `/ghost list`).")
                return
            sid = rest.split()[0]
            try:
                recorded = self._record(sid, f"slash:{verb}:{uuid.uuid4().hex[:12]}",
                                        {"kind": verb, "user": user})
            except UnknownInvestigation as exc:
                ack()
                respond(text=str(exc), response_type="ephemeral")
                return
            ack()
            said = self.apply(*recorded)
            respond(text=said or f"`{sid}`: done.", response_type="ephemeral")
        else:
            ack(text=f"I don't know `{verb}`.\n{HELP}")

    def count_in_flight(self, next: Callable[[], None]) -> None:  # noqa: A002 - bolt's name
        """Middleware: a shutdown waits (bounded) for the requests being answered."""
        with self.runtime.in_flight:
            next()

    def root_refused(self, inv: Any, error: Exception) -> bool:
        """The worker could not post a slash command's root for a reason waiting does not fix
        (not invited, a bad token): tell the requester through the command's response URL,
        which works where Ghost may not post. False for anything else (tried again later)."""
        code = str(error.response.get("error")) if isinstance(error, SlackApiError) else ""
        hint = SLACK_HINTS.get(code)
        if hint is None:
            return False
        text = "⚠️ " + hint
        url = (inv.conversation_ref or {}).get("reply_to")
        try:
            if url:
                WebhookClient(str(url), timeout=10).send(text=text, response_type="ephemeral")
            else:
                self.port.tell(str(inv.channel_ref), str(inv.requested_by), text)
        except Exception:  # noqa: BLE001 - expired URL: the log has it, the row says why
            log.warning("could not tell %s why %s did not start", inv.requested_by,
                        inv.session_id, exc_info=True)
        return True

    def _status_text(self, sid: str) -> str:
        """The status line plus each capture's task id, state and poll count."""
        return status_line(self.store, sid, list_hint="/ghost list", captures=True)

    # ------------------------------------------------------------------ approvals
    def approve(self, ack: Ack, body: dict[str, Any]) -> None:
        request = DecisionRequest(_value(body), _user(body), "approve")
        ok, recorded = self._record_click(request, body, ack)  # durable before the ack
        if ok:
            self._decide_recorded(recorded, request, body)

    # ------------------------------------------------------------------ the inbox
    def _record(self, session_id: str, key: str, item: dict[str, Any]) -> tuple[str, str]:
        """One entry in the investigation's inbox, before the ack (one row update)."""
        self.store.get_investigation(session_id)  # UnknownInvestigation before any ack
        entry = {**item, "at": iso_utc(utc_now())}
        with acking():  # the ack waits for it: ahead of the workers' writes (SQLite)
            self.store.change_conversation_ref(session_id, lambda ref: ref.setdefault(
                "inbox", {}).setdefault(key, entry))
        return session_id, key

    def apply(self, session_id: str, key: str) -> str | None:
        """Act on a recorded request, then remove it from the inbox; what to tell whoever
        made it (None: nothing). Safe to run again for the same entry (a crash between the
        act and the removal): every act below is idempotent for its entry."""
        try:
            inv = self.store.get_investigation(session_id)
        except UnknownInvestigation as exc:
            return str(exc)
        item = dict(((inv.conversation_ref or {}).get("inbox") or {}).get(key) or {})
        if not item:
            return None  # applied already (by the listener, or by the reconcile job)
        kind = item.get("kind")
        said: str | None = None
        if kind == "decision":
            self._decide_left_over(session_id, key, item)
            return None
        if kind is None:  # an @ghost in the thread
            self.answer_mention(session_id, key)
            return None
        user = str(item.get("user") or "")
        try:
            if kind == "prompt":
                said = self._apply_prompt(session_id, key, item)
            elif kind == "orphans":
                said = self._apply_orphans(session_id, key, item)
            elif kind == "resume":
                said = self._apply_resume(session_id, key, item)
            elif kind == "cancel":
                closed = self.runtime.cancel(session_id, user)
                note = f" {closed} pending approval(s) closed." if closed else ""
                said = f"Cancelled `{session_id}`.{note}"
        except (NotWaiting, UnknownInvestigation) as exc:
            said = str(exc)
        self._take(session_id, key)
        if said and item.get("tell"):  # a button: only the clicker sees why
            self._tell_thread(session_id, user, said)
        return said

    def _apply_prompt(self, sid: str, key: str, item: dict[str, Any]) -> str | None:
        """Continue (with its instruction), Done, Extend, Generate RCA."""
        user, action, prompt = str(item["user"]), str(item["action"]), item.get("prompt")
        if self._refuse_steer(sid, user):
            return None
        if action == "continue":
            self.runtime.instruct(sid, str(item.get("instruction") or "Continue."),
                                  actor=user, choice=CONTINUED, key=prompt, clicked=True,
                                  token=key)
        elif action == "extend":
            self.runtime.extend(sid, actor=user, key=prompt, clicked=True, token=key)
        else:
            self.runtime.finish(sid, actor=user, key=prompt, clicked=True, token=key)
        self.runtime.kick()
        return None

    def _apply_orphans(self, sid: str, key: str, item: dict[str, Any]) -> str | None:
        """Clean up / Skip / Review each, and a row's Clean up: the first click wins."""
        user = str(item["user"])
        if self._refuse_steer(sid, user):
            return None
        orphans = self.runtime.orphans
        if item["action"] == "one":
            return orphans.clean_one(sid, user, int(item.get("index", -1)), token=key)
        return orphans.choose(sid, user, str(item["action"]), token=key)

    def _apply_resume(self, sid: str, key: str, item: dict[str, Any]) -> str | None:
        """Resume (the parked notice's button, or ``/ghost resume``): once, whoever asks."""
        inv = self.store.get_investigation(sid)
        if item.get("button") and inv.status != "parked":
            return f"`{sid}` was resumed already; it is {inv.status.replace('_', ' ')}."
        note = self.runtime.resume(sid, actor=str(item.get("user") or "") or None)
        self.runtime.kick()
        return note

    def _record_click(self, request: DecisionRequest, body: dict[str, Any],
                      ack: Ack) -> tuple[bool, tuple[str, str] | None]:
        """Put a decision click into its investigation's inbox (one row update), then ack: a
        process that dies after the ack leaves it for the ``reconcile`` job, which decides it.
        (True, None) for an unknown approval (told after the ack); (False, None) when the
        database could not record it (acked, and the clicker told that nothing was decided)."""
        try:
            recorded = self._record_decision(request, body)
        except Exception as exc:
            if not self._unrecorded(exc, ack, body):
                raise
            return False, None
        ack()
        return True, recorded

    def _unrecorded(self, exc: Exception, ack: Ack, body: dict[str, Any]) -> bool:
        """The database did not answer while recording a click: ack anyway (Slack would show
        "didn't respond" and the engineer would not know why) and tell the clicker that
        nothing was recorded, so a click again is right. False for any other error."""
        if transient_cause(exc) is None:
            return False
        ack()
        channel = (body.get("channel") or {}).get("id")
        if channel:
            self.port.tell(str(channel), _user(body), "⚠️ Ghost's database did not answer just "
                           "now, so this click was not recorded and nothing was decided. Click "
                           "again in a minute.")
        log.warning("a click was not recorded: the database did not answer (%s)",
                    type(exc).__name__)
        return True

    def _record_decision(self, request: DecisionRequest,
                         body: dict[str, Any]) -> tuple[str, str] | None:
        approval = self.store.get_approval(request.approval_id)
        if approval is None:
            return None
        stamp = ((body.get("actions") or [{}])[0].get("action_ts") or body.get("trigger_id")
                 or iso_utc(utc_now()))
        key = f"click:{request.approval_id}:{request.actor}:{request.kind}:{stamp}"
        item = {"kind": "decision", "approval_id": request.approval_id,
                "user": request.actor, "decision": request.kind, "reason": request.reason,
                "new_command": request.new_command,
                "channel": (body.get("channel") or {}).get("id"), "at": iso_utc(utc_now())}
        sid = str(approval.session_id)
        with acking():
            self.store.change_conversation_ref(sid, lambda ref: ref.setdefault(
                "inbox", {}).setdefault(key, item))
        return sid, key

    def _decide_recorded(self, recorded: tuple[str, str] | None, request: DecisionRequest,
                         body: dict[str, Any]) -> None:
        """Decide a recorded click, then take it out of the inbox: a process that dies in
        between leaves it to the ``reconcile`` job, whose second decision finds the first
        (first decision wins) and only closes the card."""
        self._decide(body, request)
        if recorded is not None:
            self._take(*recorded)

    def _take(self, session_id: str, key: str) -> bool:
        """Remove an inbox entry (compare-and-set); False if someone else took it."""
        return bool(self.store.change_conversation_ref(
            session_id, lambda ref: (ref.get("inbox") or {}).pop(key, None) is not None))

    def _decide_left_over(self, session_id: str, key: str, item: dict[str, Any]) -> None:
        """A recorded decision whose process died after the ack (the ``reconcile`` job's
        half): decide it, then take it out; deciding twice finds the first decision, which
        only closes the card again."""
        request = DecisionRequest(str(item["approval_id"]), str(item["user"]),
                                  str(item["decision"]), reason=item.get("reason"),
                                  new_command=item.get("new_command"))
        result = self.decider.decide(request)
        if result.ok:
            self._decided(request, result)
        else:
            approval = self.store.get_approval(request.approval_id)
            if approval is not None and approval.status != "pending":  # decided before
                self.runtime.close_card(request.approval_id, outcome_of(approval))
                self.runtime.kick()
        self._take(session_id, key)

    def open_deny(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        self._open_decision_modal(body, client, blocks.deny_modal)

    def open_modify(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        self._open_decision_modal(body, client, blocks.modify_modal)

    def _open_decision_modal(self, body: dict[str, Any], client: WebClient, build: Any) -> None:
        approval_id, user = _value(body), _user(body)
        refusal = self.decider.check(approval_id, user)
        if refusal is not None:
            self._tell(approval_id, user, refusal.message, body)
            return
        approval = self.store.get_approval(approval_id)
        client.views_open(trigger_id=body["trigger_id"],
                          view=build(approval_id, approval.command))

    def submit_deny(self, ack: Ack, body: dict[str, Any]) -> None:
        request = DecisionRequest(_metadata(body), _user(body), "deny",
                                  reason=_field(body, "reason"))
        ok, recorded = self._record_click(request, body, ack)
        if ok:
            self._decide_recorded(recorded, request, body)

    def submit_modify(self, ack: Ack, body: dict[str, Any]) -> None:
        command = (_field(body, "command") or "").strip()
        if not command:
            ack(response_action="errors", errors={"command": "Enter the command to run."})
            return
        request = DecisionRequest(_metadata(body), _user(body), "modify", new_command=command)
        ok, recorded = self._record_click(request, body, ack)
        if ok:
            self._decide_recorded(recorded, request, body)

    def _decide(self, body: dict[str, Any], request: DecisionRequest) -> None:
        result = self.decider.decide(request)
        if result.ok:
            self._decided(request, result)
        else:
            self._tell(request.approval_id, request.actor, result.message, body)

    def _decided(self, request: DecisionRequest, result: Any) -> None:
        self.runtime.close_card(request.approval_id, result.outcome)
        if result.session_id:  # an orphan deletion waiting on this goes on now
            self.runtime.orphans.continue_waiting(result.session_id)
        self.runtime.kick()

    # ------------------------------------------------------------------ orphans
    def orphan_button(self, ack: Ack, body: dict[str, Any]) -> None:
        """Clean up / Skip / Review each, and a row's Clean up: recorded, acked, applied."""
        action = body["actions"][0]["action_id"]
        sid, _, index = _value(body).partition("|")
        choice = {blocks.ORPHANS_CLEAN: "clean", blocks.ORPHANS_SKIP: "skip",
                  blocks.ORPHAN_CLEAN_ONE: "one"}.get(action, "review")
        recorded = self._record_button(sid, body, {"kind": "orphans", "action": choice,
                                                   "index": int(index or -1)}, ack)
        if recorded is not None:
            self.apply(*recorded)

    def _record_button(self, sid: str, body: dict[str, Any], item: dict[str, Any],
                       ack: Ack) -> tuple[str, str] | None:
        """Record a click in ``sid``'s inbox, then ack; None (acked) for an unknown one, or
        when the database could not record it (the clicker is told)."""
        try:
            recorded = self._record(sid, _click_key(body), {
                **item, "user": _user(body), "tell": True})
        except UnknownInvestigation:
            ack()
            return None
        except Exception as exc:
            if not self._unrecorded(exc, ack, body):
                raise
            return None
        ack()
        return recorded

    def resume_button(self, ack: Ack, body: dict[str, Any]) -> None:
        """Resume on a parked investigation's notice (Gemini was unavailable too long)."""
        sid, _ = split_value(_value(body))
        recorded = self._record_button(sid, body, {"kind": "resume", "button": True}, ack)
        if recorded is not None:
            self.apply(*recorded)

    def _tell(self, approval_id: str, user: str, text: str, body: dict[str, Any]) -> None:
        approval = self.store.get_approval(approval_id)
        ref = (approval.message_ref if approval is not None else None) or {}
        channel = ref.get("channel") or (body.get("channel") or {}).get("id")
        if channel:
            self.port.tell(str(channel), user, text, ref.get("thread_ts"))

    # ------------------------------------------------------------------ prompts
    def _refuse_steer(self, sid: str, user: str) -> bool:
        """Tell ``user`` (only them) why they may not steer ``sid``; True when refused."""
        try:
            inv = self.store.get_investigation(sid)
        except UnknownInvestigation:
            return True
        why = why_not_steer(self.decider.policy, self.decider.directory, actor=user,
                            channel=inv.channel_ref, requester=inv.requested_by)
        if why is not None and inv.channel_ref:
            self.port.tell(str(inv.channel_ref), user, why, inv.thread_ref)
        return why is not None

    def open_continue(self, ack: Ack, body: dict[str, Any], client: WebClient) -> None:
        ack()
        sid, key = split_value(_value(body))
        user = _user(body)
        if self._refuse_steer(sid, user):
            return
        try:  # an old prompt's Continue: say who answered it, open nothing
            self.runtime.check_prompt(sid, key)
        except NotWaiting as exc:
            self._tell_thread(sid, user, str(exc))
            return
        client.views_open(trigger_id=body["trigger_id"],
                          view=blocks.continue_modal(_value(body)))

    def submit_continue(self, ack: Ack, body: dict[str, Any]) -> None:
        sid, key = split_value(_metadata(body))
        recorded = self._record_button(sid, body, {
            "kind": "prompt", "action": "continue", "prompt": key,
            "instruction": _field(body, "instruction") or "Continue."}, ack)
        if recorded is not None:
            self.apply(*recorded)

    def prompt_button(self, ack: Ack, body: dict[str, Any]) -> None:
        """Done, Extend, Generate RCA: recorded, acked, applied; the runtime replaces the
        prompt's buttons by the answer for everyone; a click on an old prompt is told who
        answered it (only the clicker)."""
        action = body["actions"][0]["action_id"]
        sid, key = split_value(_value(body))
        recorded = self._record_button(sid, body, {
            "kind": "prompt", "action": {blocks.EXTEND: "extend", blocks.RCA: "rca"}.get(
                action, "done"), "prompt": key}, ack)
        if recorded is not None:
            self.apply(*recorded)

    def _tell_thread(self, sid: str, user: str, text: str) -> None:
        inv = self.store.get_investigation(sid)
        self.port.tell(str(inv.channel_ref), user, text, inv.thread_ref)

    # ------------------------------------------------------------------ @ghost
    def mention_entry(self, body: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
        """The inbox entry of an ``@ghost`` in an investigation's thread (None for anything
        else): recorded with the event's dedup key, in one transaction, before the ack
        (``bot/slack/app.py``)."""
        event = body.get("event") or {}
        thread = event.get("thread_ts")
        if body.get("type") != "event_callback" or event.get("type") != "app_mention" or \
                not thread:
            return None
        inv = self.store.find_by_thread(PLATFORM, str(event.get("channel")), str(thread))
        if inv is None:
            return None
        item = {"user": str(event.get("user")), "thread": str(thread),
                "text": MENTION.sub("", str(event.get("text") or "")).strip(),
                "at": iso_utc(utc_now())}
        return str(inv.session_id), _mention_key(body), item

    def record_mention(self, body: dict[str, Any], next: Callable[[], None]) -> None:  # noqa: A002
        """Middleware: an ``@ghost`` without an event id (which the dedup step records with
        its key) goes into the investigation's inbox here, before bolt acks the event."""
        entry = None if body.get("event_id") else self.mention_entry(body)
        if entry is not None:
            sid, key, item = entry
            self.store.change_conversation_ref(sid, lambda ref: ref.setdefault(
                "inbox", {}).setdefault(key, item))
        next()

    def mention(self, body: dict[str, Any], event: dict[str, Any], say: Any) -> None:
        channel, thread = str(event.get("channel")), event.get("thread_ts")
        inv = self.store.find_by_thread(PLATFORM, channel, str(thread)) if thread else None
        if inv is None:
            say(text="Start an investigation with `/ghost investigate <symptom>`; inside its "
                     "thread, mention me with instructions.", thread_ts=event.get("ts"))
            return
        self.answer_mention(inv.session_id, _mention_key(body))

    def reconcile_entry(self, session_id: str, key: str) -> bool:
        """The ``reconcile`` job: apply an entry acked by a process that died before it
        applied it (any kind); False if it was applied meanwhile."""
        inv = self.store.get_investigation(session_id)
        if key not in ((inv.conversation_ref or {}).get("inbox") or {}):
            return False
        self.apply(session_id, key)
        return True

    def answer_mention(self, session_id: str, key: str) -> bool:
        """Act once on a mention stored in the inbox: steer (or refuse), instruct or queue.
        The act comes first and the entry is taken after it: applied again after a crash, the
        instruction's answer carries the entry's key (nothing twice), and a queued one is
        queued in the same transaction that takes the entry. False if already applied."""
        inv = self.store.get_investigation(session_id)
        item = ((inv.conversation_ref or {}).get("inbox") or {}).get(key)
        if item is None:
            return False
        if item.get("kind") is not None:  # a recorded click: the inbox's own path
            self.apply(session_id, key)
            return True
        user, thread = str(item["user"]), str(item["thread"])
        text = str(item.get("text") or "") or "Continue."
        if self._refuse_steer(session_id, user):
            self._take(session_id, key)
            return False
        try:
            self.runtime.instruct(session_id, text, actor=user, choice=MENTIONED, token=key)
        except NotWaiting as exc:
            self._queue_mention(self.store.get_investigation(session_id), user, text, thread,
                                str(exc), key)
            return True
        if not self._take(session_id, key):
            return True  # applied by another process meanwhile: it said so
        self.runtime.kick()
        self.port.tell(str(inv.channel_ref), user, "Got it — continuing with your instruction.",
                       thread)
        return True

    def _queue_mention(self, inv: Any, user: str, text: str, thread: str, why: str,
                       key: str) -> None:
        """Ghost is busy: keep the instruction (in the database) for its next pause; queued
        in the transaction that takes the inbox entry, so it is queued once."""
        channel = str(inv.channel_ref)
        if inv.status not in QUEUEABLE:
            self._take(inv.session_id, key)
            self.port.tell(channel, user, why, thread)
            return
        waiting = self.runtime.queue_instruction(inv.session_id, user, text, take=key)
        if waiting is None:
            return  # queued already by an earlier application of this entry
        if self.runtime.deliver_queued(inv.session_id):  # it paused in the meantime
            self.runtime.kick()
            self.port.tell(channel, user, "Got it — continuing with your instruction.", thread)
            return
        phase = (self.store.get_investigation(inv.session_id).engine_state or {}).get("phase")
        when = ("after you press Extend" if phase == "turn_limit"
                else "as soon as it finishes its current step")
        self.port.tell(channel, user, f"Ghost is busy ({status_view(inv).phase}). Your "
                       f"instruction is queued ({waiting} waiting) and goes to Ghost {when}.",
                       thread)


def _click_key(body: dict[str, Any]) -> str:
    """A click's or a modal submission's inbox key: unique per request (Slack does not retry
    interactive requests, so no two deliveries share one)."""
    action = (body.get("actions") or [{}])[0]
    return f"click:{action.get('action_id') or 'view'}:{_user(body)}:{uuid.uuid4().hex[:12]}"


def _mention_key(body: dict[str, Any]) -> str:
    event = body.get("event") or {}
    return str(body.get("event_id") or f"{event.get('channel')}:{event.get('ts')}")


def _user(body: dict[str, Any]) -> str:
    return str(body["user"]["id"])


def _value(body: dict[str, Any]) -> str:
    return str(body["actions"][0]["value"])


def _metadata(body: dict[str, Any]) -> str:
    return str(body["view"]["private_metadata"])


def _field(body: dict[str, Any], block_id: str) -> str | None:
    values = body["view"]["state"]["values"].get(block_id) or {}
    value = (values.get("value") or {}).get("value")
    return str(value) if value is not None else None
