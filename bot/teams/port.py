"""The chat port for Teams: proactive posts into an investigation's reply thread.

Every post goes through ``adapter.continue_conversation`` with the conversation reference stored
in the investigation's ``conversation_ref`` (key ``teams``), so a worker in any process, after any
restart, posts into the right thread. Cards are updated with ``update_activity`` — for everyone,
which an invoke response alone does not do. Each post or update is paced per conversation and
retried when the Bot Framework connector answers 429 (:class:`Delivery`). While a request is
being handled (``AFTER_RESPONSE`` set), posts and updates are queued and sent after its response.
The RCA goes into the channel's files through Graph when the app may (``files.py``), else as a
summary card and the report as cards.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import replace
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import partial
from typing import Any, TypeVar

from botbuilder.core import BotAdapter, TurnContext
from botbuilder.schema import (
    Activity,
    ActivityTypes,
    Attachment,
    ConversationReference,
    ErrorResponseException,
)

from bot.chat.approval_cards import ApprovalCard, DecisionOutcome, approvals_needed
from bot.chat.command_lines import CommandLine
from bot.chat.endings import RcaSummary
from bot.chat.help_text import teams_words
from bot.chat.outbox import NothingSent, transient
from bot.chat.ports import Thread
from bot.chat.prompt_wording import Prompt
from bot.chat.pump import Pump
from bot.chat.status import StatusView
from bot.teams import cards
from bot.teams.files import ChannelFiles, FilesRefused
from bot.teams.loop import LoopThread
from core.errors import GhostError
from core.safety.approval import ApprovalPolicy

log = logging.getLogger(__name__)
T = TypeVar("T")

#: (actor, channel) of the card click being handled; set by the bot around each decision.
CLICKED_IN: ContextVar[tuple[str, str] | None] = ContextVar("ghost_teams_click", default=None)
#: Why a group check failed during the click being handled (a Graph error), for the clicker.
GROUP_CHECK_FAILED: ContextVar[str | None] = ContextVar("ghost_teams_group_error", default=None)
#: Connector calls made while a request is being handled, run after its response (bot.on_turn).
AFTER_RESPONSE: ContextVar[list[Callable[[], object]] | None] = ContextVar(
    "ghost_teams_after_response", default=None)
REF, STATUS_ID, PROMPT_ID, NAME = "teams", "teams_status_id", "teams_prompt_id", "name:"
#: The team's Entra ID group id and the tenant, for Graph (the RCA file).
TEAM, TENANT = "teams_team", "teams_tenant"


class TeamsRateLimited(GhostError):
    """The connector kept answering 429 after every attempt; the post was not delivered."""


def throttled(exc: BaseException) -> bool:
    """Whether ``exc`` is the connector's HTTP 429 (msrest keeps aiohttp's response)."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", getattr(response, "status", None))
    return isinstance(exc, ErrorResponseException) and status == 429


