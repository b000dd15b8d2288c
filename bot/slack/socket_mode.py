"""Socket Mode: the one way ``ghost serve`` connects when SLACK_APP_TOKEN is set.

Kept here (not inline in ``serve``) so the tests drive exactly this path against a local
WebSocket server. slack_sdk's built-in client needs no websocket library of its own. A start
that cannot connect (no network, a refused app token) is one line with the fix
(:class:`SlackConnectFailed`), never the library's ``<urlopen error …>``.
"""

from __future__ import annotations

from slack_bolt import App
from slack_bolt.adapter.socket_mode import SocketModeHandler

from bot.slack.failures import describe
from core.errors import GhostError


class SlackConnectFailed(GhostError):
    """Socket Mode could not be opened at start-up."""

    exit_code = 2


class SocketMode:
    """A connected Socket Mode session for the bolt app; ``close()`` ends it."""

    def __init__(self, app: App, app_token: str) -> None:
        self.handler = SocketModeHandler(app, app_token)

    def connect(self) -> SocketMode:
        """Ask Slack for a URL (``apps.connections.open``) and open the socket; returns once
        the WebSocket handshake is done, so the caller can log "connected" truthfully."""
        try:
            self.handler.connect()  # type: ignore[no-untyped-call]
        except Exception as exc:  # noqa: BLE001 - one line with the fix, the rest in --verbose
            what, fix = describe(exc, api_url=str(self.handler.client.web_client.base_url),
                                 token_name="SLACK_APP_TOKEN",
                                 doing="open Socket Mode (apps.connections.open)")
            self._quietly_close()
            raise SlackConnectFailed(what, fix) from exc
        return self

    def _quietly_close(self) -> None:
        try:
            self.handler.close()  # type: ignore[no-untyped-call]
        except Exception:  # noqa: BLE001, S110 - nothing was open
            pass

    def close(self) -> None:
        self.handler.close()  # type: ignore[no-untyped-call]


def connect_socket_mode(app: App, app_token: str) -> SocketMode:
    """The connection ``ghost serve`` holds open until it is told to stop."""
    return SocketMode(app, app_token).connect()
