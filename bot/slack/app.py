"""The bolt app: settings checked, listeners registered, retries deduplicated, one error handler.

``build_slack`` is what ``ghost serve`` and the tests use; tests pass their own executor (so a
dispatch returns after the listener finished) and point ``SLACK_API_URL`` at a local mock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from slack_bolt import App, BoltResponse, Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.chat.decisions import Decider
from bot.chat.runtime import ChatRuntime
from bot.settings import Settings
from bot.slack.client import Pacer, make_client
from bot.slack.handlers import Handlers
from bot.slack.port import SlackDirectory, SlackPort
from core.errors import GhostError
from storage.store import Store

log = logging.getLogger(__name__)

#: What to tell the engineer for the Slack errors they can fix themselves.
SLACK_HINTS = {
    "not_in_channel": "Ghost is not in this channel yet: `/invite @ghost`, then try again.",
    "channel_not_found": "Ghost cannot see this channel: `/invite @ghost` (private channels "
                         "need an invite too).",
    "invalid_auth": "Slack refused Ghost's token: check SLACK_BOT_TOKEN.",
    "missing_scope": "The Slack app lacks a scope: reinstall it from "
                     "deploy/slack-manifest.yaml.",
}


class _TokenSkippedFilter(logging.Filter):
    """bolt reads SLACK_BOT_TOKEN from the environment and, since Ghost hands it a configured
    client built from that same token, warns at every start that the token "will be unused" —
    a false alarm in the log of an engineer who is checking why the bot misbehaves."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


_TOKEN_SKIPPED = _TokenSkippedFilter()


class SettingMissing(GhostError):
    exit_code = 2


@dataclass
class SlackServices:
    app: App
    client: WebClient
    port: SlackPort
    runtime: ChatRuntime
    decider: Decider
    store: Store


def check_settings(settings: Settings, *, socket_mode: bool) -> tuple[str, str | None]:
    """The token and signing secret, or an error naming the missing variable."""
    if not settings.slack_bot_token:
        raise SettingMissing("SLACK_BOT_TOKEN is not set.",
                             "Copy the Bot User OAuth Token (xoxb-…) from the Slack app's "
                             "OAuth & Permissions page into SLACK_BOT_TOKEN.")
    if not socket_mode and not settings.slack_signing_secret:
        raise SettingMissing("SLACK_SIGNING_SECRET is not set (needed in HTTP mode).",
                             "Copy it from the Slack app's Basic Information page, or set "
                             "SLACK_APP_TOKEN (xapp-…) to use Socket Mode instead.")
    return settings.slack_bot_token, settings.slack_signing_secret


def build_slack(settings: Settings, store: Store, *, brain: Any = None,
                listener_executor: Executor | None = None, pacer: Pacer | None = None,
                socket_mode: bool = False,
                sleep: Callable[[float], None] | None = None) -> SlackServices:
    from bot.bootstrap import build_chat_engine

    token, secret = check_settings(settings, socket_mode=socket_mode)
    client = make_client(token, settings.slack_api_url, **({"sleep": sleep} if sleep else {}))
    port = SlackPort(client, pacer or Pacer(settings.slack_post_interval_s))
    runtime = build_chat_engine(settings, store, brain=brain,
                                port_for=lambda p: port if p == "slack" else None)
    decider = Decider(store, runtime.shell_for, runtime.policy, SlackDirectory(client))
    if listener_executor is None:  # bolt's default of 5 threads delays acks under load
        listener_executor = ThreadPoolExecutor(max_workers=32,
                                               thread_name_prefix="slack-listener")
    logging.getLogger("slack_bolt.App").addFilter(_TOKEN_SKIPPED)  # idempotent
    app = App(signing_secret=secret, client=client,
              token_verification_enabled=False, request_verification_enabled=not socket_mode,
              process_before_response=False, listener_executor=listener_executor)
    app.middleware(_dedupe(store))
    Handlers(runtime, decider, port).register(app)
    app.error(_error_handler(port))
    return SlackServices(app=app, client=client, port=port, runtime=runtime, decider=decider,
                         store=store)


def _dedupe(store: Store) -> Callable[..., Any]:
    """Slack re-sends events it thinks were missed (X-Slack-Retry-Num); run each once."""
    def dedupe_retries(body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id and not store.remember_event(f"slack:{event_id}"):
            log.info("dropping a repeated Slack event %s", event_id)
            return BoltResponse(status=200, body="")
        next()
        return None
    return dedupe_retries


def _error_handler(port: SlackPort) -> Callable[..., None]:
    """The one error handler: log it, and tell the person who clicked or typed what to do."""
    def on_error(error: Exception, body: dict[str, Any], respond: Respond | None) -> None:
        if isinstance(error, SlackApiError):
            code = str(error.response.get("error"))
            text = SLACK_HINTS.get(code, f"Slack refused a request ({code}). Try again; if it "
                                         "keeps failing, check the bot's log.")
        elif isinstance(error, GhostError):
            text = str(error)
        else:
            log.error("unhandled error in a Slack listener", exc_info=error)
            text = ("Ghost hit an unexpected error handling that. Nothing was decided or run "
                    "twice; try again, and check the bot's log if it repeats.")
        user = body.get("user_id") or (body.get("user") or {}).get("id") or \
            (body.get("event") or {}).get("user")
        channel = body.get("channel_id") or (body.get("channel") or {}).get("id") or \
            (body.get("event") or {}).get("channel")
        if respond is not None:  # a slash command: its response_url works even where
            try:                  # Ghost may not post (e.g. not invited to the channel yet)
                respond(text="⚠️ " + text, response_type="ephemeral")
                return
            except Exception:  # noqa: BLE001 - expired URL: fall back to an ephemeral post
                log.warning("could not answer through response_url", exc_info=True)
        if user and channel:
            port.tell(str(channel), str(user), "⚠️ " + text)
    return on_error
