"""The chat port for Slack: posting into an investigation's thread, paced per channel."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler

from bot.chat.approval_cards import ApprovalCard, DecisionOutcome
from bot.chat.command_lines import CommandLine
from bot.chat.endings import RcaSummary
from bot.chat.orphans import OrphanReport
from bot.chat.outbox import NothingSent, transient
from bot.chat.ports import Thread
from bot.chat.prompt_wording import Prompt
from bot.chat.status import StatusView
from bot.slack import blocks
from bot.slack.client import Pacer, ServerErrorRetry

log = logging.getLogger(__name__)

#: the ``event_type`` of the message metadata that carries an outbox key (``keyed``)
OUTBOX_EVENT = "ghost_outbox"
#: how many pages of ``conversations.replies`` a look-up reads before it gives up (200 each)
LOOKUP_PAGES = 10


class SlackPort:
    """Implements ``bot.chat.ports.ChatPort`` over the Web API."""

    def __init__(self, client: WebClient, pacer: Pacer | None = None) -> None:
        self.client = client
        self.pacer = pacer or Pacer()
        #: set on the copy ``keyed`` returns: the outbox key its thread posts carry
        self.key: str | None = None
        self.check = False

    def keyed(self, key: str, *, check: bool = False) -> SlackPort:
        """This port, with its posts carrying ``key`` in their message metadata; with
        ``check``, a post first looks for a message with that key in the thread (a root: in
        the channel's recent history) and returns it instead of posting again
        (``bot.chat.ports.KeyedPosts``)."""
        view = copy.copy(self)  # the same client and pacer
        view.key, view.check = key, check
        return view

    def _post(self, channel: str, thread: str | None, content: tuple[Any, str]) -> str:
        if self.key is not None and self.check:
            found = self.posted(channel, thread, self.key)
            if found is not None:
                log.info("the %s message was already in %s (ts %s); not posted again",
                         self.key, thread or channel, found)
                return found
        self.pacer.wait(channel, kind="root" if thread is None else "post")
        blocks_, text = content
        metadata = None if self.key is None else {
            "event_type": OUTBOX_EVENT, "event_payload": {"key": self.key}}
        client = self.client if self.key is None else _without_blind_retries(self.client)
        response = client.chat_postMessage(channel=channel, thread_ts=thread,
                                           blocks=blocks_, text=text, metadata=metadata)
        return str(response["ts"])

    def posted(self, channel: str, thread: str | None, key: str) -> str | None:
        """The ts of the thread's message (``thread`` None: the channel's, newest first)
        whose metadata carries ``key``; None when there is none, or when Slack cannot say
        (logged: the caller posts, a duplicate beats a loss). Needs ``channels:history`` /
        ``groups:history``; Tier 3 (50+ a minute), asked only when an earlier attempt may
        have arrived, so it is not paced."""
        cursor: str | None = None
        try:
            for _ in range(LOOKUP_PAGES):
                if thread is None:
                    page = self.client.conversations_history(
                        channel=channel, include_all_metadata=True, limit=200, cursor=cursor)
                else:
                    page = self.client.conversations_replies(
                        channel=channel, ts=thread, include_all_metadata=True, limit=200,
                        cursor=cursor)
                for message in page.get("messages") or []:
                    meta = message.get("metadata") or {}
                    if (meta.get("event_type") == OUTBOX_EVENT
                            and (meta.get("event_payload") or {}).get("key") == key):
                        return str(message["ts"])
                cursor = (page.get("response_metadata") or {}).get("next_cursor") or None
                if not cursor:
                    return None
        except SlackApiError as exc:
            log.warning("could not look for the %s message in %s (%s); posting it "
                        "(it may appear twice)", key, thread or channel,
                        exc.response.get("error"))
            return None
        except Exception as exc:  # noqa: BLE001 - posting beats losing the message
            log.warning("could not look for the %s message in %s (%s: %s); posting "
                        "it (it may appear twice)", key, thread or channel, type(exc).__name__,
                        exc)
            return None
        log.warning("%s is longer than %d pages; the %s message was not found there",
                    thread or channel, LOOKUP_PAGES, key)
        return None

    def _update(self, channel: str, ts: str, content: tuple[Any, str], *,
                wait: bool = True) -> None:
        """Edits have their own budget (chat.update's limit is not chat.postMessage's) and
        are coalesced per message: the newest edit wins. ``wait=False`` hands the edit to the
        pacer's background editor (status lines: the worker need not wait its turn)."""
        blocks_, text = content
        self.pacer.update(channel, ts, lambda: self.client.chat_update(
            channel=channel, ts=ts, blocks=blocks_, text=text), wait=wait)

    def post_root(self, channel: str, view: StatusView) -> str:
        return self._post(channel, None, blocks.status_message(view))

    def update_status(self, thread: Thread, view: StatusView) -> None:
        if thread.channel_ref and thread.thread_ref:
            self._update(thread.channel_ref, thread.thread_ref, blocks.status_message(view),
                         wait=False)

    def post_text(self, thread: Thread, text: str, *, notice: bool = False) -> None:
        content = blocks.notice_message(text) if notice else blocks.reasoning_message(text)
        self._post(str(thread.channel_ref), thread.thread_ref, content)

    def post_command(self, thread: Thread, line: CommandLine) -> None:
        self._post(str(thread.channel_ref), thread.thread_ref, blocks.command_message(line))

    def post_card(self, thread: Thread, card: ApprovalCard) -> dict[str, Any]:
        channel = str(thread.channel_ref)
        ts = self._post(channel, thread.thread_ref, blocks.approval_card(card))
        return {"platform": "slack", "channel": channel, "ts": ts,
                "thread_ts": thread.thread_ref}

    def close_card(self, ref: Mapping[str, Any], card: ApprovalCard,
                   outcome: DecisionOutcome) -> None:
        self._update(str(ref["channel"]), str(ref["ts"]), blocks.approval_card(card, outcome))

    def post_prompt(self, thread: Thread, prompt: Prompt) -> dict[str, Any]:
        channel = str(thread.channel_ref)
        ts = self._post(channel, thread.thread_ref, blocks.prompt_message(prompt))
        return {"platform": "slack", "channel": channel, "ts": ts}

    def close_prompt(self, ref: Mapping[str, Any], prompt: Prompt, by: str | None,
                     choice: str) -> None:
        self._update(str(ref["channel"]), str(ref["ts"]),
                     blocks.prompt_message(prompt, by, choice, closed=True))

    def post_rca(self, thread: Thread, filename: str, markdown: str, summary: RcaSummary,
                 *, noted: Callable[[str], None] | None = None) -> str | None:
        """``files_upload_v2``'s three calls, told apart: a failure of the first two
        (the upload URL, the bytes) left nothing in the thread (``NothingSent``), and so does
        a definite refusal of the third; only a 5xx, timeout or crash at
        ``files.completeUploadExternal`` leaves it unknown (``rca_arrived`` finds out)."""
        channel = str(thread.channel_ref)
        data = markdown.encode()
        self.pacer.wait(channel)
        try:
            got = self.client.files_getUploadURLExternal(filename=filename, length=len(data))
            file_id, url = str(got["file_id"]), str(got["upload_url"])
            if noted is not None:
                noted(file_id)
            sent = self.client._upload_file(  # noqa: SLF001 - files_upload_v2's own step 2
                url=url, data=data, logger=self.client._logger,  # noqa: SLF001
                timeout=self.client.timeout, proxy=self.client.proxy, ssl=self.client.ssl)
            if sent.status != 200:
                raise SlackRequestError(f"the file upload answered HTTP {sent.status}")
        except Exception as exc:
            raise NothingSent(f"The RCA file {filename} was not uploaded "
                              f"({type(exc).__name__}: {exc}).") from exc
        try:
            self.client.files_completeUploadExternal(
                files=[{"id": file_id, "title": filename}], channel_id=channel,
                thread_ts=thread.thread_ref, initial_comment=blocks.rca_comment(summary))
        except SlackApiError as exc:
            if not transient(exc):  # Slack answered, and said no: nothing was shared
                raise NothingSent(f"Slack refused to share the RCA file {filename}: "
                                  f"{exc.response.get('error')}.") from exc
            raise
        return file_id

    def rca_arrived(self, thread: Thread, file_id: str) -> bool | None:
        """Whether the file is shared in the thread's channel (``files.info``); None when
        Slack cannot say now."""
        try:
            info = self.client.files_info(file=file_id)
        except SlackApiError as exc:
            if exc.response.get("error") == "file_not_found":
                return False
            log.warning("files.info %s: %s", file_id, exc.response.get("error"))
            return None
        except Exception as exc:  # noqa: BLE001 - asked again on the next reconcile
            log.warning("files.info %s: %s: %s", file_id, type(exc).__name__, exc)
            return None
        file = info.get("file") or {}
        channel = str(thread.channel_ref)
        shares = file.get("shares") or {}
        if any(channel in (shares.get(scope) or {}) for scope in ("public", "private")):
            return True
        return channel in [*(file.get("channels") or []), *(file.get("groups") or [])]

    def post_orphan_report(self, thread: Thread, report: OrphanReport) -> dict[str, Any]:
        channel = str(thread.channel_ref)
        ts = self._post(channel, thread.thread_ref, blocks.orphan_report(report))
        return {"platform": "slack", "channel": channel, "ts": ts}

    def update_orphan_report(self, ref: Mapping[str, Any], report: OrphanReport) -> None:
        self._update(str(ref["channel"]), str(ref["ts"]), blocks.orphan_report(report))

    def tell(self, channel: str, user: str, text: str, thread_ref: str | None = None) -> None:
        try:
            self.client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ref,
                                           text=blocks.mentions(text))
        except SlackApiError as exc:  # e.g. the bot is not in the channel: log, do not fail
            log.warning("could not tell %s in %s: %s", user, channel, exc.response.get("error"))


