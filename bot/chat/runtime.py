"""Driving investigations from a chat thread: start, instruct, finish, cancel, resume, and
what a worker posts after each advance (prompts, the RCA, failures).

Each operation changes the database and makes the investigation runnable; a worker (any
process) does the slow part. What was already posted is recorded in ``conversation_ref`` so a
retry or a restart does not post it again; what is owed and not yet posted is in its outbox
(``bot.chat.outbox``), delivered by the holder, the ``deliver`` job and the reconcile, so a
chat outage delays posts but never fails an investigation (docs/reliability.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from bot.chat.approval_cards import DecisionOutcome, approval_card
from bot.chat.endings import brain_failure, unexpected_failure
from bot.chat.notifier import ChatNotifier, InvestigationCancelled
from bot.chat.orphans import OrphanDesk
from bot.chat.outbox import KEY as OUTBOX_KEY
from bot.chat.outbox import SENT, keyed_port, owes
from bot.chat.ports import ChatPort
from bot.chat.prompt_wording import Prompt, prompt_for
from bot.chat.prompts import (
    CANCELLED,
    DONE,
    EXTENDED,
    MENTIONED,
    PHASES,
    QUEUED,
    AlreadyAnswered,
    NotWaiting,
    PromptBook,
    answer_of,
    answered_by_token,
    check_click,
    entry,
    key_of,
)
from bot.chat.rca_upload import RcaUploads
from bot.chat.status import status_view
from bot.worker import InFlight
from core.engine.loop import Engine, Outcome
from core.errors import GhostError
from core.safety.approval import ApprovalPolicy, Decision
from core.session_state import iso_utc, utc_now
from storage.investigations import PRIORITY_HUMAN

log = logging.getLogger(__name__)
__all__ = ["AlreadyAnswered", "ChatRuntime", "NotWaiting"]

#: ``conversation_ref.root.state`` of an investigation a slash command recorded
ROOT_PENDING, ROOT_POSTING, ROOT_REFUSED = "pending", "posting", "refused"
#: how long a worker waits before trying a root message again after a transient error
ROOT_RETRY_S = 5.0
#: a ``posting`` claim on a root is another process's (or thread's) for this long
ROOT_CLAIM_S = 30.0


def _held(inv: Any, now: datetime) -> bool:
    """Whether a live worker holds the investigation (its lease has not lapsed)."""
    expires = getattr(inv, "lease_expires_at", None)
    if not inv.lease_owner or expires is None:
        return False
    if expires.tzinfo is None:  # SQLite gives naive UTC
        from datetime import UTC
        expires = expires.replace(tzinfo=UTC)
    return bool(expires > now)


class ChatRuntime:
    """The chat-neutral operations behind slash commands, buttons and mentions."""

    def __init__(self, *, store: Any, engine: Engine, notifier: ChatNotifier,
                 port_for: Callable[[str], ChatPort | None],
                 shell_for: Callable[[str], Any], policy: ApprovalPolicy, model: str,
                 audit_dir: str) -> None:
        self.store = store
        self.engine = engine
        self.notifier = notifier
        self.port_for = port_for
        self.shell_for = shell_for
        self.policy = policy
        self.model = model
        self.audit_dir = audit_dir
        #: Called when something became runnable: wakes an in-process worker at once.
        self.kick: Callable[[], None] = lambda: None
        #: The orphan report in the thread; ``build_chat_engine`` gives it an orchestrator.
        self.orphans = OrphanDesk(store, port_for, notifier)
        self.prompts = PromptBook(store)
        #: every post owed to a thread (``bot.chat.outbox``), shared with the notifier
        self.outbox = notifier.outbox
        self.outbox.register("prompt", self._send_prompt)
        self.outbox.register("parked", self._send_parked)
        self.rca = RcaUploads(store, port_for, self.outbox)
        #: Told the requester why the root could not be posted (not invited…): True when the
        #: error is for good; False leaves it queued to try again (the chat front end sets it).
        self.root_refused: Callable[[Any, Exception], bool] = lambda _inv, _exc: False
        #: applies, once, a request recorded in an investigation's inbox before its ack, per
        #: platform (each chat front end registers its own); the ``reconcile`` job uses them
        #: for entries whose process died after the ack
        self.appliers: dict[str, Callable[[str, str], bool]] = {}
        #: the requests being answered; ``ghost serve`` waits for them on SIGTERM
        self.in_flight = InFlight()
        #: posts a slash command's thread root right after its ack (``background``); None:
        #: the worker that claims the investigation posts it (tests, one-off commands)
        self.post_root_soon: Callable[[str], None] | None = None

    def background(self, *, delivery_threads: int = 8, root_threads: int = 4) -> None:
        """``ghost serve`` / ``ghost worker``: thread roots are posted right after the ack by
        threads of their own, and posts owed to threads are sent by background threads, so
        neither a root nor a worker ever waits for a worker thread or the chat's pace
        (``bot.chat.pump``)."""
        from bot.chat.pump import Pump

        self.outbox.pump = Pump(self.outbox.deliver_now, threads=delivery_threads,
                                name="ghost-deliver")
        self.post_root_soon = Pump(self._post_root_now, threads=root_threads,
                                   name="ghost-roots")

    def _post_root_now(self, session_id: str) -> None:
        from bot.worker import TryLater

        try:
            self.open_thread(session_id)
        except TryLater as exc:  # the worker that claims it tries again
            log.info("%s", exc.message)

    def before_advance(self, session_id: str) -> None:
        """A worker holds the lease and is about to advance: the thread's root message if a
        slash command's was not posted yet (``open_thread``), then the orphan report (once)
        and leftovers of an orphan cleanup into ``manual_cleanup_pending`` (never fatal)."""
        self.open_thread(session_id)
        if not self.store.get_investigation(session_id).thread_ref:
            return
        self.deliver(session_id)  # what a previous holder owed the thread, cards included
        try:
            self.orphans.scan(session_id)
            self.orphans.merge_manual(session_id)
        except Exception:  # noqa: BLE001 - the investigation matters more than the report
            log.exception("orphan report of %s failed", session_id)

    def deliver(self, session_id: str) -> int:
        """Owe the cards of pending approvals that have none, then send what the thread is
        owed, in order (never raises: what fails is retried later)."""
        try:
            self.notifier.owe_cards(session_id)
        except Exception:  # noqa: BLE001 - the next holder or reconcile finds them again
            log.exception("could not look for unposted cards of %s", session_id)
        return self.outbox.deliver(session_id)

    def deliver_due(self, now: datetime | None = None) -> int:
        """Every thread's owed posts (cards of pending approvals included) and the RCA uploads
        that are due: the periodic job's part, for investigations nobody holds."""
        count = 0
        now = now or utc_now()
        for inv in self.store.list_investigations(limit=500):
            owed = 0
            if inv.status not in ("completed", "cancelled", "failed") and (
                    inv.status == "awaiting_approval" or not _held(inv, now)):
                # a holder posts its own cards once it saved the investigation as waiting
                owed = self.notifier.owe_cards(inv.session_id)
            if owed or owes(inv):
                count += self.outbox.deliver(inv.session_id)
        return count + self.reconcile_rca(now)

    def reconcile_chat(self, now: datetime) -> int:
        """The periodic catch-up: posts owed to threads, unposted cards and RCA uploads
        (``deliver_due``), orphan cleanups whose
        approval was decided but not continued (the clicking process died, or it expired),
        and requests acked but not applied (``appliers``)."""
        stale = iso_utc(now - timedelta(seconds=30))
        for inv in self.store.list_investigations(statuses=("awaiting_user",), limit=200):
            # a kill between the engine's save and ``after_advance`` left the prompt unowed
            # (nobody advances a waiting investigation): owe it now, once
            # (the same key as the holder's, so a race with a live holder owes it once)
            phase = str((inv.engine_state or {}).get("phase") or "")
            if phase in PHASES and not (inv.conversation_ref or {}).get("queued_instructions"):
                self._owe_prompt(inv, phase)
        count = self.deliver_due(now)
        for inv in self.store.list_investigations(limit=200):
            if ((inv.conversation_ref or {}).get("orphans") or {}).get("waiting"):
                count += self.orphans.continue_waiting(inv.session_id)
            apply = self.appliers.get(inv.platform)
            for key, item in dict((inv.conversation_ref or {}).get("inbox") or {}).items():
                if apply is not None and str(item.get("at") or "") < stale:
                    count += int(apply(inv.session_id, key))  # acked, then its process died
        return count

    def _port(self, platform: str) -> ChatPort:
        port = self.port_for(platform)
        if port is None:
            raise GhostError(f"No chat front end for {platform} is configured.")
        return port

    # ----------------------------------------------------------------- operations
    def accept(self, *, platform: str, channel: str, user: str, symptom: str,
               reply_to: str | None = None, thread: str | None = None,
               conversation_ref: dict[str, Any] | None = None,
               event_key: str | None = None) -> str:
        """Record a slash command whole, before it is acked: one transaction with the row
        (queued), the symptom as the first user turn and "root message not yet posted".
        ``reply_to`` (Slack's response_url) reaches the requester where Ghost cannot post.
        The worker that claims it posts the root (``open_thread``) and runs it.

        A request that starts in its own thread (Teams: the mention's post is the root)
        passes ``thread`` and its ``conversation_ref``; ``event_key`` (the platform's request
        id) is remembered in the same transaction, so a redelivered request is known after a
        crash (:class:`storage.investigations.AlreadySeen`)."""
        from core.engine.history import user_text
        from core.engine.loop import new_engine_state
        from storage.db import acking

        ref: dict[str, Any] = dict(conversation_ref or {})
        ref["root"] = {"state": ROOT_PENDING, **({"in_thread": True} if thread else {})}
        if reply_to:
            ref["reply_to"] = reply_to
        with acking():  # its ack waits for this write: ahead of the workers' (SQLite)
            inv = self.store.create_investigation(
                symptom=symptom, model=self.model, audit_dir=self.audit_dir,
                requested_by=user, platform=platform, channel_ref=channel, thread_ref=thread,
                status="queued", conversation_ref=ref,
                engine_state=new_engine_state(started_at=utc_now()),
                turns=[("user", user_text(symptom))], event_key=event_key)
        return str(inv.session_id)

    def opened(self, session_id: str) -> None:
        """After the ack of an accepted slash command: its root goes out now (``background``),
        ahead of other posts and without waiting for a worker; the worker is woken."""
        if self.post_root_soon is not None:
            self.post_root_soon(session_id)
        self.kick()

    def open_thread(self, session_id: str) -> None:
        """Post the root (status) message of an accepted investigation, once; the worker
        holding its lease calls this before the first step.

        The claim (``root.state`` pending → posting) and the record (``record_root``, which
        keeps the first thread) are compare-and-sets on the row; only the lease holder posts.
        A holder killed between Slack's answer and the record leaves ``posting``: the next
        holder first looks for a root carrying the investigation's key (Slack message
        metadata) and keeps it; only when Slack cannot say does it post again.
        """
        inv = self.store.get_investigation(session_id)
        root = (inv.conversation_ref or {}).get("root") or {}
        if root.get("state") not in (ROOT_PENDING, ROOT_POSTING):
            return
        in_thread = bool(root.get("in_thread"))  # Teams: the thread exists; the status card
        if inv.thread_ref and not in_thread:      # is its root message
            return
        port = self._port(inv.platform)
        now = utc_now()
        at = iso_utc(now)

        def claim(ref: dict[str, Any]) -> str:
            current = ref.get("root") or {}
            state = current.get("state")
            if state == ROOT_POSTING and str(current.get("until") or "") > at:
                return "busy"  # another thread or process is posting it right now
            if state not in (ROOT_PENDING, ROOT_POSTING):
                return "done"
            ref["root"] = {**current, "state": ROOT_POSTING, "at": at,
                           "until": iso_utc(now + timedelta(seconds=ROOT_CLAIM_S)),
                           "attempts": int(current.get("attempts") or 0) + 1}
            return "claimed"

        claimed = self.store.change_conversation_ref(session_id, claim)
        if claimed == "busy":
            from bot.worker import TryLater

            raise TryLater(f"The root message of {session_id} is being posted by another "
                           "thread; going on once it is in.", retry_in=1.0)
        if claimed != "claimed":
            return
        # a holder killed mid-post left "posting": look for its root before posting another
        port = keyed_port(port, f"root:{session_id}", root.get("state") == ROOT_POSTING)
        try:
            ahead = self.store.queue_position(session_id) if inv.status == "queued" else None
            view = status_view(inv, ahead=ahead)
            if in_thread:
                ts = str(port.post_status(inv, view))  # type: ignore[attr-defined]
            else:
                ts = port.post_root(str(inv.channel_ref), view)
        except Exception as exc:  # noqa: BLE001 - refused for good, or try again later
            self._root_not_posted(inv, exc)
            return
        if in_thread:
            self.store.change_conversation_ref(session_id, lambda ref: ref.__setitem__(
                "root", {**(ref.get("root") or {}), "state": "posted", "ts": ts, "at": at}))
            return
        self.store.record_root(session_id, ts, {"state": "posted", "ts": ts, "at": at})

    def _root_not_posted(self, inv: Any, error: Exception) -> None:
        sid = str(inv.session_id)

        def back(state: str, why: str) -> Callable[[dict[str, Any]], None]:
            return lambda ref: ref.__setitem__("root", {**(ref.get("root") or {}),
                                                        "state": state, "error": why})

        if ((inv.conversation_ref or {}).get("root") or {}).get("in_thread"):
            # the thread exists (Teams): the investigation goes on; the status card is posted
            # by the next status refresh that reaches the platform
            log.warning("could not post the status card of %s (%s: %s); the next status "
                        "update posts it", sid, type(error).__name__, error)
            self.store.change_conversation_ref(sid, back("deferred", str(error)[:200]))
            return
        if self.root_refused(inv, error):  # the requester was told what to fix
            self.store.change_conversation_ref(sid, back(ROOT_REFUSED, str(error)[:200]))
            self.store.set_status(sid, "failed")
            return
        from bot.worker import TryLater

        self.store.change_conversation_ref(sid, back(ROOT_PENDING, str(error)[:200]))
        raise TryLater(f"Could not post the root message of {sid} ({type(error).__name__}); "
                       "trying again shortly.", retry_in=ROOT_RETRY_S) from error

    def _live(self, session_id: str) -> Any:
        inv = self.store.get_investigation(session_id)
        if inv.status == "completed":
            raise NotWaiting(f"Investigation {session_id} is finished and not waiting for "
                             "anything; its RCA is in the thread.")
        if inv.status == "cancelled":
            raise NotWaiting(f"Investigation {session_id} was cancelled and is not waiting; "
                             f"`/ghost resume {session_id}` picks it up again.")
        return inv

    def instruct(self, session_id: str, text: str, *, actor: str | None = None,
                 choice: str = MENTIONED, key: str | None = None,
                 clicked: bool = False, token: str | None = None) -> None:
        """Send an instruction as the next user turn: a Continue click (``clicked``, with the
        prompt's ``key``), a mention, queued instructions. The open prompt is answered.
        ``token`` names the recorded request (its inbox key): applied again after a crash, it
        does what is left and nothing twice."""
        self._answer(session_id, ("awaiting_user",), lambda inv: (
            f"Investigation {session_id} is not waiting for an instruction right now "
            f"({status_view(inv).phase})."), lambda: self.engine.instruct(session_id, text),
            actor, choice, key, clicked, token)

    def check_prompt(self, session_id: str, key: str | None) -> None:
        """Before a Continue modal opens: :class:`AlreadyAnswered` for an old prompt."""
        check_click(self.store.get_investigation(session_id), key)

    def _answer(self, session_id: str, phases: tuple[str, ...], why: Callable[[Any], str],
                act: Callable[[], None], actor: str | None, choice: str, key: str | None,
                clicked: bool, token: str | None = None) -> None:
        """Answer the prompt Ghost waits on, once: claim it (first answer wins in every
        process), act, and show the answer on the prompt's messages instead of buttons.

        With ``token`` (the recorded request's key) it may be applied again after a crash:
        a claim already carrying that token is this request's own, so what is left is done
        (the act, if the investigation still waits at that prompt) and nothing twice."""
        inv = self.store.get_investigation(session_id)
        mine = answered_by_token(inv, token)
        if mine is not None:
            if key_of(inv) == mine:  # claimed, then the process died before the act
                act()
                self.store.requeue(session_id, from_statuses=("awaiting_user", "running"),
                                   priority=PRIORITY_HUMAN)
            self.close_prompt(session_id, mine)
            self.notifier.refresh_status(session_id)
            return
        if clicked:
            check_click(inv, key)
        inv = self._live(session_id)
        current = key_of(inv)
        if (inv.engine_state or {}).get("phase") not in phases or current is None:
            raise NotWaiting(why(inv))
        answer = self.prompts.claim(session_id, current, actor, choice, token)
        try:
            act()
        except BaseException:
            self.prompts.release(session_id, current, answer)
            raise
        # a person answered: this resumption goes ahead of model turns (the decision lane)
        self.store.requeue(session_id, from_statuses=("awaiting_user", "running"),
                           priority=PRIORITY_HUMAN)
        self.close_prompt(session_id, current)
        self.notifier.refresh_status(session_id)

    def close_prompt(self, session_id: str, key: str) -> None:
        """Replace the buttons of the prompt ``key`` by its answer, on every message of it."""
        inv = self.store.get_investigation(session_id)
        item, answer = entry(inv, key), answer_of(inv, key)
        port = self.port_for(inv.platform)
        if port is None or answer is None:
            return
        prompt = prompt_for(key.partition(":")[0], session_id,
                            int(item.get("max_turns") or 50), key)
        for where in item.get("refs") or []:
            try:
                port.close_prompt(where, prompt, answer.by, answer.choice)
            except Exception:  # noqa: BLE001 - the answer stands; a stale button is refused
                log.exception("could not close prompt %s of %s", key, session_id)

    def queue_instruction(self, session_id: str, user: str, text: str, *,
                          take: str | None = None) -> int | None:
        """Keep an instruction that came while Ghost was busy; it is sent as the next user
        turn once Ghost waits for one. Stored in the database; returns how many wait.
        ``take``: the inbox entry it came from, removed in the same transaction (None is
        returned, and nothing queued, when it was taken already: queued once)."""
        item = {"user": user, "text": text}

        def push(ref: dict[str, Any]) -> int | None:
            if take is not None and (ref.get("inbox") or {}).pop(take, None) is None:
                return None
            queue = ref.setdefault("queued_instructions", [])
            queue.append(item)
            return len(queue)

        queued = self.store.change_conversation_ref(session_id, push)
        return None if queued is None else int(queued)

    def deliver_queued(self, session_id: str) -> list[dict[str, Any]]:
        """Send the queued instructions if Ghost waits for one; what was sent (or nothing)."""
        inv = self.store.get_investigation(session_id)
        if inv.status in ("cancelled", "completed") or \
                (inv.engine_state or {}).get("phase") != "awaiting_user" or \
                not (inv.conversation_ref or {}).get("queued_instructions"):
            return []
        taken: list[dict[str, Any]] = self.store.change_conversation_ref(
            session_id, lambda ref: ref.pop("queued_instructions", None) or [])
        if not taken:
            return []  # another process delivered them
        try:
            self.instruct(session_id, "\n\n".join(str(i["text"]) for i in taken),
                          actor=str(taken[0].get("user") or "") or None, choice=QUEUED)
        except NotWaiting:  # someone answered in between: keep them for the next time
            self.store.change_conversation_ref(session_id, lambda ref: ref.__setitem__(
                "queued_instructions", taken + list(ref.get("queued_instructions") or [])))
            return []
        return taken

    def finish(self, session_id: str, *, actor: str | None = None, choice: str = DONE,
               key: str | None = None, clicked: bool = False,
               token: str | None = None) -> None:
        self._answer(session_id, PHASES, lambda inv: (
            f"Investigation {session_id} is not waiting for Done right now."),
            lambda: self.engine.finish(session_id), actor, choice, key, clicked, token)

    def extend(self, session_id: str, *, actor: str | None = None, choice: str = EXTENDED,
               key: str | None = None, clicked: bool = False,
               token: str | None = None) -> None:
        self._answer(session_id, ("turn_limit",), lambda inv: (
            f"Investigation {session_id} is not at its turn limit."),
            lambda: self.engine.extend(session_id), actor, choice, key, clicked, token)

    def cancel(self, session_id: str, actor: str) -> int:
        """Stop an investigation; its pending approvals are closed (nothing else runs)."""
        inv = self.store.get_investigation(session_id)
        if inv.status in ("completed", "cancelled"):
            raise NotWaiting(f"Investigation {session_id} is already {inv.status}.")
        self.store.set_status(session_id, "cancelled")
        current = key_of(inv)
        if current is not None and answer_of(inv, current) is None:
            try:  # the open Continue / Done prompt shows the cancel instead of buttons
                self.prompts.claim(session_id, current, actor, CANCELLED)
                self.close_prompt(session_id, current)
            except AlreadyAnswered:
                pass
        closed = 0
        shell = self.shell_for(session_id)
        for approval in self.store.approvals(session_id, statuses=("pending",)):
            if shell.decide(approval.approval_id, Decision.abandon(
                    actor, "the investigation was cancelled")) is not None:  # card names who
                closed += 1
                self.close_card(approval.approval_id)
        self.notifier.refresh_status(session_id)
        return closed

    def resume(self, session_id: str, *, actor: str | None = None) -> str:
        """Make it runnable again; for a finished one whose RCA upload was not confirmed,
        upload the RCA again (the person asked for it). What happened, in one line. A parked
        investigation's Resume button shows who resumed it."""
        inv = self.store.get_investigation(session_id)
        parked = (inv.engine_state or {}).get("outage") or {}
        if inv.status == "parked" and parked.get("since"):
            parked_key = f"parked:{parked['since']}"
            try:
                self.prompts.claim(session_id, parked_key, actor, "Resumed")
                self.close_prompt(session_id, parked_key)
            except AlreadyAnswered:
                pass
        if inv.status == "completed":
            if (inv.conversation_ref or {}).get("rca_posted") or not inv.rca_markdown:
                raise NotWaiting(f"Investigation {session_id} is finished; its RCA is in the "
                                 "thread.")
            self.store.change_conversation_ref(session_id,
                                               lambda ref: ref.pop("rca_upload", None))
            if self.post_rca_once(session_id):
                return f"Uploaded the RCA of `{session_id}` into its thread again."
            raise NotWaiting(f"The RCA of `{session_id}` is being uploaded already.")
        if inv.lease_owner and inv.lease_expires_at and inv.lease_expires_at > utc_now():
            # a live worker holds it: "resuming" would mark its running command interrupted
            raise NotWaiting(f"Investigation {session_id} is running: a Ghost worker is "
                             "working on it right now, so there is nothing to resume.")
        if ((inv.conversation_ref or {}).get("root") or {}).get("state") == ROOT_REFUSED:
            self.store.change_conversation_ref(session_id, lambda ref: ref.__setitem__(
                "root", {**ref["root"], "state": ROOT_PENDING}))  # invited since: post it now
        try:
            self.engine.mark_resumed(session_id)
        except InvestigationCancelled:  # saved; a resumed cancel moves on just below
            pass
        phase = (self.store.get_investigation(session_id).engine_state or {}).get("phase")
        if phase in PHASES:  # ask again in the thread; the new prompt takes answers
            key = key_of(self.store.get_investigation(session_id))
            if key is not None:
                self.prompts.reopen(session_id, key)
            self.store.update_conversation_ref(session_id, {"prompted": None})
        self.store.set_status(session_id, "queued")
        self.notifier.refresh_status(session_id)  # not "Stopped on an error" any more
        return f"Resuming `{session_id}` in its thread."

    def close_card(self, approval_id: str, outcome: DecisionOutcome | None = None) -> None:
        """Replace a decided card's buttons by its outcome, for everyone."""
        from bot.chat.approval_cards import outcome_of

        approval = self.store.get_approval(approval_id)
        if approval is None or not approval.message_ref:
            return
        inv = self.store.get_investigation(approval.session_id)
        port = self.port_for(inv.platform)
        if port is None:
            return
        if outcome is not None and outcome.result == "approved" and \
                outcome.stage not in ("executed", "interrupted") and \
                approval.status in ("executed", "interrupted"):
            return  # the command already ran: the worker's "ran (exit N)" card is newer
        card = approval_card(approval, inv, self.policy)
        port.close_card(approval.message_ref, card, outcome or outcome_of(approval))

    # ----------------------------------------------------------- after each advance
    def after_advance(self, session_id: str, outcome: Outcome) -> None:
        inv = self.store.get_investigation(session_id)
        port = self.port_for(inv.platform)
        if port is None:
            return
        ref = inv.conversation_ref or {}
        if outcome.kind == "awaiting_user" and ref.get("queued_instructions"):
            taken = self.deliver_queued(session_id)
            if taken:
                self.outbox.send(session_id, "text", {
                    "text": f"Sending Ghost the {len(taken)} instruction(s) left in this "
                            "thread while it was busy.", "notice": True})
                self.notifier.refresh_status(session_id)
                self.kick()
                return
        if outcome.kind in PHASES:
            self._owe_prompt(inv, outcome.kind)
        elif outcome.kind == "parked":
            self._owe_parked(inv)
        elif outcome.kind == "completed":
            self.post_rca_once(session_id)
        self.deliver(session_id)
        self.notifier.refresh_status(session_id)

    def _owe_prompt(self, inv: Any, kind: str) -> bool:
        """Owe the thread the Continue / Done (or Extend / Generate RCA) prompt of this
        phase unless it was posted, answered or is owed already; True when it is owed now."""
        key = f"{kind}:{int(inv.state.get('turn_count') or 0)}"
        ref = inv.conversation_ref or {}
        if ref.get("prompted") == key or answer_of(inv, key) is not None:
            return False
        owed = ((ref.get(OUTBOX_KEY) or {}).get("items") or {})
        if any(str(k).startswith(f"prompt:{key}:") and v.get("state") != SENT
               for k, v in owed.items()):
            return False
        max_turns = int((inv.engine_state or {}).get("max_turns") or 50)
        asked = len(entry(inv, key).get("refs") or [])  # resume asks again
        self.outbox.owe(inv.session_id, "prompt", {"key": key, "max_turns": max_turns},
                        key=f"prompt:{key}:{asked}")
        return True

    def _owe_parked(self, inv: Any) -> None:
        """Gemini stayed unavailable past the limit: say so once, with a Resume button."""
        outage = (inv.engine_state or {}).get("outage") or {}
        key = f"parked:{outage.get('since') or int(inv.state.get('turn_count') or 0)}"
        self.outbox.owe(inv.session_id, "parked", {"key": key, "error": str(
            outage.get("error") or "no answer"), "minutes": self.engine.outage.limit_s / 60},
            key=key)

    def _send_parked(self, inv: Any, port: ChatPort, payload: Any) -> None:
        """The outbox's sender for the parked notice and its Resume button."""
        if inv.status != "parked":
            return  # resumed before the notice went out
        from bot.chat.endings import parked

        text = parked(str(inv.session_id), str(payload["error"]), float(payload["minutes"]))
        key = str(payload["key"])
        where = port.post_prompt(inv, Prompt("parked", str(inv.session_id), "⚠️ " + text, key))
        self.prompts.posted(str(inv.session_id), key, where, 0)

    def _send_prompt(self, inv: Any, port: ChatPort, payload: Any) -> None:
        """The outbox's sender for Continue / Done (Extend / Generate RCA) prompts."""
        sid, key = str(inv.session_id), str(payload["key"])
        if answer_of(inv, key) is not None:
            return  # answered (a mention, /ghost done) before the prompt went out
        max_turns = int(payload["max_turns"])
        where = port.post_prompt(inv, prompt_for(key.partition(":")[0], sid, max_turns, key))
        self.prompts.posted(sid, key, where, max_turns)
        if answer_of(self.store.get_investigation(sid), key) is not None:
            self.close_prompt(sid, key)  # answered while it was being posted

    # ------------------------------------------------------------------ the RCA file
    def post_rca_once(self, session_id: str, now: datetime | None = None) -> bool:
        """Upload the RCA unless an upload is claimed or done (``bot.chat.rca_upload``)."""
        return self.rca.post_once(session_id, now)

    def reconcile_rca(self, now: datetime, stale_after: timedelta | None = None) -> int:
        """Finished investigations' RCA files: uploaded, retried, or checked."""
        return self.rca.reconcile(now, stale_after)

    def failed(self, session_id: str, error: BaseException) -> None:
        """Tell the thread what went wrong and what to do; the investigation is saved."""
        from core.engine.loop import BrainUnavailable

        inv = self.store.get_investigation(session_id)
        if inv.status == "cancelled":  # the cancel stands; nothing to report
            return
        self.store.set_status(session_id, "failed")
        port = self.port_for(inv.platform)
        if isinstance(error, BrainUnavailable):
            cause = error.__cause__
            text = brain_failure(session_id, error.message,
                                 transient=bool(getattr(cause, "transient", True)))
        elif isinstance(error, GhostError):
            text = unexpected_failure(session_id, error.message)
        else:
            text = unexpected_failure(session_id, type(error).__name__)
        if port is not None and inv.channel_ref and inv.thread_ref:
            self.outbox.send(session_id, "text", {"text": "⚠️ " + text, "notice": True},
                             key=f"failed:{iso_utc(utc_now())}")  # each failure is told
        self.notifier.refresh_status(session_id)

    def prompt(self, session_id: str, kind: str, key: str | None = None) -> Prompt:
        """The prompt as it was posted (``key``), or as it would read now."""
        inv = self.store.get_investigation(session_id)
        max_turns = (entry(inv, key).get("max_turns") if key else None) or \
            (inv.engine_state or {}).get("max_turns") or 50
        if key:
            kind = key.partition(":")[0] or kind
        return prompt_for(kind, session_id, int(max_turns), key)
