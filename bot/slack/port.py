"""The chat port for Slack: posting into an investigation's thread, paced per channel."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.chat.content import (
    ApprovalCard,
    CommandLine,
    DecisionOutcome,
    Prompt,
    RcaSummary,
    StatusView,
)
from bot.chat.orphans import OrphanReport
from bot.chat.ports import Thread
from bot.slack import blocks
from bot.slack.client import Pacer

log = logging.getLogger(__name__)


class SlackPort:
    """Implements ``bot.chat.ports.ChatPort`` over the Web API."""

    def __init__(self, client: WebClient, pacer: Pacer | None = None) -> None:
        self.client = client
        self.pacer = pacer or Pacer()

    def _post(self, channel: str, thread: str | None, content: tuple[Any, str]) -> str:
        self.pacer.wait(channel)
        blocks_, text = content
        response = self.client.chat_postMessage(channel=channel, thread_ts=thread,
                                                blocks=blocks_, text=text)
        return str(response["ts"])

    def _update(self, channel: str, ts: str, content: tuple[Any, str]) -> None:
        self.pacer.wait(channel)
        blocks_, text = content
        self.client.chat_update(channel=channel, ts=ts, blocks=blocks_, text=text)

    def post_root(self, channel: str, view: StatusView) -> str:
        return self._post(channel, None, blocks.status_message(view))

    def update_status(self, thread: Thread, view: StatusView) -> None:
        if thread.channel_ref and thread.thread_ref:
            self._update(thread.channel_ref, thread.thread_ref, blocks.status_message(view))

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

    def post_rca(self, thread: Thread, filename: str, markdown: str,
                 summary: RcaSummary) -> str | None:
        channel = str(thread.channel_ref)
        self.pacer.wait(channel)
        response = self.client.files_upload_v2(channel=channel, thread_ts=thread.thread_ref,
                                    filename=filename, title=filename,
                                    content=markdown, initial_comment=blocks.rca_comment(summary))
        file = response.get("file") or {}
        return str(file["id"]) if isinstance(file, dict) and file.get("id") else None

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


class SlackDirectory:
    """Channel membership and user-group membership (``bot.chat.ports.Directory``)."""

    def __init__(self, client: WebClient) -> None:
        self.client = client

    def is_member(self, user: str, channel: str) -> bool:
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