def _without_blind_retries(client: WebClient) -> WebClient:
    """``client`` without its retries of a 5xx or a dropped connection: Slack may have
    stored the post before failing, and the client's blind retry would show it twice. A
    keyed post leaves those to the outbox, which looks for the key before it posts again;
    429 retries stay (a rate-limited post was not stored)."""
    view = copy.copy(client)  # per post: a test's patch of the client's method is kept
    view.retry_handlers = [h for h in client.retry_handlers or []
                           if not isinstance(h, (ServerErrorRetry, ConnectionErrorRetryHandler))]
    return view


class SlackDirectory:
    """Channel membership and user-group membership (``bot.chat.ports.Directory``)."""

    def __init__(self, client: WebClient) -> None:
        self.client = client

    def is_member(self, user: str, channel: str) -> bool:
        if not channel:  # not a Slack investigation's channel: nobody is a member of it
            return False
        cursor: str | None = None
        for _ in range(100):
            response = self.client.conversations_members(channel=channel, cursor=cursor,
                                                         limit=1000)
            if user in (response.get("members") or []):
                return True
            cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
            if not cursor:
                return False
        return False

    def in_group(self, user: str, group: str) -> bool:
        if not group.startswith("S"):
            return False
        response = self.client.usergroups_users_list(usergroup=group)
        return user in (response.get("users") or [])
