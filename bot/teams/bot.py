"""The Teams bot: ``@Ghost`` commands and ``Action.Execute`` clicks, handed to the chat layer.

Handlers run on the adapter's event loop and do blocking work (database, engine) with
``asyncio.to_thread``. A request does only the durable part (record, decide, answer); the posts
and card updates it causes are queued (``port.AFTER_RESPONSE``) and sent after the response, as
in Slack, so a mention is answered in milliseconds and Teams never waits on the connector. A
click's invoke response is the card as the clicker should see it; everyone else's copy is
updated through the port (``close_card``) right after.
Actors are Entra ID object ids (``aadObjectId``), which is what ``GHOST_TEAMS_APPROVERS`` lists.

Nothing acknowledged is lost (issue 34). Every request that changes something is recorded
before anything else, in one transaction with its activity id (``chat_events``): an
``@Ghost investigate`` as the investigation itself (queued, its status card owed as its root),
an instruction, ``cancel``, ``resume`` and every click as an entry in the investigation's inbox.
Then it is applied from that record and the entry removed. The connector redelivers a request
whose answer it did not get: the activity id is known then, so nothing is created twice, and an
entry still in the inbox (its process died before applying it) is applied now; one nobody
redelivers is applied by the ``reconcile`` job. Applying is idempotent as in Slack
(``bot/slack/handlers.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from botbuilder.core import TurnContext
from botbuilder.core.teams import TeamsActivityHandler
from botbuilder.schema import Activity, AdaptiveCardInvokeResponse, AdaptiveCardInvokeValue

from bot.chat.decisions import Decider, DecisionRequest, DecisionResult
from bot.chat.help_text import HELP, teams_words
from bot.chat.prompts import (
    CONTINUED,
    DONE,
    EXTENDED,
    MENTIONED,
    AlreadyAnswered,
    answer_of,
)
from bot.chat.runtime import ChatRuntime, NotWaiting
from bot.chat.status import list_lines, status_line, status_view
from bot.chat.steering import why_not_steer
from bot.teams import cards
from bot.teams.graph import REQUEST_TENANT
from bot.teams.port import (
    AFTER_RESPONSE,
    CLICKED_IN,
    GROUP_CHECK_FAILED,
    NAME,
    REF,
    TENANT,
    TeamsPort,
    later,
    names_for,
    team_of,
    thread_reference,
)
from core.errors import GhostError, UnknownInvestigation
from core.session_state import iso_utc, utc_now
from storage.db import acking, transient_cause
from storage.investigations import AlreadySeen

log = logging.getLogger(__name__)
PLATFORM = "teams"
#: An instruction is queued (not refused) while the investigation is in one of these.
QUEUEABLE = ("queued", "running", "awaiting_approval", "awaiting_user")
AT = re.compile(r"<at>.*?</at>", re.IGNORECASE)
TEAMS_HELP = HELP.replace("/ghost ", "@Ghost ").replace(
    "mention @ghost", "mention @Ghost")


def actor_of(activity: Activity) -> tuple[str, str]:
    """(Entra ID object id — or the Teams id when there is none, display name)."""
    who = activity.from_property
    return str(who.aad_object_id or who.id), str(who.name or who.id)


def card_response(content: cards.Card) -> AdaptiveCardInvokeResponse:
    return AdaptiveCardInvokeResponse(status_code=200, type=cards.CONTENT_TYPE, value=content)


class GhostTeamsBot(TeamsActivityHandler):  # type: ignore[misc]
    """The handlers, holding the services they hand work to."""

    def __init__(self, runtime: ChatRuntime, decider: Decider, port: TeamsPort) -> None:
        self.runtime = runtime
        self.decider = decider
        self.port = port
        self.store = runtime.store
        self._after: set[asyncio.Future[None]] = set()
        runtime.appliers[PLATFORM] = self.reconcile_entry

    # ------------------------------------------------------------------ the turn
    async def on_turn(self, turn_context: TurnContext) -> None:
        """The request does the durable part (record, decide); what it posts or updates in
        Teams is queued (``AFTER_RESPONSE``) and sent once the response is on its way."""
        queue: list[Callable[[], object]] = []
        token = AFTER_RESPONSE.set(queue)
        REQUEST_TENANT.set(team_of(turn_context.activity).get(TENANT))
        try:
            await super().on_turn(turn_context)
        finally:
            AFTER_RESPONSE.reset(token)
            if queue:  # on threads of their own (see AFTER_POOL), in this request's context
                task = asyncio.get_running_loop().run_in_executor(
                    AFTER_POOL, contextvars.copy_context().run, _run_after_response, queue)
                self._after.add(task)
                task.add_done_callback(self._after.discard)

    async def settle(self) -> None:
        """Wait for the posts queued by earlier requests (tests, shutdown)."""
        while self._after:
            await asyncio.gather(*list(self._after), return_exceptions=True)

    # ------------------------------------------------------------------ @Ghost …
    async def on_message_activity(self, turn_context: TurnContext) -> None:
        activity = turn_context.activity
        text = AT.sub("", TurnContext.remove_recipient_mention(activity) or "").strip()
        verb, _, rest = text.partition(" ")
        verb, rest = verb.lower(), rest.strip()
        ref, channel, _ = thread_reference(activity)
        CLICKED_IN.set((actor_of(activity)[0], channel))  # copied into the worker thread
        reply = await asyncio.to_thread(self._command, activity, verb, rest)
        if reply:
            await asyncio.to_thread(self.port.reply, ref, teams_words(reply))

    def _command(self, activity: Activity, verb: str, rest: str) -> str | None:
        """Runs in a worker thread; the text to answer in the thread, if any."""
        ref, channel, root = thread_reference(activity)
        user, name = actor_of(activity)
        key = event_key(activity)
        try:
            if verb == "help":
                return TEAMS_HELP
            if verb == "list":
                return "\n\n".join(list_lines(self.store.list_investigations(limit=10)))
            if verb == "status":
                return self._status_text(rest)
            if verb == "investigate":
                return self._investigate(ref, channel, root, user, name, rest,
                                         team_of(activity), key)
            if verb in ("cancel", "resume"):
                return self._cancel_or_resume(verb, rest, user, key)
            return self._instruct(channel, root, user, " ".join(p for p in (verb, rest) if p),
                                  key)
        except (NotWaiting, UnknownInvestigation) as exc:
            return str(exc)

    def _investigate(self, ref: dict[str, Any], channel: str, root: str, user: str,
                     name: str, symptom: str, team: dict[str, str],
                     key: str | None) -> str | None:
        if not symptom:
            return "Tell me the symptom: `@Ghost investigate web-01 cannot reach redis on 6379`"
        existing = self.store.find_by_thread(PLATFORM, channel, root)
        if existing is not None and existing.status not in ("completed", "cancelled"):
            return (f"This thread already has investigation `{existing.session_id}`. Start a "
                    "new one in a new post, or mention me here with an instruction.")
        try:  # recorded whole, with the activity id, before anything else
            sid = self.runtime.accept(platform=PLATFORM, channel=channel, user=user,
                                      symptom=symptom, thread=root, event_key=key,
                                      conversation_ref={REF: ref, NAME + user: name, **team})
        except AlreadySeen:  # redelivered: it was recorded (and is running) already
            return None
        # its status card goes out right after the response, ahead of the worker's posts (or,
        # if this process dies first, from the worker that claims it)
        if not later(partial(self._open, sid)):
            self._open(sid)
        return None

    def _open(self, session_id: str) -> None:
        from bot.worker import TryLater

        try:
            self.runtime.open_thread(session_id)
        except TryLater as exc:  # the worker that claims it posts it
            log.info("%s", exc.message)
        self.runtime.kick()

    def _record(self, session_id: str, key: str | None, item: dict[str, Any]) -> str:
        """One inbox entry with the request's activity id (one transaction); its key. A
        redelivery finds the id remembered and records nothing (the entry, if not applied
        yet, is applied now by the caller)."""
        key = key or f"teams:{uuid.uuid4().hex}"
        clicked = CLICKED_IN.get()  # where it was clicked: whoever applies it later judges
        entry = {**item, "at": iso_utc(utc_now()),  # membership as the request showed it
                 **({"channel": clicked[1]} if clicked else {})}
        with acking():  # the answer waits for it: ahead of the workers' writes (SQLite)
            self.store.remember_event(key, inbox=(session_id, key, entry))
        return key

    def _cancel_or_resume(self, verb: str, rest: str, user: str, key: str | None) -> str:
        if not rest:
            return f"Which one? `@Ghost {verb} SID` (see `@Ghost list`)."
        sid = rest.split()[0]
        self.store.get_investigation(sid)  # UnknownInvestigation: nothing recorded
        key = self._record(sid, key, {"kind": verb, "user": user})
        return self.apply(sid, key) or f"`{sid}`: already done."

    def _instruct(self, channel: str, root: str, user: str, text: str,
                  key: str | None) -> str:
        inv = self.store.find_by_thread(PLATFORM, channel, root)
        if inv is None:
            return ("Start an investigation with `@Ghost investigate <symptom>`; inside its "
                    "thread, mention me with instructions. `@Ghost help` lists the commands.")
        key = self._record(inv.session_id, key, {"kind": "mention", "user": user,
                                                 "text": text or "Continue."})
        return self.apply(inv.session_id, key) or "Got it — that instruction was taken."

    # ------------------------------------------------------------------ the inbox
    def reconcile_entry(self, session_id: str, key: str) -> bool:
        """The ``reconcile`` job: an entry whose process died after recording it."""
        inv = self.store.get_investigation(session_id)
        if key not in ((inv.conversation_ref or {}).get("inbox") or {}):
            return False
        self.apply(session_id, key)
        return True

    def _take(self, session_id: str, key: str) -> bool:
        return bool(self.store.change_conversation_ref(
            session_id, lambda ref: (ref.get("inbox") or {}).pop(key, None) is not None))

    def apply(self, session_id: str, key: str) -> str | None:
        """Act on a recorded request, then remove it; what to answer (None: nothing, or it
        was applied already). Safe to run again for one entry: every act is idempotent."""
        item = dict(((self.store.get_investigation(session_id).conversation_ref or {})
                     .get("inbox") or {}).get(key) or {})
        clicked = None
        if item.get("channel") and CLICKED_IN.get() is None:  # the reconcile job's thread:
            clicked = CLICKED_IN.set((str(item.get("user") or ""),  # membership as the
                                      str(item["channel"])))        # request showed it
        try:
            return self._apply(session_id, key)
        finally:
            if clicked is not None:
                CLICKED_IN.reset(clicked)

    def _apply(self, session_id: str, key: str) -> str | None:
        inv = self.store.get_investigation(session_id)
        item = dict(((inv.conversation_ref or {}).get("inbox") or {}).get(key) or {})
        if not item:
            return None
        kind, user = item.get("kind"), str(item.get("user") or "")
        said: str | None = None
        try:
            if kind == "mention":
                return self._apply_mention(session_id, key, item)
            if kind == "decision":
                said = self._apply_decision(item)
            elif kind == "prompt":
                said = self._apply_prompt(session_id, key, item)
            elif kind == "resume":
                if item.get("button") and inv.status != "parked":
                    said = f"`{session_id}` was resumed already."
                else:
                    said = self.runtime.resume(session_id, actor=user or None)
                    self.runtime.kick()
            elif kind == "cancel":
                closed = self.runtime.cancel(session_id, user)
                note = f" {closed} pending approval(s) closed." if closed else ""
                said = f"Cancelled `{session_id}`.{note}"
        except (NotWaiting, UnknownInvestigation) as exc:
            said = str(exc)
        self._take(session_id, key)
        if said:
            log.info("request %s of %s: %s", key, session_id, said)
        return said

    def _apply_mention(self, sid: str, key: str, item: dict[str, Any]) -> str:
        user, text = str(item["user"]), str(item.get("text") or "Continue.")
        inv = self.store.get_investigation(sid)
        why = self._why_not_steer(inv, user)
        if why:
            self._take(sid, key)
            return why
        try:
            self.runtime.instruct(sid, text, actor=user, choice=MENTIONED, token=key)
        except NotWaiting as exc:
            if inv.status not in QUEUEABLE:
                self._take(sid, key)
                return str(exc)
            waiting = self.runtime.queue_instruction(sid, user, text, take=key)
            if not self.runtime.deliver_queued(sid):
                return (f"Ghost is busy ({status_view(inv).phase}). Your instruction is queued "
                        f"({waiting or 'already'} waiting) and goes to Ghost at its next "
                        "pause.")
            self.runtime.kick()
            return "Got it — continuing with your instruction."
        self._take(sid, key)
        self.runtime.kick()
        return "Got it — continuing with your instruction."

    def _apply_decision(self, item: dict[str, Any]) -> str | None:
        """A recorded click on an approval card; deciding twice finds the first decision."""
        approval_id = str(item["approval_id"])
        result = self.decider.decide(DecisionRequest(
            approval_id, str(item["user"]), str(item["decision"]), reason=item.get("reason"),
            new_command=item.get("new_command")))
        approval = self.store.get_approval(approval_id)
        if result.ok or (approval is not None and approval.status != "pending"):
            self.runtime.close_card(approval_id, result.outcome if result.ok else None)
            self.runtime.kick()
            return None
        return result.message

    def _apply_prompt(self, sid: str, key: str, item: dict[str, Any]) -> str | None:
        user, verb, prompt = str(item["user"]), str(item["verb"]), item.get("prompt")
        why = self._why_not_steer(self.store.get_investigation(sid), user)
        if why:
            return why
        if verb == cards.CONTINUE:
            self.runtime.instruct(sid, str(item.get("instruction") or "Continue."), actor=user,
                                  choice=CONTINUED, key=prompt, clicked=True, token=key)
        elif verb == cards.EXTEND:
            self.runtime.extend(sid, actor=user, key=prompt, clicked=True, token=key)
        else:
            self.runtime.finish(sid, actor=user, key=prompt, clicked=True, token=key)
        self.runtime.kick()
        return None

    def _why_not_steer(self, inv: Any, user: str) -> str | None:
        return why_not_steer(self.decider.policy, self.decider.directory, actor=user,
                             channel=inv.channel_ref, requester=inv.requested_by)

    def _status_text(self, sid: str) -> str:
        return status_line(self.store, sid, list_hint="@Ghost list")

    # ------------------------------------------------------------------ card clicks
    async def on_adaptive_card_invoke(self, turn_context: TurnContext,
                                      invoke_value: AdaptiveCardInvokeValue
                                      ) -> AdaptiveCardInvokeResponse:
        action = invoke_value.action or {}
        verb = str(action.get("verb") or "")
        data = dict(action.get("data") or {})
        activity = turn_context.activity
        user, name = actor_of(activity)
        _, channel, _ = thread_reference(activity)
        CLICKED_IN.set((user, channel))  # copied into the worker thread below
        key = event_key(activity)
        try:
            if verb in cards.DECISION_VERBS:
                content = await asyncio.to_thread(self._decision, verb, data, user, name, key)
            elif verb in cards.PROMPT_VERBS:
                content = await asyncio.to_thread(self._prompt_answer, verb, data, user, name,
                                                  key)
            else:
                content = cards.notice_card("Ghost does not know this button. It may come from "
                                            "an older version of the app; nothing was done.")
        except GhostError as exc:  # the clicker sees why, not Teams' generic error
            content = cards.notice_card(teams_words(str(exc)))
        except Exception as exc:  # noqa: BLE001 - log it, and still answer the click
            if transient_cause(exc) is not None:  # nothing was decided: the click is safe to redo
                log.warning("a Teams card click (%s) met a dropped database connection", verb)
                content = cards.notice_card(
                    "Ghost's database did not answer just now, so nothing was decided. Click "
                    "again in a minute; if it keeps failing, check the database.")
            else:
                log.exception("a Teams card click (%s) failed", verb)
                content = cards.notice_card("Ghost hit an unexpected error handling that "
                                            "click. Try again, and check the bot's log if it "
                                            "repeats.")
        return card_response(content)

    def _remember(self, session_id: str | None, user: str, name: str) -> None:
        if session_id:
            self.store.update_conversation_ref(session_id, {NAME + user: name})

    def _decision(self, verb: str, data: dict[str, Any], user: str, name: str,
                  key: str | None = None) -> cards.Card:
        approval_id = str(data.get("approval_id") or "")
        approval = self.store.get_approval(approval_id)
        if approval is None:
            return cards.notice_card("This approval request no longer exists.")
        self._remember(approval.session_id, user, name)
        if verb == cards.MODIFY and not str(data.get("command") or "").strip():
            return self._card_for(approval_id, notice="Enter the command to run, then Submit "
                                                      "edit. Nothing was changed.")
        request = DecisionRequest(approval_id, user, verb, reason=_text(data.get("reason")),
                                  new_command=_text(data.get("command")))
        # recorded (with the click's activity id) before it is decided: a crash in between
        # leaves it to a redelivery or to the reconcile job, which decide it once
        sid = str(approval.session_id)
        key = self._record(sid, key, {
            "kind": "decision", "approval_id": approval_id, "user": user, "decision": verb,
            "reason": request.reason, "new_command": request.new_command})
        GROUP_CHECK_FAILED.set(None)
        result = self.decider.decide(request)
        self._take(sid, key)
        if result.ok:
            self.runtime.close_card(approval_id, result.outcome)
            self.runtime.kick()
            return self._card_for(approval_id, result)
        graph_trouble = GROUP_CHECK_FAILED.get()  # fail closed, but say what to fix
        notice = (f"{result.message} Group membership could not be checked: {graph_trouble}"
                  if graph_trouble else result.message)
        return self._card_for(approval_id, result, notice=notice)

    def _card_for(self, approval_id: str, result: DecisionResult | None = None, *,
                  notice: str | None = None) -> cards.Card:
        """The approval card as it now stands, with an optional note for the clicker."""
        from bot.chat.approval_cards import approval_card, outcome_of

        approval = self.store.get_approval(approval_id)
        inv = self.store.get_investigation(approval.session_id)
        card = self.port.teams_card(approval_card(approval, inv, self.runtime.policy))
        outcome = None
        if approval.status != "pending":
            outcome = result.outcome if result and result.outcome else outcome_of(approval)
        return cards.approval_card(card, outcome, names=names_for(inv.conversation_ref),
                                   notice=notice)

    def _prompt_answer(self, verb: str, data: dict[str, Any], user: str,
                       name: str, event: str | None = None) -> cards.Card:
        """Continue, Done, Extend, Generate RCA, Resume. Recorded first (with the click's
        activity id), then applied. The runtime replaces the prompt's actions by the answer
        for everyone; a click on an old prompt gets the card as it stands, with who answered
        it (only the clicker sees that)."""
        sid, kind = str(data.get("session_id") or ""), str(data.get("kind") or "awaiting_user")
        key = str(data.get("key") or "") or None
        try:
            prompt = self.runtime.prompt(sid, kind, key)
        except UnknownInvestigation:
            return cards.notice_card("This investigation no longer exists.")
        self._remember(sid, user, name)
        why = self._why_not_steer(self.store.get_investigation(sid), user)
        if why:
            return cards.prompt_card(prompt, notice=why)
        if verb == cards.RESUME:
            entry = self._record(sid, event, {"kind": "resume", "user": user, "button": True})
            said = self.apply(sid, entry)
            inv = self.store.get_investigation(sid)
            answer = answer_of(inv, key) if key else None
            return cards.prompt_card(prompt, answer.by if answer else None,
                                     answer.choice if answer else None,
                                     names=names_for(inv.conversation_ref),
                                     notice=teams_words(said) if said and answer is None
                                     else None, closed=answer is not None)
        entry = self._record(sid, event, {
            "kind": "prompt", "verb": verb, "user": user, "prompt": key,
            "instruction": _text(data.get("instruction")) or "Continue."})
        try:
            if verb == cards.CONTINUE:
                choice = CONTINUED
                self.runtime.instruct(sid, _text(data.get("instruction")) or "Continue.",
                                      actor=user, choice=choice, key=key, clicked=True,
                                      token=entry)
            elif verb == cards.EXTEND:
                choice = EXTENDED
                self.runtime.extend(sid, actor=user, key=key, clicked=True, token=entry)
            else:
                choice = DONE
                self.runtime.finish(sid, actor=user, key=key, clicked=True, token=entry)
        except AlreadyAnswered as exc:
            self._take(sid, entry)
            inv = self.store.get_investigation(sid)
            answer = answer_of(inv, key) if key else None
            return cards.prompt_card(prompt, answer.by if answer else None,
                                     answer.choice if answer else None,
                                     names=names_for(inv.conversation_ref),
                                     notice=teams_words(str(exc)), closed=True)
        except (NotWaiting, GhostError) as exc:
            self._take(sid, entry)
            return cards.prompt_card(prompt, notice=teams_words(str(exc)))
        self._take(sid, entry)
        self.runtime.kick()
        inv = self.store.get_investigation(sid)
        return cards.prompt_card(prompt, user, choice, names=names_for(inv.conversation_ref))


def event_key(activity: Activity) -> str | None:
    """The request's dedup key: its activity id within its conversation (a redelivery of
    the same request carries the same id)."""
    if not activity.id:
        return None
    conversation = activity.conversation.id if activity.conversation else ""
    return f"teams:{conversation}:{activity.id}"[:255]


#: The threads that send what requests queued for after their response. Not the loop's default
#: executor: a post waits (``LoopThread.run``) for a coroutine whose HTTP call runs on that
#: executor (msrest), so with every default thread holding a post, none was left for the
#: calls and twenty mentions at once left status cards unposted for a minute (issue 34).
AFTER_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="teams-after")


def _run_after_response(queue: list[Callable[[], object]]) -> None:
    """The queued posts in order; one failing (logged) does not stop the others."""
    for call in queue:
        try:
            call()
        except Exception:  # noqa: BLE001 - the decision stands; the post is what failed
            log.exception("a Teams post after the response failed")


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None
