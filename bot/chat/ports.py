"""What the chat-neutral layer needs from a chat platform (Slack now, Teams later)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from bot.chat.approval_cards import ApprovalCard, DecisionOutcome
from bot.chat.command_lines import CommandLine
from bot.chat.endings import RcaSummary
from bot.chat.prompt_wording import Prompt
from bot.chat.status import StatusView


class Thread(Protocol):
    """Where an investigation lives in chat."""

    @property
    def session_id(self) -> str: ...
    @property
    def channel_ref(self) -> str | None: ...
    @property
    def thread_ref(self) -> str | None: ...


class ChatPort(Protocol):
    """Posting into one platform. Every method is safe to call from any process."""

    def post_root(self, channel: str, view: StatusView) -> str:
        """Post the status message that starts the thread; return the thread reference."""
        ...

    def update_status(self, thread: Thread, view: StatusView) -> None: ...

    def post_text(self, thread: Thread, text: str, *, notice: bool = False) -> None:
        """The model's reasoning (marked as such), or with ``notice`` Ghost's own notice (an
        error, the orphan report's line), which must not read as the model's words."""
        ...

    def post_command(self, thread: Thread, line: CommandLine) -> None: ...

    def post_card(self, thread: Thread, card: ApprovalCard) -> dict[str, Any]:
        """Post an approval card; return where it is, to update it for everyone later."""
        ...

    def close_card(self, ref: Mapping[str, Any], card: ApprovalCard,
                   outcome: DecisionOutcome) -> None:
        """Replace the card's buttons by the outcome."""
        ...

    def post_prompt(self, thread: Thread, prompt: Prompt) -> dict[str, Any] | None:
        """Post Continue / Done (or Extend / Generate RCA); return where it is."""
        ...

    def close_prompt(self, ref: Mapping[str, Any], prompt: Prompt, by: str | None,
                     choice: str) -> None:
        """Replace the prompt's buttons by who answered it and how, for everyone."""
        ...

    def post_rca(self, thread: Thread, filename: str, markdown: str, summary: RcaSummary,
                 *, noted: Callable[[str], None] | None = None) -> str | None:
        """Upload the RCA into the thread; the platform's file id when it has one.

        Raises ``bot.chat.outbox.NothingSent`` when it failed before anything reached the
        thread (retried by itself). A port that can check afterwards whether a file arrived
        has ``rca_arrived(thread, file_id) -> bool | None`` and calls ``noted(file_id)``
        before the step that puts the file into the thread."""
        ...

    def tell(self, channel: str, user: str, text: str, thread_ref: str | None = None) -> None:
        """Tell one person only (a refusal, "already decided by …")."""
        ...


class KeyedPosts(Protocol):
    """What a port offers when the platform can find a message again by a key it carries
    (Slack: message metadata, read back with ``conversations.replies``). Optional: the
    outbox uses it when a port has ``keyed``; a port without it (Teams) posts as before."""

    def keyed(self, key: str, *, check: bool = False) -> ChatPort:
        """The port, with the thread posts it makes carrying ``key``. With ``check`` (an
        earlier attempt may have arrived: its claim lapsed, or it failed with a 5xx or a
        timeout), a post first looks for a message with ``key`` in the thread (a root: in
        the channel) and returns that one instead of posting again; when the look-up fails
        it posts (and logs)."""
        ...


class Directory(Protocol):
    """Who is who: channel membership and user groups, for the approval rules."""

    def is_member(self, user: str, channel: str) -> bool: ...

    def in_group(self, user: str, group: str) -> bool:
        """False when ``group`` is not a group id on this platform."""
        ...
