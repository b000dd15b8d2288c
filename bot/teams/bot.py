"""The Teams bot: ``@Ghost`` commands and ``Action.Execute`` clicks, handed to the chat layer.

Handlers run on the adapter's event loop and do blocking work (database, engine) with
``asyncio.to_thread``. A request does only the durable part (record, decide, answer); the posts
and card updates it causes are queued (``port.AFTER_RESPONSE``) and sent after the response, as
in Slack, so a mention is answered in milliseconds and Teams never waits on the connector. A
click's invoke response is the card as the clicker should see it; everyone else's copy is
updated through the port (``close_card``) right after.
Actors are Entra ID object ids (``aadObjectId``), which is what ``GHOST_TEAMS_APPROVERS`` lists.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
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
from bot.chat.status import StatusView, list_lines, status_line, status_view
from bot.chat.steering import why_not_steer
from bot.chat.threads import begin_in_thread
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
from storage.db import transient_cause

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
        self._after: set[asyncio.Task[None]] = set()

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
            if queue:
                task = asyncio.get_running_loop().create_task(
                    asyncio.to_thread(_run_after_response, queue))
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
        try:
            if verb == "help":
                return TEAMS_HELP
            if verb == "list":
                return "\n\n".join(list_lines(self.store.list_investigations(limit=10)))
            if verb == "status":
                return self._status_text(rest)
            if verb == "investigate":
                return self._investigate(ref, channel, root, user, name, rest,
                                         team_of(activity))
            if verb in ("cancel", "resume"):
                return self._cancel_or_resume(verb, rest, user)
            return self._instruct(channel, root, user, " ".join(p for p in (verb, rest) if p))
        except (NotWaiting, UnknownInvestigation) as exc:
            return str(exc)

    def _investigate(self, ref: dict[str, Any], channel: str, root: str, user: str,
                     name: str, symptom: str, team: dict[str, str]) -> str | None:
        if not symptom:
            return "Tell me the symptom: `@Ghost investigate web-01 cannot reach redis on 6379`"
        existing = self.store.find_by_thread(PLATFORM, channel, root)
        if existing is not None and existing.status not in ("completed", "cancelled"):
            return (f"This thread already has investigation `{existing.session_id}`. Start a "
                    "new one in a new post, or mention me here with an instruction.")

        def announce(inv: Any) -> None:
            self.port.post_status(inv, StatusView(
                session_id=inv.session_id, symptom=symptom, requested_by=user, status="queued",
                phase="Starting…", turn=0, max_turns=50))

        begin_in_thread(self.runtime, platform=PLATFORM, channel=channel, thread=root,
                        user=user, symptom=symptom,
                        conversation_ref={REF: ref, NAME + user: name, **team},
                        announce=announce)
        if not later(self.runtime.kick):  # after the status card, so it comes first
            self.runtime.kick()
        return None

    def _cancel_or_resume(self, verb: str, rest: str, user: str) -> str:
        if not rest:
            return f"Which one? `@Ghost {verb} SID` (see `@Ghost list`)."
        sid = rest.split()[0]
        if verb == "cancel":
            closed = self.runtime.cancel(sid, user)
            note = f" {closed} pending approval(s) closed." if closed else ""
            return f"Cancelled `{sid}`.{note}"
        self.runtime.resume(sid)
        self.runtime.kick()
        return f"Resuming `{sid}` in its thread."

    def _instruct(self, channel: str, root: str, user: str, text: str) -> str:
        inv = self.store.find_by_thread(PLATFORM, channel, root)
        if inv is None:
            return ("Start an investigation with `@Ghost investigate <symptom>`; inside its "
                    "thread, mention me with instructions. `@Ghost help` lists the commands.")
        why = self._why_not_steer(inv, user)
        if why:
            return why
        try:
            self.runtime.instruct(inv.session_id, text or "Continue.", actor=user,
                                  choice=MENTIONED)
        except NotWaiting as exc:
            if inv.status not in QUEUEABLE:
                return str(exc)
            waiting = self.runtime.queue_instruction(inv.session_id, user, text or "Continue.")
            if not self.runtime.deliver_queued(inv.session_id):
                return (f"Ghost is busy ({status_view(inv).phase}). Your instruction is queued "
                        f"({waiting} waiting) and goes to Ghost at its next pause.")
        self.runtime.kick()
        return "Got it — continuing with your instruction."

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
        try:
            if verb in cards.DECISION_VERBS:
                content = await asyncio.to_thread(self._decision, verb, data, user, name)
            elif verb in cards.PROMPT_VERBS:
                content = await asyncio.to_thread(self._prompt_answer, verb, data, user, name)
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

    def _decision(self, verb: str, data: dict[str, Any], user: str, name: str) -> cards.Card:
        approval_id = str(data.get("approval_id") or "")
        approval = self.store.get_approval(approval_id)
        if approval is None:
            return cards.notice_card("This approval request no longer exists.")
        self._remember(approval.session_id, user, name)
        if verb == cards.MODIFY and not str(data.get("command") or "").strip():
            return self._card_for(approval_id, notice="Enter the command to run, then Submit "
                                                      "edit. Nothing was changed.")
        GROUP_CHECK_FAILED.set(None)
        result = self.decider.decide(DecisionRequest(
            approval_id, user, verb, reason=_text(data.get("reason")),
            new_command=_text(data.get("command"))))
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
                       name: str) -> cards.Card:
        """Continue, Done, Extend, Generate RCA. The runtime replaces the prompt's actions by
        the answer for everyone; a click on an old prompt gets the card as it stands, with who
        answered it (only the clicker sees that)."""
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
        try:
            if verb == cards.CONTINUE:
                choice = CONTINUED
                self.runtime.instruct(sid, _text(data.get("instruction")) or "Continue.",
                                      actor=user, choice=choice, key=key, clicked=True)
            elif verb == cards.EXTEND:
                choice = EXTENDED
                self.runtime.extend(sid, actor=user, key=key, clicked=True)
            else:
                choice = DONE
                self.runtime.finish(sid, actor=user, key=key, clicked=True)
        except AlreadyAnswered as exc:
            inv = self.store.get_investigation(sid)
            answer = answer_of(inv, key) if key else None
            return cards.prompt_card(prompt, answer.by if answer else None,
                                     answer.choice if answer else None,
                                     names=names_for(inv.conversation_ref),
                                     notice=teams_words(str(exc)), closed=True)
        except (NotWaiting, GhostError) as exc:
            return cards.prompt_card(prompt, notice=teams_words(str(exc)))
        self.runtime.kick()
        inv = self.store.get_investigation(sid)
        return cards.prompt_card(prompt, user, choice, names=names_for(inv.conversation_ref))


def _run_after_response(queue: list[Callable[[], object]]) -> None:
    """The queued posts in order; one failing (logged) does not stop the others."""
    for call in queue:
        try:
            call()
        except Exception:  # noqa: BLE001 - the decision stands; the post is what failed
            log.exception("a Teams post after the response failed")


def _text(value: Any) -> str | None:
    return str(value) if value is not None else None