def retry_after(exc: BaseException, now: Callable[[], datetime] | None = None) -> float | None:
    """The 429's Retry-After in seconds (a number or an HTTP date); None when absent."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    value = next((str(v) for k, v in dict(headers).items() if str(k).lower() == "retry-after"),
                 None)
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = now() if now else datetime.now(UTC)
    return max((when - current).total_seconds(), 0.0)


class Delivery:
    """Paces Teams posts per conversation and retries the connector's 429s.

    Teams throttles a bot per conversation (thread); about one message a second keeps a busy
    investigation under it, like Slack's pacing. Waits happen in the caller's thread (a worker,
    or a handler's ``asyncio.to_thread``), never on the event loop. ``clock`` and ``sleep`` are
    injectable so tests never sleep.
    """

    def __init__(self, interval_s: float = 1.0, *, max_attempts: int = 5,
                 max_wait_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.interval_s = interval_s
        self.max_attempts = max(1, max_attempts)
        self.max_wait_s = max_wait_s
        self.clock = clock
        self.sleep = sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def pace(self, conversation: str) -> float:
        """Reserve the conversation's next slot and sleep until it; returns the wait."""
        with self._lock:
            now = self.clock()
            slot = max(now, self._next.get(conversation, now))
            self._next[conversation] = slot + self.interval_s
        delay = slot - now
        if delay > 0:
            self.sleep(delay)
        return delay

    def _hold(self, conversation: str, wait: float) -> None:
        """After a 429, other posts to the conversation wait out the Retry-After too."""
        with self._lock:
            until = self.clock() + wait
            self._next[conversation] = max(self._next.get(conversation, until), until)

    def deliver(self, conversation: str, what: str, call: Callable[[], T]) -> T:
        """``call()`` paced, retried on 429 up to ``max_attempts`` times in all."""
        for attempt in range(1, self.max_attempts + 1):
            self.pace(conversation)
            try:
                return call()
            except ErrorResponseException as exc:
                if not throttled(exc):
                    raise
                wait = retry_after(exc)
                if attempt == self.max_attempts:
                    log.error("Teams rate limit: the connector answered 429 to %s in %s %d "
                              "times; giving up, the message was not delivered", what,
                              conversation, attempt)
                    raise TeamsRateLimited(
                        f"Teams kept throttling Ghost's {what} (HTTP 429, {attempt} attempts).",
                        "The message was not delivered: Teams is throttling this thread or the "
                        "tenant's bots; see the bot's log for the conversation.") from exc
                if wait is None:
                    wait = min(2.0 ** attempt, self.max_wait_s)
                wait = min(wait, self.max_wait_s)
                log.warning("Teams rate limit: 429 on %s in %s; retrying in %.1fs "
                            "(attempt %d of %d)", what, conversation, wait, attempt,
                            self.max_attempts)
                self._hold(conversation, wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def card_activity(content: cards.Card, activity_id: str | None = None) -> Activity:
    return Activity(type=ActivityTypes.message, id=activity_id, attachments=[
        Attachment(content_type=cards.CONTENT_TYPE, content=content)])


def text_activity(text: str) -> Activity:
    return Activity(type=ActivityTypes.message, text=text, text_format="markdown")


def thread_reference(activity: Activity) -> tuple[dict[str, Any], str, str]:
    """The reply thread of an incoming message: (reference, channel id, root message id).

    In a channel, the conversation id is ``<channel>;messageid=<root>``; posting to it replies
    in that thread. In a group or personal chat the chat itself is the thread.
    """
    ref = TurnContext.get_conversation_reference(activity)
    conv_id = str(activity.conversation.id)
    channel, _, root = conv_id.partition(";messageid=")
    data = activity.channel_data or {}
    channel = str((data.get("channel") or {}).get("id") or channel)
    if root:
        ref.conversation.id = f"{channel};messageid={root}"
    else:
        root = conv_id
    ref.activity_id = None
    return dict(ref.serialize()), channel, root


def later(call: Callable[[], object]) -> bool:
    """Queue ``call`` for after the HTTP response when a request is being handled."""
    queue = AFTER_RESPONSE.get()
    if queue is None:
        return False
    queue.append(call)
    return True


def team_of(activity: Activity) -> dict[str, str]:
    """The team's group id and tenant from a channel activity, for Graph calls later."""
    data = activity.channel_data or {}
    team = str((data.get("team") or {}).get("aadGroupId") or "")
    tenant = str((data.get("tenant") or {}).get("id") or
                 getattr(activity.conversation, "tenant_id", None) or "")
    return {k: v for k, v in ((TEAM, team), (TENANT, tenant)) if v}


def with_display_names(text: str, conversation_ref: Mapping[str, Any] | None) -> str:
    """Entra ID object ids the engine wrote (the approver, the requester) as display names."""
    for key, name in (conversation_ref or {}).items():
        user = key[len(NAME):] if key.startswith(NAME) else ""
        if user and name and len(user) > 3:
            text = text.replace(user, str(name))
    return text


def names_for(conversation_ref: Mapping[str, Any] | None) -> cards.Names:
    known = conversation_ref or {}

    def name(user: str | None) -> str:
        return str(known.get(NAME + user) or user) if user else "someone"
    return name


class TeamsPort:
    """Implements ``bot.chat.ports.ChatPort`` with botbuilder, from any thread."""

    def __init__(self, adapter: BotAdapter, app_id: str | None, store: Any, loop: LoopThread,
                 policy: ApprovalPolicy, delivery: Delivery | None = None,
                 files: ChannelFiles | None = None) -> None:
        self.adapter = adapter
        self.files = files
        self.app_id = app_id
        self.store = store
        self.loop = loop
        self.policy = policy
        self.delivery = delivery or Delivery()
        #: card edits sent by threads of their own (``background``); None: by the caller
        self.edits: Pump | None = None
        self._latest: dict[str, Callable[[], object]] = {}
        self._latest_lock = threading.Lock()

    def background(self, threads: int = 4) -> None:
        """``ghost serve`` / ``ghost worker``: status-card and approval-card edits go out from
        threads of their own, the newest edit of a card winning, so a worker never sleeps in
        the conversation's pace (about a second) before its next step — an approved command
        waited behind the status card's edit (issue 34)."""
        self.edits = Pump(self._edit_now, threads=threads, name="teams-edits")

    def _edit(self, activity_id: str, edit: Callable[[], object]) -> None:
        """Edit a card now, or hand the edit to ``edits`` (an older one not sent yet is
        dropped: only the newest content of a card matters)."""
        if self.edits is None:
            edit()
            return
        with self._latest_lock:
            self._latest[activity_id] = edit
        self.edits(activity_id)

    def _edit_now(self, activity_id: str) -> None:
        with self._latest_lock:
            edit = self._latest.pop(activity_id, None)
        if edit is not None:
            edit()  # a failure is logged by the pump; the card's next edit replaces it

    # ------------------------------------------------------------------ plumbing
    def _inv(self, session_id: str) -> Any:
        return self.store.get_investigation(session_id)

    def _ref(self, inv: Any) -> ConversationReference:
        stored = (inv.conversation_ref or {}).get(REF)
        if not stored:
            raise GhostError(f"Investigation {inv.session_id} has no Teams conversation "
                             "reference; it was not started from Teams.")
        return ConversationReference().deserialize(stored)

    def _send(self, inv: Any, activities: list[Activity]) -> list[str]:
        """Each activity on its own, paced and retried, so a 429 never re-sends earlier ones."""
        ref = self._ref(inv)
        return [self.delivery.deliver(str(ref.conversation.id), "post",
                                      partial(self._send_one, ref, activity))
                for activity in activities]

    def _send_one(self, ref: ConversationReference, activity: Activity) -> str:
        async def send(ctx: TurnContext) -> str:
            response = await ctx.send_activity(activity)
            return str(response.id) if response and response.id else ""

        return self._proactive(ref, send, hand_back=transient) or ""

    def _update(self, inv: Any, activity: Activity) -> None:
        ref = self._ref(inv)

        async def update(ctx: TurnContext) -> None:
            await ctx.update_activity(activity)

        self.delivery.deliver(str(ref.conversation.id), "card update",
                              partial(self._proactive, ref, update))

    def _proactive(self, ref: ConversationReference,
                   action: Callable[[TurnContext], Awaitable[T]],
                   hand_back: Callable[[BaseException], bool] = throttled) -> T | None:
        """Run ``action`` in a proactive turn, handing a 429 back to this thread to retry.

        botbuilder's pipeline gives a turn's exceptions to ``on_turn_error`` (which logs them),
        so the connector's 429 would never reach :class:`Delivery`; it is caught here instead.
        A new post also hands back a 5xx (``hand_back=transient``): the outbox
        (``bot.chat.outbox``) posts it again later instead of losing it in the log.
        """
        result: list[T] = []
        throttle: list[ErrorResponseException] = []

        async def turn(ctx: TurnContext) -> None:
            try:
                result.append(await action(ctx))
            except ErrorResponseException as exc:
                if not (throttled(exc) or hand_back(exc)):
                    raise
                throttle.append(exc)

        self.loop.run(self.adapter.continue_conversation(ref, turn, self.app_id))
        if throttle:
            raise throttle[0]
        return result[0] if result else None

    def teams_card(self, card: ApprovalCard) -> ApprovalCard:
        """The 'who can approve' line by the Teams approvers (Entra ID users and groups)."""
        return replace(card, needed=approvals_needed(self.policy, card.investigation_requester,
                                                     card.modified_by))

    # ------------------------------------------------------------------ ChatPort
    def post_root(self, channel: str, view: StatusView) -> str:
        raise GhostError("Teams investigations start from a message in a channel: mention "
                         "@Ghost investigate <symptom>.")

    def reply(self, reference: Mapping[str, Any], text: str) -> None:
        """An answer to a command, into the thread it came from (after the response)."""
        if later(partial(self.reply, reference, text)):
            return
        ref = ConversationReference().deserialize(dict(reference))
        self.delivery.deliver(str(ref.conversation.id), "reply",
                              partial(self._send_one, ref, text_activity(text)))

    def post_status(self, inv: Any, view: StatusView) -> str:
        """The status card, first reply in the thread; its id is kept to edit it in place."""
        if later(partial(self.post_status, inv, view)):
            return ""
        (activity_id,) = self._send(inv, [card_activity(
            cards.status_card(view, names_for(inv.conversation_ref)))])
        self.store.update_conversation_ref(inv.session_id, {STATUS_ID: activity_id})
        return activity_id

    def update_status(self, thread: Thread, view: StatusView) -> None:
        if later(partial(self.update_status, thread, view)):
            return
        inv = self._inv(thread.session_id)
        status_id = (inv.conversation_ref or {}).get(STATUS_ID)
        content = cards.status_card(view, names_for(inv.conversation_ref))
        if status_id:
            self._edit(str(status_id), partial(self._update, inv,
                                               card_activity(content, str(status_id))))
        else:
            self.post_status(inv, view)

    def post_text(self, thread: Thread, text: str, *, notice: bool = False) -> None:
        if later(partial(self.post_text, thread, text, notice=notice)):
            return
        inv = self._inv(thread.session_id)
        # a notice is Ghost's own words (with Teams' command syntax, people by display name),
        # not the model's reasoning
        text = (cards.with_names(teams_words(text), names_for(inv.conversation_ref)) if notice
                else "🧠 " + text)
        self._send(inv, [text_activity(cards.plain(cards.clip(text.strip(), 20_000)))])

    def post_command(self, thread: Thread, line: CommandLine) -> None:
        if later(partial(self.post_command, thread, line)):
            return
        self._send(self._inv(thread.session_id), [text_activity(cards.command_text(line))])

    def post_card(self, thread: Thread, card: ApprovalCard) -> dict[str, Any]:
        inv = self._inv(thread.session_id)
        content = cards.approval_card(self.teams_card(card), names=names_for(inv.conversation_ref))
        (activity_id,) = self._send(inv, [card_activity(content)])
        return {"platform": "teams", "session_id": inv.session_id, "activity_id": activity_id}

    def close_card(self, ref: Mapping[str, Any], card: ApprovalCard,
                   outcome: DecisionOutcome) -> None:
        if later(partial(self.close_card, ref, card, outcome)):
            return
        inv = self._inv(str(ref["session_id"]))
        content = cards.approval_card(self.teams_card(card), outcome,
                                      names=names_for(inv.conversation_ref))
        activity_id = str(ref["activity_id"])
        self._edit(activity_id, partial(self._update, inv, card_activity(content, activity_id)))

    def post_prompt(self, thread: Thread, prompt: Prompt) -> dict[str, Any]:
        inv = self._inv(thread.session_id)
        (activity_id,) = self._send(inv, [card_activity(cards.prompt_card(prompt))])
        self.store.update_conversation_ref(inv.session_id, {PROMPT_ID: activity_id})
        return {"platform": "teams", "session_id": inv.session_id, "activity_id": activity_id}

    def close_prompt(self, ref: Mapping[str, Any], prompt: Prompt, by: str | None,
                     choice: str) -> None:
        """Replace the prompt's buttons by who answered, for everyone."""
        if later(partial(self.close_prompt, ref, prompt, by, choice)):
            return
        inv = self._inv(str(ref["session_id"]))
        self._update(inv, card_activity(cards.prompt_card(
            prompt, by, choice, names=names_for(inv.conversation_ref), closed=True),
            str(ref["activity_id"])))

    def post_rca(self, thread: Thread, filename: str, markdown: str, summary: RcaSummary,
                 *, noted: Callable[[str], None] | None = None) -> str | None:
        """The RCA as a file in the channel (Graph), else a summary card and the report.

        People are named by display name. Without the Graph permission (or outside a team) the
        report follows the card as Adaptive Cards, its tables as card tables (Teams messages
        do not render Markdown pipe tables). Returns the file's URL when uploaded.
        """
        inv = self._inv(thread.session_id)
        known = inv.conversation_ref or {}
        markdown = with_display_names(markdown, known)
        if self.files is not None:
            try:
                uploaded = self.files.upload(known.get(TEAM), str(inv.channel_ref),
                                             known.get(TENANT), filename, markdown.encode())
            except FilesRefused as exc:
                log.warning("RCA of %s posted as messages, not as a file: %s", inv.session_id,
                            exc)
            except Exception as exc:  # Graph failed: nothing is in the thread yet, retried
                raise NothingSent(f"The RCA file {filename} was not uploaded to the channel's "
                                  f"files ({type(exc).__name__}: {exc}).") from exc
            else:
                self._send(inv, [card_activity(cards.rca_card(summary, 0, filename)),
                                 Activity(type=ActivityTypes.message,
                                          text=f"The full report: [{uploaded.name}]"
                                               f"({uploaded.url})",
                                          attachments=[Attachment(**uploaded.attachment())])])
                return uploaded.url
        parts = cards.report_cards(markdown)
        self._send(inv, [card_activity(cards.rca_card(summary, len(parts)))]
                   + [card_activity(part) for part in parts])
        return None

    def tell(self, channel: str, user: str, text: str, thread_ref: str | None = None) -> None:
        """Teams has no ephemeral messages in channels: a note in the thread, naming them."""
        if later(partial(self.tell, channel, user, text, thread_ref)):
            return
        inv = self.store.find_by_thread("teams", channel, thread_ref) if thread_ref else None
        if inv is None:
            log.warning("no Teams thread to tell %s: %s", user, text)
            return
        name = names_for(inv.conversation_ref)
        told = cards.with_names(teams_words(text), name)
        self._send(inv, [text_activity(f"{name(user)}: {told}")])


class TeamsDirectory:
    """Who is who in Teams, for the approval rules (``bot.chat.ports.Directory``).

    Membership: Teams delivers a card click only from someone who can see the card, so a
    click (or mention) that came from the investigation's own channel counts as a member
    (``CLICKED_IN``). Groups: Entra ID group ids, checked with ``groups(user, group_ids)``
    (Microsoft Graph in production); nobody is in any group when that is not configured.
    """

    def __init__(self, groups: Callable[[str, list[str]], set[str]] | None = None) -> None:
        self.groups = groups

    def is_member(self, user: str, channel: str) -> bool:
        return CLICKED_IN.get() == (user, channel)

    def in_group(self, user: str, group: str) -> bool:
        if self.groups is None:
            return False
        try:
            return group in self.groups(user, [group])
        except GhostError as exc:  # a GraphError says what to fix; refuse, tell the clicker
            log.error("could not check whether %s is in group %s: %s", user, group, exc)
            GROUP_CHECK_FAILED.set(str(exc))
            return False
        except Exception:  # noqa: BLE001 - a Graph outage must refuse, not crash, the click
            log.exception("could not check whether %s is in group %s", user, group)
            GROUP_CHECK_FAILED.set("Ghost could not check Entra ID group membership; see the "
                                   "bot's log.")
            return False
