"""The bolt app: settings checked, listeners registered, retries deduplicated, one error handler.

``build_slack`` is what ``ghost serve`` and the tests use; tests pass their own executor (so a
dispatch returns after the listener finished) and point ``SLACK_API_URL`` at a local mock.

No ack waits on Slack: bolt's single-workspace mode calls ``auth.test`` inside the first request
after a start, before that request's ack (with 429s on it, acks took 1-2 s after a deploy).
Ghost hands bolt its own :class:`BotIdentity` instead, which looks the bot up in the
background from start-up and answers every request at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from slack_bolt import App, BoltContext, BoltResponse, Respond
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.authorize import Authorize
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.chat.decisions import Decider
from bot.chat.runtime import ChatRuntime
from bot.settings import Settings
from bot.slack.client import Pacer, make_client
from bot.slack.failures import SLACK_HINTS, describe
from bot.slack.handlers import Handlers
from bot.slack.port import SlackDirectory, SlackPort
from core.errors import GhostError
from storage.db import transient_cause
from storage.store import Store

log = logging.getLogger(__name__)

class _TokenSkippedFilter(logging.Filter):
    """bolt reads SLACK_BOT_TOKEN from the environment and, since Ghost hands it a configured
    client built from that same token, warns at every start that the token "will be unused" —
    a false alarm in the log of an engineer who is checking why the bot misbehaves."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


_TOKEN_SKIPPED = _TokenSkippedFilter()


class BotIdentity(Authorize):
    """bolt's ``authorize``: the bot token, with the bot's ids from ``auth.test`` once known.

    The lookup runs in a background thread from start-up (and again after a failure, at the
    next request), never inside a request: until it answers, requests are authorised with the
    token alone (bolt only needs the ids to ignore the bot's own events, and Ghost listens to
    none it could send itself).
    """

    def __init__(self, client: WebClient) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.client = client
        self.found: dict[str, Any] | None = None
        self._looking = threading.Lock()

    def start(self) -> None:
        """Look the bot up in the background (a no-op while a lookup runs or once known)."""
        if self.found is None and self._looking.acquire(blocking=False):
            threading.Thread(target=self._look_up, daemon=True,
                             name="slack-auth-test").start()

    def _look_up(self) -> None:
        try:
            reply = self.client.auth_test()
            self.found = {"bot_id": reply.get("bot_id"), "bot_user_id": reply.get("user_id"),
                          "team_id": reply.get("team_id"),
                          "scopes": reply.headers.get("x-oauth-scopes")}
            log.info("Slack bot identity: %s (%s)", self.found["bot_user_id"],
                     self.found["bot_id"])
        except Exception as exc:  # noqa: BLE001 - a bad token shows on the first post
            what, fix = describe(exc, api_url=self.client.base_url,
                                 doing="look up the bot's identity (auth.test)")
            log.warning("%s %s Ghost tries again at the next request.", what, fix)
        finally:
            self._looking.release()

    def __call__(self, *, context: BoltContext, enterprise_id: str | None,
                 team_id: str | None, user_id: str | None,
                 actor_enterprise_id: str | None = None, actor_team_id: str | None = None,
                 actor_user_id: str | None = None) -> AuthorizeResult:
        found = self.found
        if found is None:
            self.start()
            found = {}
        return AuthorizeResult(enterprise_id=enterprise_id,
                               team_id=team_id or found.get("team_id"),
                               bot_token=self.client.token, bot_id=found.get("bot_id"),
                               bot_user_id=found.get("bot_user_id"),
                               bot_scopes=found.get("scopes"), user_id=user_id)


def _tokenless(client: WebClient) -> WebClient:
    """``client`` without its token, for bolt: with a token bolt insists on its own
    ``auth.test`` in the first request; the token comes from :class:`BotIdentity`."""
    return WebClient(token=None, base_url=client.base_url, timeout=client.timeout,
                     ssl=client.ssl, proxy=client.proxy, headers=client.headers,
                     logger=client.logger, retry_handlers=list(client.retry_handlers or []))


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
    identity = BotIdentity(client)
    identity.start()  # auth.test now, in the background: the first ack never waits on it
    app = App(signing_secret=secret, client=_tokenless(client), authorize=identity,
              request_verification_enabled=not socket_mode,
              process_before_response=False, listener_executor=listener_executor)
    handlers = Handlers(runtime, decider, port)
    app.middleware(_dedupe(store, handlers.mention_entry))
    handlers.register(app)
    app.error(_error_handler(port))
    return SlackServices(app=app, client=client, port=port, runtime=runtime, decider=decider,
                         store=store)


def _dedupe(store: Store, mention_entry: Callable[[dict[str, Any]], Any]) -> Callable[..., Any]:
    """Slack re-sends events it thinks were missed (X-Slack-Retry-Num); run each once.

    The event's key and, for an ``@ghost`` in an investigation's thread, its inbox entry are
    one transaction (``remember_event``): a crash between two commits would leave the key
    without the entry, and Slack's retry would then be dropped as a copy — the mention lost.
    """
    def dedupe_retries(body: dict[str, Any], next: Callable[[], None]) -> BoltResponse | None:
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id and not store.remember_event(f"slack:{event_id}",
                                                 inbox=mention_entry(body)):
            log.info("dropping a repeated Slack event %s", event_id)
            return BoltResponse(status=200, body="")
        next()
        return None
    return dedupe_retries


def _error_handler(port: SlackPort) -> Callable[..., None]:
    """The one error handler: log it, and tell the person who clicked or typed what to do."""
    def on_error(error: Exception, body: dict[str, Any], respond: Respond | None) -> None:
        if transient_cause(error) is not None:
            text = ("Ghost's database did not answer just now, so nothing was recorded or "
                    "decided. Try again in a minute; if it keeps failing, check the database.")
        elif isinstance(error, SlackApiError):
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
